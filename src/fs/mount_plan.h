// The sandbox's filesystem as an ordered list of steps (the mount plan). The parent builds
// it: it clones every host source (root directories, /etc entries, the workspace, device
// nodes) into detached mount trees with open_tree(OPEN_TREE_CLONE) and sets their
// attributes, so the child never resolves a host path. The child only creates directories,
// files and new filesystems in its own tmpfs and attaches trees by fd (rootfs.cc). An OCI
// container's root is planned as steps too (oci/rootfs.h), but built in the image's root,
// and its binds are host paths that its init resolves (kBindSource, fs/in_root.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "fs/host_marks.h"
#include "fs/spec.h"
#include "state/record.h"
#include "sys/fd.h"
#include "sys/id_map.h"

namespace brig::fs {

enum class StepKind {
  kDir,              // mkdir dest
  kSymlink,          // symlink data -> dest
  kFile,             // create dest with contents data
  kBind,             // attach tree at dest (a directory, or a file when is_dir is false)
  kMask,             // OCI masked path, if it exists: dev/null over a file, an empty
                     // read-only tmpfs over a directory
  kReadOnly,         // re-attach dest onto itself read-only, recursively (OCI readonly path)
  kSealRoRecursive,  // make the mount at dest read-only (used for /dev after population)
  kPin,              // re-attach dest onto itself, so it cannot be renamed or removed; a symlink
                     // there is refused
  kProtect,          // the same, read-only: a protected path of a writable workspace
  kHide,             // a hidden path of a bound workspace: an empty read-only tmpfs over a
                     // directory, the sandbox's /dev/null over a file; a symlink is left as it is
  kHoldIpc,          // a unix socket or FIFO of a bound workspace: the sandbox's /dev/null over
                     // it, if it is still there (its host process may have removed it meanwhile)
  kNamed,            // attach tree (a directory) at dest, a named mount's target: the directories
                     // on the way are made where missing, and none of them may be a symlink
  // The kinds below are resolved inside the root (fs/in_root.h: openat2 RESOLVE_IN_ROOT), each
  // dest made where missing: an OCI container's root is the image's. kMount is brig run's too.
  kBindSource,    // bind the host path `source` at dest, recursively with `recursive`, then
                  // remount it with `flags` (when `remount`) and set `attrs`, clear `cleared`
                  // recursively. The path, not a tree: init resolves and binds it in its own
                  // mount namespace, the copy of the host's made for a less privileged user
                  // namespace, where the kernel locks the source's ro, nosuid, nodev, noexec
                  // and atime flags. A tree the host cloned (open_tree) and attached carries
                  // no such lock, and a user-namespaced container could then remount the
                  // host's read-only source read-write (test
                  // OciDoors.AUserNamespacedContainerNeverClearsTheHostsReadOnlyOnABindSource).
                  // An id-mapped one (`idmap`) is a tree, cloned inside init's mount namespace
                  // from its locked copy, whose locks the clone keeps
  kMount,         // a new file system of `type` from `source` with the mount(2) `flags` and
                  // options `data`, made detached (NewFs) and attached at dest, then
                  // `attrs`/`cleared` recursively; with `host_sys`, a sysfs refused in a user
                  // namespace is the host's /sys bound read-only. brig run's /tmp, /dev,
                  // /dev/pts, /dev/shm and /proc, and an OCI container's mounts
  kTmpfsCopyUp,   // a tmpfs made as kMount is, filled with what the image holds at dest
                  // (runc's tmpcopyup) before it is attached there
  kCgroup,        // the cgroup hierarchies, new, seen from the container's cgroup namespace;
                  // read-only when `flags` has MS_RDONLY
  kCgroupGroups,  // without a cgroup namespace: the container's own `groups` (host
                  // directories) bound in their hierarchies' places, nosuid, nodev, noexec
  kDevice,        // the device node `rdev` of type and permissions `mode`, owned by uid:gid
  kLinkInRoot,    // symlink data -> dest; an entry there is kept, or replaced with `replace`
  kPropagation,   // dest's mount propagation becomes `flags` (MS_SHARED, MS_SLAVE... MS_REC)
};

// Why brig refuses a symlink at a protected path of a read-write workspace, or on the way
// to one: in the parent's check, and in init's mount if the path turned into one since.
inline constexpr char kSymlinkAtProtected[] =
    "a symlink at a protected path of a read-write workspace; remove it, or use a copy "
    "workspace (--workspace-mode copy)";

// The kind's name, in messages and the manifest.
std::string_view StepName(StepKind k);

struct Step {
  StepKind kind;
  std::string dest;  // relative to the new root, no leading slash
  std::string data;  // symlink target or file contents; for kPin and kProtect of a
                     // read-write workspace, the host path, named if init finds a symlink
                     // there (empty in a copy)
  // kBind's tree; for a kBindSource, where set, an O_PATH descriptor of its source that
  // brig opened in init's mount namespace (oci/rootfs.h SendMountSources), bound instead of
  // the path, which init itself may have no right to reach.
  sys::UniqueFd tree;
  bool is_dir = true;
  uint32_t mode = 0755;  // kDevice's
  uint64_t attrs = 0;    // MOUNT_ATTR_* set on a kBind, and on the OCI kinds, recursively
  uint64_t cleared = 0;  // MOUNT_ATTR_* cleared on them
  // What the step is made from, for the manifest (manifest/manifest.h): the host path a
  // tree was cloned from, or what a new file system is of; kBindSource's host path.
  std::string source;
  // The parameters of the kinds resolved in the root (kBindSource ... kPropagation), as each
  // one's comment says.
  std::string type;
  unsigned long flags = 0;  // MS_*
  bool remount = false;
  bool recursive = false;
  bool host_sys = false;
  bool replace = false;
  uint64_t rdev = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<std::string> groups;
  // kBindSource: mounted id-mapped through a user namespace of these maps (an OCI mount's
  // uidMappings and gidMappings), its submounts too with `idmap_recursive`. The host's root
  // makes that copy (fs/idmap.h IdmappedClone) and hands it over as `tree`, which init
  // attaches.
  std::optional<sys::IdMaps> idmap;
  bool idmap_recursive = false;
  // The config.json field the step comes from (linux.devices...): its errors are named so.
  std::string field;
};

struct MountPlan {
  // What the plan put on the host (placeholders, a --copy-dir scratch directory); declared
  // first, so it goes last, after the mounts that use it.
  HostMarks marks;
  std::vector<Step> steps;
  // A copy workspace (WorkspaceMode::kCopy): brig's scratch space, whose "upper" holds
  // what the sandbox changed (a detached tmpfs, or a directory under --copy-dir), and the
  // merged tree the sandbox sees (a detached mount, alive while this is open), so the
  // changes can be exported after the sandbox is gone.
  sys::UniqueFd copy_scratch, copy_merged;
  // The workspace's hidden paths (fs/hidden.h), relative to it.
  std::vector<std::string> hidden;
  // The unix sockets and FIFOs of a bound workspace (fs/hidden.h), relative to it.
  std::vector<std::string> ipc;
  // The protected paths as held read-only (PrepareProtected in mount_plan.cc).
  std::vector<std::string> protected_paths;
  // The host ids the sandbox user is: the spec's sandbox ids when every tree it is given
  // (the workspace, the named mounts) could be id-mapped to them, else its owner's.
  uid_t sandbox_uid = 0;
  gid_t sandbox_gid = 0;
  // Puts the file `tree` (a detached mount of one file, made from `source`) at the
  // absolute `path` inside, making the directories on the way.
  void AddFileBind(const std::string& path, sys::UniqueFd tree, std::string source);
  // Once the sandbox is gone (and its changes exported): lets go of the copy and removes
  // the marks.
  Status Finish();
};

// A new filesystem of `type` (fsopen, fsconfig, fsmount), detached, with `opts` (one with an
// empty value is a flag: "noswap") and the mount attributes `attrs`; errors name `subject`.
// brig run's new file systems and an OCI container's (kMount, kTmpfsCopyUp) are made by it.
Result<sys::UniqueFd> NewFs(const char* type,
                            const std::vector<std::pair<std::string, std::string>>& opts,
                            uint64_t attrs, const std::string& subject);

// Runs `fn` in a mount namespace of brig's own, made for this and left at once, with the
// detached mount `detached` (unless -1) attached there at a directory that is neither
// `avoid` nor above it. Mounts made there are seen nowhere else and go when brig leaves;
// fds and detached trees made there stay. Kernels before 6.15 clone or stack (overlayfs)
// only mounts of the caller's namespace: this is how brig gives them one that no host path
// shows. brig's working directory is kept.
Status InPrivateMountNs(int detached, const std::string& avoid, const std::function<Status()>& fn);

// Parent side: builds the plan for `spec`, cloning host sources. What it makes on the host
// is noted in `record` first. Errors name the path. With `plan_only` (brig run --dry-run)
// it makes nothing on the host: no placeholder, no scratch directory or disk image (a
// copy's changes would go to a detached tmpfs instead); its trees are detached clones,
// gone when the plan is, and `record` is not written.
Result<MountPlan> PrepareMountPlan(const Spec& spec, state::Record& record,
                                   bool plan_only = false);

}  // namespace brig::fs
