// The container's file system: config.json's root, mounts, devices, rootfsPropagation,
// maskedPaths and readonlyPaths planned as fs::Steps (PlanRootfs, pure, in `brig create`),
// which the container's init executes in its own mount namespace through fs/. Every mount
// target inside the rootfs is resolved with openat2(RESOLVE_IN_ROOT) and mounted through
// its fd, so a symlink the image plants cannot send a mount outside the rootfs (runc
// CVE-2021-30465, CVE-2025-31133).
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "fs/mount_plan.h"
#include "proto/oci.pb.h"

namespace brig::oci {

struct RootfsOptions {
  std::string rootfs, bundle;  // absolute; a bind mount's relative source is the bundle's
  // A user namespace of its own, or brig in one not the host's: devices are then bound
  // from the host (mknod is refused).
  bool userns = false;
  // A cgroup namespace of its own: a "cgroup" mount shows the container's groups as its
  // root. Without one, each of the container's groups (`cgroup_dirs`, absolute, on the
  // host) is bound in its hierarchy's place instead, so the host's tree stays unseen.
  bool cgroupns = false;
  std::vector<std::string> cgroup_dirs;
};

// The steps that build the container's root, in order: config.json's mounts and /dev's
// devices and links in the image's root before pivot_root, then, in it, maskedPaths,
// readonlyPaths, root.readonly and rootfsPropagation. Pure.
struct RootfsPlan {
  // `last`: after the terminal (/dev/console) is made, what makes a read-only /dev
  // read-only.
  std::vector<fs::Step> before_pivot, after_pivot, last;
  // rootfsPropagation's MS_* flags (runc's default: MS_SLAVE | MS_REC): how the host's "/"
  // is made before anything is mounted.
  unsigned long propagation = 0;
};
Result<RootfsPlan> PlanRootfs(const Spec& spec, const RootfsOptions& o);

// A bind mount's source that only the host's root may reach (a directory only it may
// search) is out of reach of the root of a user namespace. As runc does, brig opens each
// source itself, in init's mount namespace (so that the kernel's locks on the source's
// flags hold, mount_plan.h kBindSource), and hands the descriptors to init, which binds
// them. Whether the plan has a source to hand over:
bool HasBindSources(const RootfsPlan& plan);
// An id-mapped bind mount (uidMappings, gidMappings) needs the host's root too, whose
// user namespace owns the source's file system: brig makes each one's id-mapped copy
// there (fs/idmap.h IdmappedClone) and hands it over the same way. Whether the plan has
// one:
bool HasIdmappedSources(const RootfsPlan& plan);
// brig's side, in a process of its own that joined init's mount namespace: one packet a
// source on `sock` (its step's index, and the O_PATH descriptor, or the id-mapped copy, as
// SCM_RIGHTS; none where a source cannot be opened, and init then meets the error itself).
Status SendMountSources(int sock, const RootfsPlan& plan);
// Init's side, before PrepareRootfs: the descriptors until `sock` ends, each into its step.
Status TakeMountSources(int sock, RootfsPlan& plan);

// Before pivot_root: the host's mounts made slave (or private, as the plan's propagation
// says), the rootfs a mount point of its own, and the plan's steps before pivot_root.
Status PrepareRootfs(const std::string& rootfs, const RootfsPlan& plan);
// pivot_root into the rootfs (or, with `no_pivot`, MS_MOVE and chroot, runc's --no-pivot).
Status EnterRootfs(const std::string& rootfs, bool no_pivot);
// After it: the plan's steps after pivot_root.
Status FinishRootfs(const RootfsPlan& plan);
// After the terminal: the plan's last steps.
Status SealRootfs(const RootfsPlan& plan);

}  // namespace brig::oci
