// An OCI container's root, child side (in_root.h).
#include "fs/in_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <climits>
#include <string_view>
#include <vector>

#include "cgroup/cgroup.h"
#include "sys/syscalls.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::fs {
namespace {

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

Result<sys::UniqueFd> Open(int root, const std::string& path, bool make, bool as_file, int links) {
  auto fd = sys::Openat2(root, path, O_PATH | O_CLOEXEC, kInRoot);
  if (fd || !make || fd.error().err != ENOENT) return fd;
  std::vector<std::string> parts;
  for (std::string_view p : util::Split(path, '/')) {
    if (!p.empty() && p != ".") parts.emplace_back(p);
  }
  std::string prefix = "/";
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string next = prefix + (prefix == "/" ? "" : "/") + parts[i];
    auto here = sys::Openat2(root, next, O_PATH | O_CLOEXEC, kInRoot);
    if (here) {
      prefix = next;
      continue;
    }
    if (here.error().err != ENOENT) return std::move(here).error();
    sys::UniqueFd parent =
        BRIG_TRY(sys::Openat2(root, prefix, O_PATH | O_DIRECTORY | O_CLOEXEC, kInRoot));
    const std::string& name = parts[i];
    struct stat st;
    if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      if (links >= 40) return Fail("open", path, "too many symbolic links");
      char target[PATH_MAX];
      ssize_t n = readlinkat(parent.get(), name.c_str(), target, sizeof target - 1);
      if (n < 0) return SysError("readlink", next);
      std::string followed(target, static_cast<size_t>(n));
      if (followed.empty() || followed[0] != '/') followed = prefix + "/" + followed;
      for (size_t j = i + 1; j < parts.size(); ++j) followed += "/" + parts[j];
      return Open(root, followed, make, as_file, links + 1);
    }
    int rc;
    if (as_file && i + 1 == parts.size()) {
      rc = mknodat(parent.get(), name.c_str(), S_IFREG | 0644, 0);
    } else {
      rc = mkdirat(parent.get(), name.c_str(), 0755);
    }
    if (rc < 0 && errno != EEXIST) return SysError("mkdir", next);
    prefix = next;
  }
  return sys::Openat2(root, path, O_PATH | O_CLOEXEC, kInRoot);
}

Status MountAt(const std::string& source, int target_fd, const char* type, unsigned long flags,
               const std::string& data, const std::string& subject) {
  if (mount(source.empty() ? nullptr : source.c_str(), FdPath(target_fd).c_str(), type, flags,
            data.empty() ? nullptr : data.c_str()) < 0) {
    return SysError("mount", subject);
  }
  return {};
}

