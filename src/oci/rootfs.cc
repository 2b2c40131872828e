// The container's file system from config.json, child side (rootfs.h). Runs in the
// container's mount namespace before any seccomp filter; allocation is fine here.
#include "oci/rootfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
// <sys/sysmacros.h> defines major() and minor() as macros; the spec's Device has fields
// of those names.
#undef major
#undef minor
#include <unistd.h>

#include <climits>
#include <string_view>
#include <vector>

#include "fs/rootfs.h"
#include "oci/spec.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::oci {
namespace {

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// `path` (absolute, inside the root `root_fd`) opened O_PATH, confined to the root. With
// `make`, missing directories on the way are made (0755), and a missing last component
// too: a directory, or an empty file when `as_file`. A dangling symlink on the way (an
// image's /mnt/x -> /somewhere) is followed inside the root and what it names is made
// there, as runc does; nothing is ever made outside the root.
Result<sys::UniqueFd> OpenInRoot(int root_fd, const std::string& path, bool make,
                                 bool as_file, int links = 0) {
  auto fd = sys::Openat2(root_fd, path, O_PATH | O_CLOEXEC, kInRoot);
  if (fd || !make || fd.error().err != ENOENT) return fd;
  std::vector<std::string> parts;
  for (std::string_view p : util::Split(path, '/')) {
    if (!p.empty() && p != ".") parts.emplace_back(p);
  }
  std::string prefix = "/";
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string next = prefix + (prefix == "/" ? "" : "/") + parts[i];
    auto here = sys::Openat2(root_fd, next, O_PATH | O_CLOEXEC, kInRoot);
    if (here) {
      prefix = next;
      continue;
    }
    if (here.error().err != ENOENT) return std::move(here).error();
    sys::UniqueFd parent = BRIG_TRY(sys::Openat2(root_fd, prefix, O_PATH | O_DIRECTORY |
                                                 O_CLOEXEC, kInRoot));
    const std::string& name = parts[i];
    struct stat st;
    if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode)) {
      if (links >= 40) return Fail("open", path, "too many symbolic links");
      char target[PATH_MAX];
      ssize_t n = readlinkat(parent.get(), name.c_str(), target, sizeof target - 1);
      if (n < 0) return SysError("readlink", next);
      std::string followed(target, static_cast<size_t>(n));
      if (followed.empty() || followed[0] != '/') followed = prefix + "/" + followed;
      for (size_t j = i + 1; j < parts.size(); ++j) followed += "/" + parts[j];
      return OpenInRoot(root_fd, followed, make, as_file, links + 1);
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
  return sys::Openat2(root_fd, path, O_PATH | O_CLOEXEC, kInRoot);
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

// One of the host's cgroup hierarchies, from /proc/self/mountinfo.
struct CgroupMount {
  std::string name;     // the mount point's last component: memory, cpu, unified...
  bool v2 = false;
  std::string options;  // the v1 hierarchy's controllers (memory; name=systemd)
};

std::vector<CgroupMount> HostCgroupMounts() {
  std::vector<CgroupMount> out;
  auto text = util::ReadFile("/proc/self/mountinfo");
  if (!text) return out;
  for (std::string_view line : util::Split(*text, '\n')) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> left = util::Split(line.substr(0, dash), ' ');
    std::vector<std::string_view> right = util::Split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    std::string point = util::UnescapeMountinfo(left[4]);
    if (point.rfind("/sys/fs/cgroup", 0) != 0) continue;
    CgroupMount m;
    m.name = point == "/sys/fs/cgroup" ? "" : point.substr(point.rfind('/') + 1);
    if (right[0] == "cgroup2") {
      m.v2 = true;
    } else if (right[0] == "cgroup") {
      for (std::string_view o : util::Split(right[2], ',')) {
        if (o == "rw" || o == "ro" || o == "xattr" || o == "clone_children") continue;
        if (!m.options.empty()) m.options += ",";
        m.options += std::string(o);
      }
    } else {
      continue;
    }
    out.push_back(std::move(m));
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

// A "cgroup" mount. In a cgroup namespace of its own: cgroup2 itself on a pure v2 host; on
// a v1 or hybrid one, a tmpfs with each hierarchy mounted afresh below it (each shows the
// container's group as its root), as runc does. Without one, the container's own group of
// each hierarchy is bound there instead, and no other part of the host's tree is seen.
Status MountCgroups(int root_fd, const Mount& m, const MountOptions& o,
                    const RootfsOptions& ro) {
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root_fd, m.destination(), true, false));
  std::vector<CgroupMount> host = HostCgroupMounts();
  auto mount_one = [&](const CgroupMount& h, int fd, const std::string& dest) -> Status {
    if (!ro.cgroupns) {
      std::string group = GroupIn("/sys/fs/cgroup" + (h.name.empty() ? "" : "/" + h.name),
                                  ro.cgroup_dirs);
      if (group.empty()) return {};
      BRIG_TRY(MountAt(group, fd, nullptr, MS_BIND | MS_REC, "", dest));
      sys::UniqueFd top = BRIG_TRY(OpenInRoot(root_fd, dest, false, false));
      uint64_t attrs = (o.flags & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0;
      return sys::MountSetattr(top.get(), "", AT_EMPTY_PATH | AT_RECURSIVE,
                               attrs | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                               0, dest);
    }
    if (h.v2) return MountAt("cgroup2", fd, "cgroup2", o.flags, "", dest);
    return MountAt("cgroup", fd, "cgroup", o.flags, h.options, dest);
  };
  if (host.size() == 1 && host[0].v2 && host[0].name.empty()) {
    return mount_one(host[0], target.get(), m.destination());
  }
  BRIG_TRY(MountAt("tmpfs", target.get(), "tmpfs", o.flags & ~MS_RDONLY, "mode=755",
                   m.destination()));
  for (const CgroupMount& h : host) {
    if (h.name.empty()) continue;
    std::string dest = m.destination() + "/" + h.name;
    sys::UniqueFd dir = BRIG_TRY(OpenInRoot(root_fd, dest, true, false));
    BRIG_TRY(mount_one(h, dir.get(), dest));
  }
  if (o.flags & MS_RDONLY) {
    sys::UniqueFd top = BRIG_TRY(OpenInRoot(root_fd, m.destination(), false, false));
    BRIG_TRY(sys::MountSetattr(top.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0,
                               m.destination()));
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

// A tmpfs with runc's tmpcopyup: made detached (fsopen, fsmount), filled with what the
// image holds at its destination, then moved there, so the image's files show through.
Status MountTmpfsCopyUp(int root_fd, const Mount& m, const MountOptions& o) {
  const std::string& dest = m.destination();
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root_fd, dest, true, false));
  sys::UniqueFd src = BRIG_TRY(sys::Openat2(root_fd, dest, O_RDONLY | O_DIRECTORY, kInRoot));
  sys::UniqueFd fs = BRIG_TRY(sys::FsOpen("tmpfs"));
  for (std::string_view opt : util::Split(o.data, ',')) {
    if (opt.empty()) continue;
    size_t eq = opt.find('=');
    std::string key(opt.substr(0, eq));
    if (eq == std::string_view::npos) {
      BRIG_TRY(sys::FsConfigFlag(fs.get(), key, dest));
      continue;
    }
    BRIG_TRY(sys::FsConfigString(fs.get(), key, std::string(opt.substr(eq + 1))));
  }
  BRIG_TRY(sys::FsConfigCreate(fs.get(), "tmpfs"));
  uint64_t attrs = 0;
  if (o.flags & MS_NOSUID) attrs |= MOUNT_ATTR_NOSUID;
  if (o.flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
  if (o.flags & MS_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
  if (o.flags & MS_NOATIME) attrs |= MOUNT_ATTR_NOATIME;
  if (o.flags & MS_STRICTATIME) attrs |= MOUNT_ATTR_STRICTATIME;
  if (o.flags & MS_NODIRATIME) attrs |= MOUNT_ATTR_NODIRATIME;
  sys::UniqueFd mnt = BRIG_TRY(sys::FsMount(fs.get(), attrs, dest));
  BRIG_TRY_CTX(CopyTree(src.get(), mnt.get(), dest), "tmpcopyup");
  BRIG_TRY(sys::MoveMount(mnt.get(), "", target.get(), "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  if (o.flags & MS_RDONLY) {
    sys::UniqueFd top = BRIG_TRY(OpenInRoot(root_fd, dest, false, false));
    BRIG_TRY(sys::MountSetattr(top.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, dest));
  }
  return {};
}

Status MountOne(int root_fd, const Mount& m, const RootfsOptions& ro) {
  MountOptions o = ParseMountOptions({m.options().begin(), m.options().end()});
  const std::string& dest = m.destination();
  if (m.uid_mappings_size() > 0 || m.gid_mappings_size() > 0) {
    return BadInput("mounts", dest, "id-mapped mounts are not supported");
  }
  if (m.type() == "cgroup" || m.type() == "cgroup2") return MountCgroups(root_fd, m, o, ro);
  if (o.tmpcopyup && m.type() == "tmpfs") {
    BRIG_TRY(MountTmpfsCopyUp(root_fd, m, o));
    if (o.propagation) {
      sys::UniqueFd top = BRIG_TRY(OpenInRoot(root_fd, m.destination(), false, false));
      BRIG_TRY(MountAt("", top.get(), nullptr, o.propagation, "", m.destination()));
    }
    return {};
  }
  bool bind = o.bind || IsBind(m);
  std::string source = m.source();
  if (bind && !source.empty() && source[0] != '/') source = ro.bundle + "/" + source;
  bool as_file = false;
  if (bind) {
    struct stat st;
    if (stat(source.c_str(), &st) < 0) return SysError("stat", "mount source " + source);
    as_file = !S_ISDIR(st.st_mode);
  }
  sys::UniqueFd target = BRIG_TRY(OpenInRoot(root_fd, dest, true, as_file));
  if (bind) {
    BRIG_TRY(MountAt(source, target.get(), nullptr, MS_BIND | (o.recursive ? MS_REC : 0), "",
                   dest));
    target = BRIG_TRY(OpenInRoot(root_fd, dest, false, false));
    unsigned long flags = o.flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
    if (flags != 0 || o.clear != 0) {
      unsigned long remount = MS_REMOUNT | MS_BIND | flags;
      if (mount(nullptr, FdPath(target.get()).c_str(), nullptr, remount, nullptr) < 0) {
        if (errno != EPERM) return SysError("remount", dest);
        // A mount's locked flags must be repeated in a user namespace (mount_namespaces(7)).
        BRIG_TRY(MountAt("", target.get(), nullptr, remount | LockedFlags(target.get()), "",
                       dest));
      }
    }
  } else {
    const std::string type = m.type().empty() ? "none" : m.type();
    auto s = MountAt(source.empty() ? type : source, target.get(), type.c_str(), o.flags, o.data,
                   dest);
    if (!s && type == "sysfs" && ro.userns && s.error().err == EPERM) {
      // Without a network namespace of its own a user namespace may not mount sysfs: the
      // host's /sys is bound read-only instead (runc's fallback).
      BRIG_TRY(MountAt("/sys", target.get(), nullptr, MS_BIND | MS_REC, "", dest));
      target = BRIG_TRY(OpenInRoot(root_fd, dest, false, false));
      BRIG_TRY(sys::MountSetattr(target.get(), "", AT_EMPTY_PATH | AT_RECURSIVE,
                                 MOUNT_ATTR_RDONLY, 0, dest));
    } else if (!s) {
      return s;
    }
    target = BRIG_TRY(OpenInRoot(root_fd, dest, false, false));
  }
  if (o.attr_set || o.attr_clr) {
    BRIG_TRY(sys::MountSetattr(target.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, o.attr_set,
                               o.attr_clr, dest));
  }
  if (o.propagation) BRIG_TRY(MountAt("", target.get(), nullptr, o.propagation, "", dest));
  return {};
}

struct DefaultDevice {
  const char* path;
  unsigned major, minor;
};
constexpr DefaultDevice kDefaultDevices[] = {{"/dev/null", 1, 3},    {"/dev/zero", 1, 5},
                                             {"/dev/full", 1, 7},    {"/dev/random", 1, 8},
                                             {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};

// A device node at `path`: made with mknod, or, in a user namespace (where mknod is
// refused), the host's node of the same path bound over an empty file.
Status MakeDevice(int root_fd, const std::string& path, mode_t type, unsigned major,
                  unsigned minor, mode_t mode, uid_t uid, gid_t gid, bool userns) {
  size_t slash = path.rfind('/');
  std::string dir = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  sys::UniqueFd parent = BRIG_TRY(OpenInRoot(root_fd, dir, true, false));
  if (userns) {
    sys::UniqueFd target = BRIG_TRY(OpenInRoot(root_fd, path, true, true));
    BRIG_TRY(MountAt(path, target.get(), nullptr, MS_BIND, "", path));
    // Read-only: the node stays a device anyone may read and write (a read-only mount
    // refuses only a change of the inode), but no process of the container can touch,
    // chmod or chown the host's own node through it: utimensat(UTIME_NOW) needs no more
    // than write access, and the host's /dev/null is 0666.
    sys::UniqueFd bound = BRIG_TRY(OpenInRoot(root_fd, path, false, true));
    return sys::MountSetattr(bound.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, path);
  }
  if (unlinkat(parent.get(), name.c_str(), 0) < 0 && errno != ENOENT) {
    return SysError("unlink", path);
  }
  if (mknodat(parent.get(), name.c_str(), type | (mode & 07777), makedev(major, minor)) < 0) {
    return SysError("mknod", path);
  }
  if (fchmodat(parent.get(), name.c_str(), mode & 07777, 0) < 0) return SysError("chmod", path);
  if (fchownat(parent.get(), name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
    return SysError("chown", path);
  }
  return {};
}

bool BindsHostDev(const Spec& spec) {
  for (const Mount& m : spec.mounts()) {
    if (m.destination() == "/dev" && IsBind(m)) return true;
  }
  return false;
}

Status MakeDevices(int root_fd, const Spec& spec, bool userns) {
  if (BindsHostDev(spec)) return {};
  for (const DefaultDevice& d : kDefaultDevices) {
    BRIG_TRY(MakeDevice(root_fd, d.path, S_IFCHR, d.major, d.minor, 0666, 0, 0, userns));
  }
  for (const Device& d : spec.linux().devices()) {
    mode_t type = d.type() == "b" ? S_IFBLK : d.type() == "p" ? S_IFIFO : S_IFCHR;
    BRIG_TRY(MakeDevice(root_fd, d.path(), type, static_cast<unsigned>(d.major()),
                        static_cast<unsigned>(d.minor()),
                        d.has_file_mode() ? d.file_mode() : 0666, d.uid(), d.gid(), userns));
  }
  sys::UniqueFd dev = BRIG_TRY(OpenInRoot(root_fd, "/dev", true, false));
  sys::UniqueFd devdir = BRIG_TRY(sys::Openat2(dev.get(), ".", O_DIRECTORY | O_CLOEXEC, 0));
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "fd"},
                                                       {"/proc/self/fd/0", "stdin"},
                                                       {"/proc/self/fd/1", "stdout"},
                                                       {"/proc/self/fd/2", "stderr"}};
  for (const auto& [to, name] : links) {
    if (symlinkat(to, devdir.get(), name) < 0 && errno != EEXIST) {
      return SysError("symlink", std::string("/dev/") + name);
    }
  }
  // /dev/ptmx is the container's own devpts's: a link to pts/ptmx (devpts(5)).
  (void)unlinkat(devdir.get(), "ptmx", 0);
  if (symlinkat("pts/ptmx", devdir.get(), "ptmx") < 0) return SysError("symlink", "/dev/ptmx");
  return {};
}

// The steps that make `paths` (absolute, inside the root) `kind`.
std::vector<fs::Step> StepsFor(fs::StepKind kind,
                               const google::protobuf::RepeatedPtrField<std::string>& paths) {
  std::vector<fs::Step> steps;
  for (const std::string& p : paths) {
    size_t start = p.find_first_not_of('/');
    steps.push_back({.kind = kind, .dest = start == std::string::npos ? "" : p.substr(start)});
  }
  return steps;
}

}  // namespace

Status PrepareRootfs(const Spec& spec, const RootfsOptions& ro) {
  const std::string& rootfs = ro.rootfs;
  unsigned long prop = BRIG_TRY(RootfsPropagation(spec.linux().rootfs_propagation()));
  // The host's mounts must not see the container's, nor its unmounts: rslave unless the
  // config asks rprivate (a shared "/" is applied after pivot_root, FinishRootfs).
  unsigned long first = (prop & MS_PRIVATE) ? MS_PRIVATE | MS_REC : MS_SLAVE | MS_REC;
  if (mount(nullptr, "/", nullptr, first, nullptr) < 0) return SysError("mount", "/ (propagation)");
  if (mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0) {
    return SysError("mount", "root.path " + rootfs);
  }
  sys::UniqueFd root = BRIG_TRY(sys::Openat2(AT_FDCWD, rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC,
                                             0));
  for (const Mount& m : spec.mounts()) {
    BRIG_TRY_CTX(MountOne(root.get(), m, ro), "mounts");
  }
  BRIG_TRY_CTX(MakeDevices(root.get(), spec, ro.userns), "linux.devices");
  return {};
}

Status EnterRootfs(const std::string& rootfs, bool no_pivot) {
  if (!no_pivot) {
    sys::UniqueFd root(open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return SysError("open", rootfs);
    BRIG_TRY_CTX(fs::PivotInto(root.get()), rootfs);
    return {};
  }
  if (chdir(rootfs.c_str()) < 0) return SysError("chdir", rootfs);
  if (mount(rootfs.c_str(), "/", nullptr, MS_MOVE, nullptr) < 0) {
    return SysError("mount", "move root " + rootfs);
  }
  if (chroot(".") < 0) return SysError("chroot", rootfs);
  if (chdir("/") < 0) return SysError("chdir", "/");
  return {};
}

Status FinishRootfs(const Spec& spec) {
  sys::UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysError("open", "/");
  std::vector<fs::Step> masked = StepsFor(fs::StepKind::kMask, spec.linux().masked_paths());
  BRIG_TRY_CTX(fs::ApplySteps(root.get(), masked), "linux.maskedPaths");
  std::vector<fs::Step> readonly = StepsFor(fs::StepKind::kReadOnly, spec.linux().readonly_paths());
  BRIG_TRY_CTX(fs::ApplySteps(root.get(), readonly), "linux.readonlyPaths");
  if (spec.root().readonly()) {
    BRIG_TRY_CTX(sys::MountSetattr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY, 0, "/"), "root.readonly");
  }
  unsigned long prop = BRIG_TRY(RootfsPropagation(spec.linux().rootfs_propagation()));
  if (!spec.linux().rootfs_propagation().empty() && mount(nullptr, "/", nullptr, prop, nullptr) < 0) {
    return SysError("mount", "linux.rootfsPropagation");
  }
  return {};
}

}  // namespace brig::oci
