// The container's file system, in its own mount namespace (child side): config.json's
// root, mounts, devices, rootfsPropagation, maskedPaths and readonlyPaths. Every mount
// target inside the rootfs is resolved with openat2(RESOLVE_IN_ROOT) and mounted through
// its fd, so a symlink the image plants cannot send a mount outside the rootfs (runc
// CVE-2021-30465, CVE-2025-31133).
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/oci.pb.h"

namespace brig::oci {

struct RootfsOptions {
  std::string rootfs, bundle;  // absolute; a bind mount's relative source is the bundle's
  // A user namespace of its own: devices are then bound from the host (mknod is refused).
  bool userns = false;
  // A cgroup namespace of its own: a "cgroup" mount shows the container's groups as its
  // root. Without one, each of the container's groups (`cgroup_dirs`, absolute, on the
  // host) is bound in its hierarchy's place instead, so the host's tree stays unseen.
  bool cgroupns = false;
  std::vector<std::string> cgroup_dirs;
};

// Before pivot_root: the host's mounts made slave (or as rootfsPropagation says), the
// rootfs a mount point of its own, config.json's mounts in order, and /dev's devices.
Status PrepareRootfs(const Spec& spec, const RootfsOptions& o);
// pivot_root into the rootfs (or, with `no_pivot`, MS_MOVE and chroot, runc's --no-pivot).
Status EnterRootfs(const std::string& rootfs, bool no_pivot);
// After it: root.readonly, maskedPaths, readonlyPaths, and the mount propagation of "/".
Status FinishRootfs(const Spec& spec);

}  // namespace brig::oci
