// The container's file system from config.json (rootfs.h): planned as fs::Steps, which the
// container's init executes through fs/ (fs/rootfs.h, fs/in_root.h).
#include "oci/rootfs.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
// <sys/sysmacros.h> defines major() and minor() as macros; the spec's Device has fields
// of those names.
#undef major
#undef minor
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "container/sync.h"
#include "fs/idmap.h"
#include "fs/rootfs.h"
#include "oci/spec.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::oci {
namespace {

// A dest as fs::Step takes it: inside the root, no leading slash.
std::string Dest(const std::string& p) {
  size_t start = p.find_first_not_of('/');
  return start == std::string::npos ? "" : p.substr(start);
}

fs::Step StepOf(fs::StepKind kind, const std::string& path, const char* field) {
  return {.kind = kind, .dest = Dest(path), .field = field};
}

void AddMount(std::vector<fs::Step>& steps, const Mount& m, const RootfsOptions& ro) {
  using K = fs::StepKind;
  MountOptions o = ParseMountOptions({m.options().begin(), m.options().end()});
  fs::Step s = StepOf(K::kMount, m.destination(), "mounts");
  if (m.type() == "cgroup" || m.type() == "cgroup2") {
    // A container without groups (brig without root, none delegated) sees none: not even
    // a cgroup namespace's view of the group it was started in, which is not its own.
    const bool own_view = ro.cgroupns && !ro.cgroup_dirs.empty();
    s.kind = own_view ? K::kCgroup : K::kCgroupGroups;
    s.source = m.type();
    s.flags = o.flags;
    if (!own_view) s.groups = ro.cgroup_dirs;
    steps.push_back(std::move(s));
    return;
  }
  if (o.tmpcopyup && m.type() == "tmpfs") {
    s.kind = K::kTmpfsCopyUp;
    s.source = "tmpfs";
    s.flags = o.flags;
    s.data = o.data;
  } else if (o.bind || IsBind(m)) {
    s.kind = K::kBindSource;
    s.source = m.source();
    if (!s.source.empty() && s.source[0] != '/') s.source = ro.bundle + "/" + s.source;
    s.recursive = o.recursive;
    s.flags = o.flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
    s.remount = s.flags != 0 || o.clear != 0;
    s.attrs = o.attr_set;
    s.cleared = o.attr_clr;
    if (!m.uid_mappings().empty()) {
      s.idmap =
          sys::IdMaps{.uids = IdMappings(m.uid_mappings()), .gids = IdMappings(m.gid_mappings())};
      s.idmap_recursive = o.idmap_recursive;
    }
  } else {
    s.type = m.type().empty() ? "none" : m.type();
    s.source = m.source().empty() ? s.type : m.source();
    s.flags = o.flags;
    s.data = o.data;
    s.host_sys = s.type == "sysfs" && ro.userns;
    s.attrs = o.attr_set;
    s.cleared = o.attr_clr;
  }
  const std::string dest = s.dest;
  steps.push_back(std::move(s));
  if (o.propagation) {
    fs::Step p = StepOf(K::kPropagation, dest, "mounts");
    p.flags = o.propagation;
    steps.push_back(std::move(p));
  }
}

struct DefaultDevice {
  const char* path;
  unsigned major, minor;
};
constexpr DefaultDevice kDefaultDevices[] = {{"/dev/null", 1, 3},    {"/dev/zero", 1, 5},
                                             {"/dev/full", 1, 7},    {"/dev/random", 1, 8},
                                             {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};

// A device node at `path`: made with mknod, or, in a user namespace (where mknod is
// refused), the host's node of the same path bound over an empty file, read-only: the node
// stays a device anyone may read and write (a read-only mount refuses only a change of the
// inode), but no process of the container can touch, chmod or chown the host's own node
// through it: utimensat(UTIME_NOW) needs no more than write access, and the host's
// /dev/null is 0666.
fs::Step DeviceStep(const std::string& path, mode_t type, unsigned dev_major, unsigned dev_minor,
                    mode_t mode, uid_t uid, gid_t gid, bool userns) {
  fs::Step s = StepOf(fs::StepKind::kDevice, path, "linux.devices");
  if (userns) {
    s.kind = fs::StepKind::kBindSource;
    s.source = path;
    s.attrs = MOUNT_ATTR_RDONLY;
    return s;
  }
  s.mode = type | (mode & 07777);
  s.rdev = makedev(dev_major, dev_minor);
  s.uid = uid;
  s.gid = gid;
  return s;
}

bool BindsHostDev(const Spec& spec) {
  for (const Mount& m : spec.mounts()) {
    if (m.destination() == "/dev" && IsBind(m)) return true;
  }
  return false;
}

void AddDevices(std::vector<fs::Step>& steps, const Spec& spec, bool userns) {
  if (BindsHostDev(spec)) return;
  for (const DefaultDevice& d : kDefaultDevices) {
    steps.push_back(DeviceStep(d.path, S_IFCHR, d.major, d.minor, 0666, 0, 0, userns));
  }
  for (const Device& d : spec.linux().devices()) {
    mode_t type = d.type() == "b" ? S_IFBLK : d.type() == "p" ? S_IFIFO : S_IFCHR;
    steps.push_back(DeviceStep(d.path(), type, static_cast<unsigned>(d.major()),
                               static_cast<unsigned>(d.minor()),
                               d.has_file_mode() ? d.file_mode() : 0666, d.uid(), d.gid(), userns));
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "/dev/fd"},
                                                       {"/proc/self/fd/0", "/dev/stdin"},
                                                       {"/proc/self/fd/1", "/dev/stdout"},
                                                       {"/proc/self/fd/2", "/dev/stderr"},
                                                       {"pts/ptmx", "/dev/ptmx"}};
  for (const auto& [to, path] : links) {
    fs::Step s = StepOf(fs::StepKind::kLinkInRoot, path, "linux.devices");
    s.data = to;
    // /dev/ptmx is the container's own devpts's: a link to pts/ptmx (devpts(5)).
    s.replace = s.dest == "dev/ptmx";
    steps.push_back(std::move(s));
  }
}

}  // namespace

