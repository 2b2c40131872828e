// Builds the sandbox root from a MountPlan. Every target of brig run's is created by brig
// inside its own fresh tmpfs (never a path the workload or a workspace controls); every
// target is mounted by fd, and a masked or read-only one is reached inside the root.
#include "fs/rootfs.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/in_root.h"
#include "log/log.h"
#include "sys/syscalls.h"
#include "util/parse.h"

namespace brig::fs {
namespace {

constexpr uint64_t kRootTmpfsSize = 1 << 20;

Status Attach(const sys::UniqueFd& tree, int root, const std::string& dest) {
  return sys::MoveMount(tree.get(), "", root, dest, MOVE_MOUNT_F_EMPTY_PATH);
}

// Creates an empty mount point for a file at dest.
Status MakeFileTarget(int root, const std::string& dest) {
  sys::UniqueFd f(openat(root, dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                         0644));
  if (!f) return SysError("create", "/" + dest);
  return {};
}

Status MakeDir(int root, const std::string& dest, mode_t mode) {
  if (mkdirat(root, dest.c_str(), mode) < 0 && errno != EEXIST) return SysError("mkdir", "/" + dest);
  return {};
}

Status WriteFile(int root, const Step& s) {
  sys::UniqueFd f(openat(root, s.dest.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!f) return SysError("create", "/" + s.dest);
  size_t off = 0;
  while (off < s.data.size()) {
    ssize_t n = write(f.get(), s.data.data() + off, s.data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("write", "/" + s.dest);
    off += static_cast<size_t>(n);
  }
  return {};
}

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

// The null device that covers a masked or hidden file: a clone of the root's own dev/null,
// reached with no symlink followed and checked, by fstat of the very fd cloned, to be the
// character device 1:3 (runc CVE-2025-31133: a /dev/null swapped for a symlink or a file
// would put that over the path instead). `subject` is the path to be covered.
Result<sys::UniqueFd> NullTree(int root, const std::string& subject) {
  auto null = sys::Openat2(root, "dev/null", O_PATH | O_NOFOLLOW | O_CLOEXEC,
                           kInRoot | RESOLVE_NO_SYMLINKS);
  if (!null && null.error().err != ELOOP && null.error().err != ENOENT) {
    return std::move(null).error();
  }
  struct stat st;
  if (null && fstat(null->get(), &st) < 0) return SysError("stat", "/dev/null");
  if (!null || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
    return Fail("mask", subject, "/dev/null is not the null device");
  }
  return sys::OpenTree(null->get(), "", OPEN_TREE_CLONE | AT_EMPTY_PATH);
}

// An empty read-only tmpfs, to cover a directory.
Result<sys::UniqueFd> EmptyDir(const std::string& subject) {
  return NewFs("tmpfs", {{"size", "0"}, {"mode", "0555"}},
               MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
               subject);
}

// A masked path (OCI maskedPaths, the kernel paths brig masks), if it exists: the null
// device over a file, an empty read-only tmpfs over a directory.
Status Mask(int root, const Step& s) {
  auto opened = sys::Openat2(root, s.dest, O_PATH | O_CLOEXEC, kInRoot);
  if (!opened && opened.error().err == ENOENT) return {};
  sys::UniqueFd at = BRIG_TRY(std::move(opened));
  struct stat st;
  if (fstat(at.get(), &st) < 0) return SysError("stat", "/" + s.dest);
  sys::UniqueFd tree = S_ISDIR(st.st_mode) ? BRIG_TRY(EmptyDir("/" + s.dest))
                                           : BRIG_TRY(NullTree(root, "/" + s.dest));
  return sys::MoveMount(tree.get(), "", at.get(), "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// A read-only path, if it exists: its tree cloned, made read-only recursively (its other
// attributes kept) and attached onto itself.
Status ReadOnly(int root, const Step& s) {
  auto opened = sys::Openat2(root, s.dest, O_PATH | O_CLOEXEC, kInRoot);
  if (!opened && opened.error().err == ENOENT) return {};
  sys::UniqueFd at = BRIG_TRY(std::move(opened));
  auto tree = BRIG_TRY(sys::OpenTree(at.get(), "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH));
  BRIG_TRY(sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0,
                             "/" + s.dest));
  return sys::MoveMount(tree.get(), "", at.get(), "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// kPin and kProtect: the path is reached without following any symlink and without leaving
// the new root, then its tree is cloned and attached onto itself by fd. The parent refused
// a symlink there or on the way; one that a host process put there since (a race) is
// refused the same way: O_PATH | O_NOFOLLOW opens a symlink leaf itself, and a mount on it
// would hold the link, not what the path was.
Status Reattach(int root, const Step& s, uint64_t set) {
  auto opened = sys::Openat2(root, s.dest, O_PATH | O_NOFOLLOW,
                             RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  struct stat st;
  bool link = opened ? fstat(opened->get(), &st) == 0 && S_ISLNK(st.st_mode)
                     : opened.error().err == ELOOP;
  if (link && !s.data.empty()) return BadInput("protect", s.data, kSymlinkAtProtected);
  if (link) {
    return BadInput("protect", "/" + s.dest,
                    "a symlink: the source changed while brig was preparing its copy");
  }
  sys::UniqueFd at = BRIG_TRY(std::move(opened));
  auto tree = BRIG_TRY(sys::OpenTree(at.get(), "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH));
  BRIG_TRY(sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, set, 0, "/" + s.dest));
  return sys::MoveMount(tree.get(), "", at.get(), "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// kHide and kHoldIpc: over what the path is, reached as in Reattach. A socket or FIFO
// that is gone (`gone_ok`) has nothing left to hold.
Status Hide(int root, const Step& s, bool gone_ok) {
  auto opened = sys::Openat2(root, s.dest, O_PATH | O_NOFOLLOW,
                             RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (!opened && gone_ok && opened.error().err == ENOENT) return {};
  sys::UniqueFd at = BRIG_TRY(std::move(opened));
  struct stat st;
  if (fstat(at.get(), &st) < 0) return SysError("stat", "/" + s.dest);
  if (S_ISLNK(st.st_mode)) return {};  // it leads only to what the sandbox sees anyway
  sys::UniqueFd tree = S_ISDIR(st.st_mode) ? BRIG_TRY(EmptyDir("/" + s.dest))
                                           : BRIG_TRY(NullTree(root, "/" + s.dest));
  return sys::MoveMount(tree.get(), "", at.get(), "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// kNamed: the target's directories are reached one at a time beneath the new root, with
// no symlink followed (a --rootfs may hold any), made where missing; the tree is attached
// onto the last by fd.
Status AttachNamed(int root, const Step& s) {
  sys::UniqueFd at(fcntl(root, F_DUPFD_CLOEXEC, 3));
  if (!at) return SysError("dup", "/");
  for (std::string_view part : util::Split(s.dest, '/')) {
    const std::string name(part);
    if (mkdirat(at.get(), name.c_str(), 0755) < 0 && errno != EEXIST) {
      return SysError("mkdir", "/" + s.dest);
    }
    at = BRIG_TRY_CTX(sys::Openat2(at.get(), name, O_PATH | O_DIRECTORY,
                                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS),
                      "named mount /" + s.dest);
  }
  return sys::MoveMount(s.tree.get(), "", at.get(), "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

Status Apply(int root, const Step& s) {
  switch (s.kind) {
    case StepKind::kDir:
      return MakeDir(root, s.dest, 0755);
    case StepKind::kSymlink:
      if (symlinkat(s.data.c_str(), root, s.dest.c_str()) < 0) {
        return SysError("symlink", "/" + s.dest);
      }
      return {};
    case StepKind::kFile:
      return WriteFile(root, s);
    case StepKind::kBind:
      if (s.is_dir) {
        BRIG_TRY(MakeDir(root, s.dest, 0755));
      } else {
        BRIG_TRY(MakeFileTarget(root, s.dest));
      }
      return Attach(s.tree, root, s.dest);
    case StepKind::kMask:
      return Mask(root, s);
    case StepKind::kReadOnly:
      return ReadOnly(root, s);
    case StepKind::kPin:
      return Reattach(root, s, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case StepKind::kProtect:
      return Reattach(root, s, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case StepKind::kHide:
      return Hide(root, s, false);
    case StepKind::kHoldIpc:
      return Hide(root, s, true);
    case StepKind::kNamed:
      return AttachNamed(root, s);
    case StepKind::kSealRoRecursive:
      return sys::MountSetattr(root, s.dest, s.dest.empty() ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW,
                               MOUNT_ATTR_RDONLY, 0, "/" + s.dest);
    case StepKind::kBindSource:
    case StepKind::kMount:
    case StepKind::kTmpfsCopyUp:
    case StepKind::kCgroup:
    case StepKind::kCgroupGroups:
    case StepKind::kDevice:
    case StepKind::kLinkInRoot:
    case StepKind::kPropagation:
      return ApplyInRoot(root, s);
  }
  return Fail("mount plan", s.dest, "unknown step", ErrorKind::kInternal);
}

}  // namespace

Status ApplySteps(int root, const std::vector<Step>& steps) {
  for (const Step& s : steps) {
    log::Debug("mount: ", StepName(s.kind), s.type.empty() ? "" : " ", s.type, " /", s.dest);
    if (s.field.empty()) {
      BRIG_TRY(Apply(root, s));
    } else {
      BRIG_TRY_CTX(Apply(root, s), s.field);
    }
  }
  return {};
}

Status PivotInto(int root) {
  if (fchdir(root) < 0) return SysError("chdir", "new root");
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
  // only the new root (runc's trick, no put_old directory needed). Made a slave first, so
  // that the unmount does not propagate to the host if it was shared.
  BRIG_TRY(sys::PivotRoot(".", "."));
  if (mount(nullptr, ".", nullptr, MS_SLAVE | MS_REC, nullptr) < 0) {
    return SysError("mount", "old root (rslave)");
  }
  if (umount2(".", MNT_DETACH) < 0) return SysError("detach old root");
  if (chdir("/") < 0) return SysError("chdir", "/");
  log::Debug("pivot_root: into the new root; the old one detached");
  return {};
}

Status EnterNewRoot(MountPlan& plan) {
  // Nothing brig mounts may propagate back to the host.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    return SysError("make mounts private", "/");
  }
  auto root = BRIG_TRY(NewFs("tmpfs", {{"size", std::to_string(kRootTmpfsSize)}, {"mode", "0755"}},
                             MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "/"));
  // The new root needs a mount point in this (private) namespace for pivot_root; /tmp is
  // shadowed only here, and every host source was opened by fd before this point.
  BRIG_TRY(sys::MoveMount(root.get(), "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH));
  BRIG_TRY(ApplySteps(root.get(), plan.steps));
  BRIG_TRY(sys::MountSetattr(root.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, "/"));
  return PivotInto(root.get());
}

}  // namespace brig::fs