// The flags of the mount at `fd` that a less privileged mount namespace may not clear
// (nosuid, nodev, noexec, ro, atime): a bind remount must repeat them (runc does the same).
unsigned long LockedFlags(int fd) {
  struct statvfs st;
  if (fstatvfs(fd, &st) < 0) return 0;
  unsigned long f = 0;
  if (st.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) f |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (st.f_flag & ST_RDONLY) f |= MS_RDONLY;
  if (st.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

// One of the host's cgroup hierarchies, as cgroup::ProbeLayout reads them.
struct CgroupMount {
  std::string point;  // where the host has it mounted
  std::string name;   // the mount point's last component: memory, cpu, unified...; "" for
                      // a cgroup2 at /sys/fs/cgroup itself
  bool v2 = false;
  std::string options;  // a v1 hierarchy's controllers (memory; name=systemd)
};

std::vector<CgroupMount> HostCgroupMounts() {
  std::vector<CgroupMount> out;
  auto layout = cgroup::ProbeLayout();
  if (!layout) return out;
  auto name = [](const std::string& point) {
    return point == "/sys/fs/cgroup" ? "" : point.substr(point.rfind('/') + 1);
  };
  for (const auto* list : {&layout->v1, &layout->v1_named}) {
    for (const cgroup::V1Hierarchy& h : *list) {
      if (!util::PathWithin(h.at.mount, "/sys/fs/cgroup")) continue;
      std::string options;
      for (const std::string& c : h.controllers) options += (options.empty() ? "" : ",") + c;
      out.push_back({h.at.mount, name(h.at.mount), false, options});
    }
  }
  if (layout->v2 && util::PathWithin(layout->v2->mount, "/sys/fs/cgroup")) {
    out.push_back({layout->v2->mount, name(layout->v2->mount), true, ""});
  }
  return out;
}

// Where hierarchy `h` (mounted at `point` on the host) has one of the container's groups.
std::string GroupIn(const std::string& point, const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    if (util::PathWithin(d, point)) return d;
  }
  return {};
}

// kCgroup and kCgroupGroups. In a cgroup namespace of its own: cgroup2 itself on a pure v2
// host; on a v1 or hybrid one, a tmpfs with each hierarchy mounted afresh below it (each
// shows the container's group as its root), as runc does. Without one, the container's own
// group of each hierarchy is bound there instead, and no other part of the host's tree is
// seen: a container with no group at all gets an empty tmpfs.
Status MountCgroups(int root, const Step& s, const std::string& at) {
  const bool bind = s.kind == StepKind::kCgroupGroups;
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root, at, true, false));
  std::vector<CgroupMount> host = HostCgroupMounts();
  auto mount_one = [&](const CgroupMount& h, int fd, const std::string& dest) -> Status {
    if (bind) {
      std::string group = GroupIn(h.point, s.groups);
      if (group.empty()) return {};
      BRIG_TRY(MountAt(group, fd, nullptr, MS_BIND | MS_REC, "", dest));
      sys::UniqueFd top = BRIG_TRY(OpenInRoot(root, dest, false, false));
      uint64_t attrs = (s.flags & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0;
      return sys::MountSetattr(top.get(), "", AT_EMPTY_PATH | AT_RECURSIVE,
                               attrs | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0,
                               dest);
    }
    if (h.v2) return MountAt("cgroup2", fd, "cgroup2", s.flags, "", dest);
    return MountAt("cgroup", fd, "cgroup", s.flags, h.options, dest);
  };
  if (host.size() == 1 && host[0].v2 && host[0].name.empty() &&
      (!bind || !GroupIn(host[0].point, s.groups).empty())) {
    return mount_one(host[0], target.get(), at);
  }
  BRIG_TRY(MountAt("tmpfs", target.get(), "tmpfs", s.flags & ~MS_RDONLY, "mode=755", at));
  for (const CgroupMount& h : host) {
    if (h.name.empty() || (bind && GroupIn(h.point, s.groups).empty())) continue;
    std::string dest = at + "/" + h.name;
    sys::UniqueFd dir = BRIG_TRY(OpenInRoot(root, dest, true, false));
    BRIG_TRY(mount_one(h, dir.get(), dest));
  }
  if (s.flags & MS_RDONLY) {
    sys::UniqueFd top = BRIG_TRY(OpenInRoot(root, at, false, false));
    BRIG_TRY(sys::MountSetattr(top.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, at));
  }
  return {};
}