Result<RootfsPlan> PlanRootfs(const Spec& spec, const RootfsOptions& ro) {
  RootfsPlan plan;
  bool seal_dev = false;
  for (const Mount& m : spec.mounts()) {
    size_t at = plan.before_pivot.size();
    AddMount(plan.before_pivot, m, ro);
    fs::Step& made = plan.before_pivot[at];
    // A read-only /dev of the container's own is filled first (its devices, /dev/pts, /dev/shm
    // mount points) and made read-only after, as runc does (runc #3248).
    if (made.kind == fs::StepKind::kMount && made.dest == Dest("/dev") &&
        ((made.flags & MS_RDONLY) || (made.attrs & MOUNT_ATTR_RDONLY))) {
      made.flags &= ~MS_RDONLY;
      made.attrs &= ~static_cast<uint64_t>(MOUNT_ATTR_RDONLY);
      seal_dev = true;
    }
  }
  AddDevices(plan.before_pivot, spec, ro.userns);
  if (seal_dev) plan.last.push_back(StepOf(fs::StepKind::kSealRoRecursive, "/dev", "mounts"));
  for (const std::string& p : spec.linux().masked_paths()) {
    plan.after_pivot.push_back(StepOf(fs::StepKind::kMask, p, "linux.maskedPaths"));
  }
  for (const std::string& p : spec.linux().readonly_paths()) {
    plan.after_pivot.push_back(StepOf(fs::StepKind::kReadOnly, p, "linux.readonlyPaths"));
  }
  if (spec.root().readonly()) {
    plan.after_pivot.push_back(StepOf(fs::StepKind::kSealRoRecursive, "/", "root.readonly"));
  }
  plan.propagation = BRIG_TRY(RootfsPropagation(spec.linux().rootfs_propagation()));
  if (!spec.linux().rootfs_propagation().empty()) {
    fs::Step s = StepOf(fs::StepKind::kPropagation, "/", "linux.rootfsPropagation");
    s.flags = plan.propagation;
    plan.after_pivot.push_back(std::move(s));
  }
  return plan;
}

bool HasBindSources(const RootfsPlan& plan) {
  return std::any_of(plan.before_pivot.begin(), plan.before_pivot.end(),
                     [](const fs::Step& s) { return s.kind == fs::StepKind::kBindSource; });
}

bool HasIdmappedSources(const RootfsPlan& plan) {
  return std::any_of(plan.before_pivot.begin(), plan.before_pivot.end(),
                     [](const fs::Step& s) { return s.idmap.has_value(); });
}

Status SendMountSources(int sock, const RootfsPlan& plan) {
  for (size_t i = 0; i < plan.before_pivot.size(); ++i) {
    const fs::Step& s = plan.before_pivot[i];
    if (s.kind != fs::StepKind::kBindSource) continue;
    sys::UniqueFd source;
    if (s.idmap) {
      source =
          BRIG_TRY(fs::IdmappedClone(s.source, s.recursive, *s.idmap, s.idmap_recursive, "mounts"));
    } else {
      source.Reset(open(s.source.c_str(), O_PATH | O_CLOEXEC));
    }
    auto index = static_cast<uint32_t>(i);
    struct iovec iov = {&index, sizeof index};
    BRIG_TRY(sys::SendWithFd(sock, &iov, 1, source.get(), "mount source"));
  }
  return {};
}