// Copies the tree under the directory `src` into the directory `dst`: directories, regular
// files and symlinks (never followed), with their modes and owners. Devices, sockets and
// FIFOs are left out.
Status CopyTree(int src, int dst, const std::string& path) {
  int listed = fcntl(src, F_DUPFD_CLOEXEC, 3);
  if (listed < 0) return SysError("fcntl", path);
  DIR* d = fdopendir(listed);
  if (!d) {
    close(listed);
    return SysError("opendir", path);
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  for (const std::string& n : names) {
    std::string sub = path + "/" + n;
    struct stat st;
    if (fstatat(src, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return SysError("stat", sub);
    if (S_ISDIR(st.st_mode)) {
      if (mkdirat(dst, n.c_str(), st.st_mode & 07777) < 0) return SysError("mkdir", sub);
      sys::UniqueFd from(openat(src, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      sys::UniqueFd to(openat(dst, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!from.valid() || !to.valid()) return SysError("open", sub);
      BRIG_TRY(CopyTree(from.get(), to.get(), sub));
    } else if (S_ISREG(st.st_mode)) {
      sys::UniqueFd from(openat(src, n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      sys::UniqueFd to(openat(dst, n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                              st.st_mode & 07777));
      if (!from.valid() || !to.valid()) return SysError("open", sub);
      for (;;) {
        ssize_t k = sendfile(to.get(), from.get(), nullptr, 1 << 20);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return SysError("copy", sub);
        if (k == 0) break;
      }
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t k = readlinkat(src, n.c_str(), target.data(), target.size());
      if (k < 0) return SysError("readlink", sub);
      target.resize(static_cast<size_t>(k));
      if (symlinkat(target.c_str(), dst, n.c_str()) < 0) return SysError("symlink", sub);
    } else {
      continue;
    }
    if (fchownat(dst, n.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
      return SysError("chown", sub);
    }
    if (!S_ISLNK(st.st_mode) && fchmodat(dst, n.c_str(), st.st_mode & 07777, 0) < 0) {
      return SysError("chmod", sub);
    }
  }
  return {};
}

// A new file system as config.json's mount asks for it, made detached (NewFs: fsopen,
// fsconfig, fsmount), as brig run makes its own, then attached at its destination by fd:
// `source`, and the options of `data` (one without a value is a flag: "newinstance"), as
// fsconfig keys; the mount(2) flags that are a superblock's ("sync", "dirsync", "lazytime",
// "mand") as fsconfig flags, and those that are a mount's as its attributes (ro only when
// `with_ro`). A new file system is made, never a remount of what is there: "remount" is for
// binds; "silent" and "iversion" change nothing a container sees and are not passed on.
Result<sys::UniqueFd> MakeFs(const Step& s, const std::string& type, bool with_ro,
                             const std::string& dest) {
  std::vector<std::pair<std::string, std::string>> opts;
  if (!s.source.empty()) opts.emplace_back("source", s.source);
  for (std::string_view opt : util::Split(s.data, ',')) {
    if (opt.empty()) continue;
    size_t eq = opt.find('=');
    opts.emplace_back(opt.substr(0, eq), eq == std::string_view::npos ? "" : opt.substr(eq + 1));
  }
  constexpr std::pair<unsigned long, const char*> kSuperblock[] = {{MS_SYNCHRONOUS, "sync"},
                                                                   {MS_DIRSYNC, "dirsync"},
                                                                   {MS_LAZYTIME, "lazytime"},
                                                                   {MS_MANDLOCK, "mand"}};
  for (const auto& [flag, key] : kSuperblock) {
    if (s.flags & flag) opts.emplace_back(key, "");
  }
  constexpr std::pair<unsigned long, uint64_t> kAttrs[] = {
      {MS_RDONLY, MOUNT_ATTR_RDONLY},         {MS_NOSUID, MOUNT_ATTR_NOSUID},
      {MS_NODEV, MOUNT_ATTR_NODEV},           {MS_NOEXEC, MOUNT_ATTR_NOEXEC},
      {MS_NOATIME, MOUNT_ATTR_NOATIME},       {MS_STRICTATIME, MOUNT_ATTR_STRICTATIME},
      {MS_NODIRATIME, MOUNT_ATTR_NODIRATIME}, {MS_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW}};
  uint64_t attrs = 0;
  for (const auto& [flag, attr] : kAttrs) {
    if ((s.flags & flag) && (with_ro || flag != MS_RDONLY)) attrs |= attr;
  }
  return NewFs(type.c_str(), opts, attrs, dest);
}

// kTmpfsCopyUp: made as kMount is, filled with what the image holds at its destination,
// then moved there, so the image's files show through; read-only, if asked, once filled.
Status MountTmpfsCopyUp(int root, const Step& s, const std::string& dest) {
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root, dest, true, false));
  sys::UniqueFd src = BRIG_TRY(sys::Openat2(root, dest, O_RDONLY | O_DIRECTORY, kInRoot));
  sys::UniqueFd mnt = BRIG_TRY(MakeFs(s, "tmpfs", false, dest));
  BRIG_TRY_CTX(CopyTree(src.get(), mnt.get(), dest), "tmpcopyup");
  BRIG_TRY(sys::MoveMount(mnt.get(), "", target.get(), "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  if (s.flags & MS_RDONLY) {
    sys::UniqueFd top = BRIG_TRY(OpenInRoot(root, dest, false, false));
    BRIG_TRY(sys::MountSetattr(top.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, dest));
  }
  return {};
}

// kBindSource, resolved here, in init's own copy of the host's mounts (mount_plan.h), or
// through the descriptor of it that brig opened there.
// An id-mapped one is the detached copy brig made (fs/idmap.h), attached.
Status BindSource(int root, const Step& s, const std::string& dest) {
  const int tree = s.tree.get();
  if (s.idmap && tree < 0) {
    return Fail("mount", dest, "brig made no id-mapped copy of " + s.source, ErrorKind::kInternal);
  }
  struct stat st;
  if (tree >= 0 ? fstat(tree, &st) < 0 : stat(s.source.c_str(), &st) < 0) {
    return SysError("stat", "mount source " + s.source);
  }
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root, dest, true, !S_ISDIR(st.st_mode)));
  if (s.idmap) {
    BRIG_TRY(sys::MoveMount(tree, "", target.get(), "",
                            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  } else {
    std::string source = tree >= 0 ? FdPath(tree) : s.source;
    BRIG_TRY(
        MountAt(source, target.get(), nullptr, MS_BIND | (s.recursive ? MS_REC : 0), "", dest));
  }
  target = BRIG_TRY(OpenInRoot(root, dest, false, false));
  if (s.remount) {
    unsigned long remount = MS_REMOUNT | MS_BIND | s.flags;
    if (mount(nullptr, FdPath(target.get()).c_str(), nullptr, remount, nullptr) < 0) {
      if (errno != EPERM) return SysError("remount", dest);
      // A mount's locked flags must be repeated in a user namespace (mount_namespaces(7)).
      BRIG_TRY(MountAt("", target.get(), nullptr, remount | LockedFlags(target.get()), "", dest));
    }
  }
  if (s.attrs || s.cleared) {
    BRIG_TRY(sys::MountSetattr(target.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, s.attrs, s.cleared,
                               dest));
  }
  return {};
}

// kMount.
Status NewMount(int root, const Step& s, const std::string& dest) {
  if (s.type == "proc" || s.type == "sysfs") {
    // On an ordinary directory, never through a symlink the image put at the destination
    // (runc's rule, and its words): the masked and read-only paths over it are resolved by
    // their own paths later, and must land on this file system, not beside it.
    size_t slash = dest.rfind('/');
    std::string dir = slash == 0 ? "/" : dest.substr(0, slash), name = dest.substr(slash + 1);
    auto parent = OpenInRoot(root, dir, false, false);
    struct stat st;
    if (parent && fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode)) {
      return Fail("mount", dest, s.type + " must be mounted on ordinary directory, not a symlink");
    }
  }
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root, dest, true, false));
  auto made = MakeFs(s, s.type, true, dest);
  if (!made && s.host_sys && made.error().err == EPERM) {
    // Without a network namespace of its own a user namespace may not mount sysfs: the
    // host's /sys is bound read-only instead (runc's fallback).
    BRIG_TRY(MountAt("/sys", target.get(), nullptr, MS_BIND | MS_REC, "", dest));
    target = BRIG_TRY(OpenInRoot(root, dest, false, false));
    BRIG_TRY(sys::MountSetattr(target.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0,
                               dest));
  } else if (!made) {
    return std::move(made).error();
  } else {
    BRIG_TRY(sys::MoveMount(made->get(), "", target.get(), "",
                            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  }
  if (s.attrs || s.cleared) {
    target = BRIG_TRY(OpenInRoot(root, dest, false, false));
    BRIG_TRY(sys::MountSetattr(target.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, s.attrs, s.cleared,
                               dest));
  }
  return {};
}

// kDevice: any entry at the path is replaced by the node.
Status MakeDevice(int root, const Step& s, const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  sys::UniqueFd parent = BRIG_TRY(OpenInRoot(root, dir, true, false));
  if (unlinkat(parent.get(), name.c_str(), 0) < 0 && errno != ENOENT) {
    return SysError("unlink", path);
  }
  if (mknodat(parent.get(), name.c_str(), s.mode, static_cast<dev_t>(s.rdev)) < 0) {
    return SysError("mknod", path);
  }
  if (fchmodat(parent.get(), name.c_str(), s.mode & 07777, 0) < 0) return SysError("chmod", path);
  if (fchownat(parent.get(), name.c_str(), s.uid, s.gid, AT_SYMLINK_NOFOLLOW) < 0) {
    return SysError("chown", path);
  }
  return {};
}

// kLinkInRoot: its directory is reached (made) inside the root, the link made in it.
Status LinkInRoot(int root, const Step& s, const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  sys::UniqueFd at = BRIG_TRY(OpenInRoot(root, dir, true, false));
  sys::UniqueFd parent = BRIG_TRY(sys::Openat2(at.get(), ".", O_DIRECTORY | O_CLOEXEC, 0));
  if (s.replace) (void)unlinkat(parent.get(), name.c_str(), 0);
  if (symlinkat(s.data.c_str(), parent.get(), name.c_str()) < 0 && (s.replace || errno != EEXIST)) {
    return SysError("symlink", path);
  }
  return {};
}

}  // namespace

Result<sys::UniqueFd> OpenInRoot(int root, const std::string& path, bool make, bool as_file) {
  return Open(root, path, make, as_file, 0);
}

Status ApplyInRoot(int root, const Step& s) {
  const std::string dest = "/" + s.dest;
  switch (s.kind) {
    case StepKind::kBindSource:
      return BindSource(root, s, dest);
    case StepKind::kMount:
      return NewMount(root, s, dest);
    case StepKind::kTmpfsCopyUp:
      return MountTmpfsCopyUp(root, s, dest);
    case StepKind::kCgroup:
    case StepKind::kCgroupGroups:
      return MountCgroups(root, s, dest);
    case StepKind::kDevice:
      return MakeDevice(root, s, dest);
    case StepKind::kLinkInRoot:
      return LinkInRoot(root, s, dest);
    case StepKind::kPropagation: {
      sys::UniqueFd at = BRIG_TRY(OpenInRoot(root, dest, false, false));
      return MountAt("", at.get(), nullptr, s.flags, "", dest);
    }
    default:
      break;
  }
  return Fail("mount plan", dest, "not a step of an OCI root", ErrorKind::kInternal);
}

}  // namespace brig::fs