Status TakeMountSources(int sock, RootfsPlan& plan) {
  for (;;) {
    struct pollfd p = {sock, POLLIN, 0};
    int rc = poll(&p, 1, container::kSetupStepTimeoutMs);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return Fail("mount sources", "", "brig sent none in time");
    uint32_t index = 0;
    sys::UniqueFd fd;
    size_t n = BRIG_TRY_CTX(sys::RecvWithFd(sock, &index, sizeof index, 0, fd), "mount sources");
    if (n == 0) return {};
    if (n != sizeof index || index >= plan.before_pivot.size() ||
        plan.before_pivot[index].kind != fs::StepKind::kBindSource) {
      return Fail("mount sources", "", "malformed packet", ErrorKind::kInternal);
    }
    plan.before_pivot[index].tree = std::move(fd);
  }
}

Status PrepareRootfs(const std::string& rootfs, const RootfsPlan& plan) {
  // The host's mounts must not see the container's, nor its unmounts: rslave unless the
  // config asks rprivate (a shared "/" is applied after pivot_root, FinishRootfs).
  unsigned long first =
      (plan.propagation & MS_PRIVATE) ? MS_PRIVATE | MS_REC : MS_SLAVE | MS_REC;
  if (mount(nullptr, "/", nullptr, first, nullptr) < 0) return SysError("mount", "/ (propagation)");
  if (mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0) {
    return SysError("mount", "root.path " + rootfs);
  }
  sys::UniqueFd root =
      BRIG_TRY(sys::Openat2(AT_FDCWD, rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
  return fs::ApplySteps(root.get(), plan.before_pivot);
}

namespace {

// --no-pivot leaves the host's mounts under the container's root, where no path reaches
// them but the kernel still counts them: a full proc or sysfs among them let a process
// with CAP_SYS_ADMIN in a user namespace of its own mount a new, unmasked proc or sysfs
// (the kernel's mount_too_revealing looks at every mount of the namespace). As runc does,
// each one outside the root is unmounted first, or, where the kernel keeps it (locked by
// the user namespace), covered by an empty read-only tmpfs.
Status HideHostProcAndSys(const std::string& rootfs) {
  std::string text = BRIG_TRY(util::ReadFile("/proc/self/mountinfo"));
  for (std::string_view line : util::Split(text, '\n')) {
    std::vector<std::string_view> f = util::Split(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end()) continue;
    std::string_view type = *(dash + 1);
    std::string point = util::UnescapeMountinfo(f[4]);
    if ((type != "proc" && type != "sysfs") || f[3] != "/" || util::PathWithin(point, rootfs)) {
      continue;
    }
    if (umount2(point.c_str(), MNT_DETACH) == 0 || errno == ENOENT) continue;
    if (errno != EINVAL && errno != EPERM) return SysError("umount2", point);
    if (mount("tmpfs", point.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) < 0 &&
        errno != ENOENT) {
      return SysError("mount", "tmpfs over the host's " + point);
    }
  }
  return {};
}

}  // namespace

Status EnterRootfs(const std::string& rootfs, bool no_pivot) {
  if (!no_pivot) {
    sys::UniqueFd root(open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return SysError("open", rootfs);
    BRIG_TRY_CTX(fs::PivotInto(root.get()), rootfs);
    return {};
  }
  BRIG_TRY_CTX(HideHostProcAndSys(rootfs), "--no-pivot");
  if (chdir(rootfs.c_str()) < 0) return SysError("chdir", rootfs);
  if (mount(rootfs.c_str(), "/", nullptr, MS_MOVE, nullptr) < 0) {
    return SysError("mount", "move root " + rootfs);
  }
  if (chroot(".") < 0) return SysError("chroot", rootfs);
  if (chdir("/") < 0) return SysError("chdir", "/");
  return {};
}

namespace {

Status ApplyAfterPivot(const std::vector<fs::Step>& steps) {
  sys::UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysError("open", "/");
  return fs::ApplySteps(root.get(), steps);
}

}  // namespace

Status FinishRootfs(const RootfsPlan& plan) { return ApplyAfterPivot(plan.after_pivot); }

Status SealRootfs(const RootfsPlan& plan) { return ApplyAfterPivot(plan.last); }

}  // namespace brig::oci
