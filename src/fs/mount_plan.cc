// Parent side of the filesystem: which host pieces become the sandbox's root, and how.
#include "fs/mount_plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "fs/disk_image.h"
#include "fs/hidden.h"
#include "fs/idmap.h"
#include "fs/kernel_paths.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/parse.h"

namespace brig::fs {

namespace {

constexpr uint64_t kRoBind = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

// Host-derived root: only these top-level entries of the host's / (design.md, Filesystem).
const char* const kHostRootEntries[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
// And only these of the host's /etc: what dynamic linking, TLS, name lookup and Debian's
// alternatives need. Never shadow, sudoers, ssh keys, or tool configs that may hold tokens.
const char* const kHostEtcEntries[] = {
    "alternatives",   "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "os-release",
    "protocols",      "services",    "ssl/certs",  "ssl/openssl.cnf", "ca-certificates.conf",
    "mime.types"};
// Entries of a --rootfs directory that brig provides itself.
const char* const kReservedRootEntries[] = {"proc", "dev", "sys", "tmp", "workspace"};
// Device nodes bound from the host's /dev, checked to be the expected character devices.
struct DevNode {
  const char* name;
  unsigned major, minor;
};
const DevNode kDevNodes[] = {{"null", 1, 3},    {"zero", 1, 5}, {"full", 1, 7},
                             {"random", 1, 8},  {"urandom", 1, 9}, {"tty", 5, 0}};

Step Make(StepKind kind, std::string dest) {
  Step s;
  s.kind = kind;
  s.dest = std::move(dest);
  return s;
}

// A new file system of brig run's own (/tmp, /dev, /dev/pts, /dev/shm, /proc), made as an
// OCI container's are (kMount): `type` with `options`, its mount(2) `flags` the mount's.
Step NewFsStep(std::string dest, const std::string& type, std::string options,
               unsigned long flags) {
  Step s = Make(StepKind::kMount, std::move(dest));
  s.type = s.source = type;
  s.data = std::move(options);
  s.flags = flags;
  return s;
}

// "size=N,mode=M" of a tmpfs.
std::string TmpfsOptions(uint64_t size, mode_t mode) {
  char m[16];
  snprintf(m, sizeof m, "%o", mode);
  return "size=" + std::to_string(size) + ",mode=" + m;
}

// Clones the host tree at dirfd/name (recursively) into `s`, its source `host_path`, and
// sets attrs on the whole clone.
Status CloneTree(Step& s, int dirfd, const std::string& name, uint64_t set, uint64_t clr,
                 const std::string& host_path) {
  unsigned flags = OPEN_TREE_CLONE | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW;
  if (name.empty()) flags |= AT_EMPTY_PATH;
  auto tree = sys::OpenTree(dirfd, name, flags);
  if (!tree) {
    Error e = std::move(tree).error();
    e.subject = host_path;
    return e;
  }
  BRIG_TRY(sys::MountSetattr(tree->get(), "", AT_EMPTY_PATH | AT_RECURSIVE, set, clr, host_path));
  s.tree = std::move(*tree);
  s.attrs = set;
  s.cleared = clr;
  s.source = host_path;
  return {};
}

// Replicates one host entry (dirfd/rel) at dest: a symlink as a symlink, a directory or a
// regular file as a read-only bind. Other types and missing entries are skipped.
Status AddHostEntry(MountPlan& plan, int dirfd, const std::string& rel, const std::string& dest,
                    const std::string& host_path) {
  struct stat st;
  if (fstatat(dirfd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return {};
    return SysError("stat", host_path);
  }
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(dirfd, rel.c_str(), target, sizeof target - 1);
    if (n < 0) return SysError("readlink", host_path);
    Step s = Make(StepKind::kSymlink, dest);
    s.data.assign(target, static_cast<size_t>(n));
    plan.steps.push_back(std::move(s));
  } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
    Step s = Make(StepKind::kBind, dest);
    s.is_dir = S_ISDIR(st.st_mode);
    BRIG_TRY(CloneTree(s, dirfd, rel, kRoBind, 0, host_path));
    plan.steps.push_back(std::move(s));
  }
  return {};
}

std::string Passwd() {
  return "root:x:0:0:root:/root:/usr/sbin/nologin\n"
         "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

Status AddHostRoot(MountPlan& plan, const Spec& spec) {
  sys::UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysError("open", "/");
  for (const char* e : kHostRootEntries) {
    BRIG_TRY(AddHostEntry(plan, root.get(), e, e, std::string("/") + e));
  }
  // A synthesised /etc: our own identity files, then a few read-only host entries.
  plan.steps.push_back(Make(StepKind::kDir, "etc"));
  plan.steps.push_back(Make(StepKind::kDir, "etc/ssl"));
  auto file = [&](const char* dest, std::string data) {
    Step s = Make(StepKind::kFile, dest);
    s.data = std::move(data);
    plan.steps.push_back(std::move(s));
  };
  file("etc/passwd", Passwd());
  file("etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n");
  file("etc/hostname", "sandbox\n");
  file("etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                    "127.0.1.1\tsandbox\n");
  file("etc/resolv.conf", !spec.resolver.empty()
                              ? "# brig's resolver: only the names this sandbox may reach\n"
                                "nameserver " + spec.resolver + "\n"
                              : "# brig: no network interface, so no resolver\n");
  file("etc/nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                            "networks: files\nprotocols: files\nservices: files\n");
  sys::UniqueFd etc(open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!etc) return SysError("open", "/etc");
  for (const char* e : kHostEtcEntries) {
    BRIG_TRY(AddHostEntry(plan, etc.get(), e, std::string("etc/") + e, std::string("/etc/") + e));
  }
  return {};
}


// A --rootfs directory, with --layer directories stacked on it: each top-level entry comes
// from the topmost layer that has it; a directory that more than one layer has is an
// overlay of theirs, read-only (overlayfs merges below the top level, whiteouts and
// opaque directories included). Entries brig provides itself are left out.
Status AddRootfs(MountPlan& plan, const std::string& rootfs, const std::vector<std::string>& layers) {
  std::vector<std::string> paths(layers.rbegin(), layers.rend());  // topmost first
  paths.push_back(rootfs);
  std::vector<sys::UniqueFd> dirs;
  std::vector<std::string> names;
  for (const auto& p : paths) {
    sys::UniqueFd dir(open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return SysError("open", p).WithKind(ErrorKind::kBadInput);
    DIR* d = fdopendir(fcntl(dir.get(), F_DUPFD_CLOEXEC, 3));
    if (!d) return SysError("opendir", p);
    while (struct dirent* de = readdir(d)) {
      std::string n = de->d_name;
      if (n == "." || n == ".." ||
          std::any_of(std::begin(kReservedRootEntries), std::end(kReservedRootEntries),
                      [&](const char* r) { return n == r; })) {
        continue;
      }
      names.push_back(n);
    }
    closedir(d);
    dirs.push_back(std::move(dir));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const auto& n : names) {
    // The layers that make up this entry: from the topmost that has it, down through
    // directories, to the first that is not one.
    std::vector<size_t> stack;
    for (size_t i = 0; i < dirs.size(); ++i) {
      struct stat st;
      if (fstatat(dirs[i].get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
      bool whiteout = S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
      if (whiteout && stack.empty()) break;  // deleted by a layer
      if (whiteout || (!stack.empty() && !S_ISDIR(st.st_mode))) break;
      stack.push_back(i);
      if (!S_ISDIR(st.st_mode)) break;
    }
    if (stack.empty()) continue;
    if (stack.size() == 1) {
      BRIG_TRY(AddHostEntry(plan, dirs[stack[0]].get(), n, n, paths[stack[0]] + "/" + n));
      continue;
    }
    std::vector<sys::UniqueFd> held;
    std::string lower;
    Step s = Make(StepKind::kBind, n);
    s.source = "overlay of";
    for (size_t i : stack) {
      s.source += " " + paths[i] + "/" + n;
      held.emplace_back(openat(dirs[i].get(), n.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!held.back()) return SysError("open", paths[i] + "/" + n);
      lower += (lower.empty() ? "" : ":") + std::string("/proc/self/fd/") + std::to_string(held.back().get());
    }
    s.attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    s.tree = BRIG_TRY(NewFs("overlay", {{"lowerdir", lower}}, s.attrs, "/" + n));
    plan.steps.push_back(std::move(s));
  }
  return {};
}

// One step down a copy's layers: `name`, a directory of the source with the attributes
// `st` (its owner as the sandbox sees it: Seen), is made a directory of the upper layer too
// (if it is not one already), and `up` and `lower` then hold the two.
Status Descend(sys::UniqueFd& up, sys::UniqueFd& lower, const std::string& name,
               const struct stat& st, const std::string& path) {
  if (mkdirat(up.get(), name.c_str(), st.st_mode & 07777) == 0) {
    if (fchownat(up.get(), name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
      return SysError("chown", path);
    }
  } else if (errno != EEXIST) {
    return SysError("mkdir", path);
  }
  up.Reset(openat(up.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  lower.Reset(openat(lower.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!up || !lower) return SysError("open", path);
  return {};
}

// What protected path `path` of a copy comes to, made something the mount plan can hold
// read-only, and returned: the path itself if the source has it (a file, or a directory
// with only directories on the way), else the first component on the way that is no
// directory there. One the source lacks, or holds as a symlink that could lead anywhere,
// becomes brig's placeholder (host_marks.h: a FIFO nobody may open, which git never lists)
// in the copy's upper layer: so a workspace without .git gets an unwritable .git, and no
// .git/hooks can be made under it. So does one at or under
// a hidden path (`hidden`): what it holds stays out of sight, and nothing can be put
// there (HideInCopy leaves the file in place). The directories on the way are added to
// `pins`.
Result<std::string> PrepareProtected(int src, int upper, const struct stat& root, const IdMap& view,
                                     const std::string& path,
                                     const std::vector<std::string>& hidden,
                                     std::vector<std::string>& pins) {
  sys::UniqueFd lower(fcntl(src, F_DUPFD_CLOEXEC, 3)), up(fcntl(upper, F_DUPFD_CLOEXEC, 3));
  if (!lower || !up) return SysError("dup", path);
  std::vector<std::string> parts;
  for (std::string_view part : util::Split(path, '/')) parts.emplace_back(part);
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& name = parts[i];
    prefix += (prefix.empty() ? "" : "/") + name;
    struct stat st;
    bool is_hidden = std::find(hidden.begin(), hidden.end(), prefix) != hidden.end();
    if (is_hidden || fstatat(lower.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        S_ISLNK(st.st_mode)) {
      // The upper dir is brig's alone: the placeholder is chowned by name.
      if (mknodat(up.get(), name.c_str(), S_IFIFO | kPlaceholderMode, 0) == 0) {
        if (fchownat(up.get(), name.c_str(), root.st_uid, root.st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
          return SysError("protect", prefix);
        }
      } else if (errno != EEXIST) {
        return SysError("protect", prefix);
      }
      return prefix;
    }
    if (!S_ISDIR(st.st_mode) || i + 1 == parts.size()) return prefix;
    pins.push_back(prefix);
    BRIG_TRY_CTX(Descend(up, lower, name, Seen(st, view), prefix), "protect");
  }
  return prefix;
}

// Hides `path` from a copy: a whiteout in the upper layer, so the merged tree has nothing
// there (until the sandbox makes something of its own), unless a protected path's
// placeholder is there already. ScanWorkspace reached it through directories only.
Status HideInCopy(int src, int upper, const IdMap& view, const std::string& path) {
  sys::UniqueFd lower(fcntl(src, F_DUPFD_CLOEXEC, 3)), up(fcntl(upper, F_DUPFD_CLOEXEC, 3));
  if (!lower || !up) return SysError("dup", path);
  std::vector<std::string> parts;
  for (std::string_view part : util::Split(path, '/')) parts.emplace_back(part);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    struct stat st;
    if (fstatat(lower.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
      return Fail("hide", path, "the source changed while brig was preparing its copy");
    }
    BRIG_TRY_CTX(Descend(up, lower, parts[i], Seen(st, view), path), "hide");
  }
  if (mknodat(up.get(), parts.back().c_str(), S_IFCHR, makedev(0, 0)) < 0 && errno != EEXIST) {
    return SysError("hide", path);
  }
  return {};
}

// What protected path `path` of a read-write workspace comes to, held read-only: the path
// itself if the workspace has it (a file, or a directory with only directories on the
// way), else the first component on the way that is no directory there. A missing one gets
// brig's placeholder in the workspace for the sandbox's life (host_marks.h):
// the mount point that holds it, so nothing can be made there. A symlink is refused: no
// mount holds the name it stands at, and the sandbox could replace it. The directories on
// the way are added to `pins`.
Result<std::string> PrepareProtectedInPlace(MountPlan& plan, state::Record& record, int src,
                                            const struct stat& root, const std::string& workspace,
                                            const std::string& path, std::vector<std::string>& pins) {
  sys::UniqueFd dir(fcntl(src, F_DUPFD_CLOEXEC, 3));
  if (!dir) return SysError("dup", path);
  std::vector<std::string> parts;
  for (std::string_view part : util::Split(path, '/')) parts.emplace_back(part);
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& name = parts[i];
    prefix += (prefix.empty() ? "" : "/") + name;
    std::string host = workspace + "/" + prefix;
    struct stat st;
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) return SysError("protect", host);
      BRIG_TRY_CTX(plan.marks.AddPlaceholder(record, dir.get(), name, host, root.st_uid, root.st_gid),
                   "protect");
      return prefix;
    }
    if (S_ISLNK(st.st_mode)) return BadInput("protect", host, kSymlinkAtProtected);
    if (!S_ISDIR(st.st_mode) || i + 1 == parts.size()) return prefix;
    pins.push_back(prefix);
    dir.Reset(openat(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return SysError("protect", host);
  }
  return prefix;
}

// The steps that hold a writable workspace's protected paths: directories that lead to
// one are mount points (so they cannot be renamed or removed to put another in their
// place), parents first; then the paths themselves, read-only. `host` is a read-write
// workspace's path on the host (empty for a copy), for init to name a symlink by.
void AddProtectSteps(MountPlan& plan, std::vector<std::string>& pins, const std::string& host) {
  auto add = [&](StepKind kind, const std::string& p) {
    Step s = Make(kind, "workspace/" + p);
    if (!host.empty()) s.data = host + "/" + p;
    plan.steps.push_back(std::move(s));
  };
  std::sort(pins.begin(), pins.end());
  pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
  for (const auto& p : pins) add(StepKind::kPin, p);
  std::sort(plan.protected_paths.begin(), plan.protected_paths.end());
  plan.protected_paths.erase(std::unique(plan.protected_paths.begin(), plan.protected_paths.end()),
                             plan.protected_paths.end());
  for (const auto& p : plan.protected_paths) add(StepKind::kProtect, p);
}

// The copy workspace: an overlay whose lower layer is the source, opened here by brig, and
// whose upper and work dirs are in brig's scratch space: a tmpfs of --disk-size (else
// --tmp-size) that no path names, or a new directory under --copy-dir, which holds them
// itself or, with --disk-size, holds the disk image whose file system holds them
// (fs/disk_image.h). It is mounted by brig on the host, so the source is never written:
// the sandbox's changes, whiteouts for what it deleted included, land in the scratch space.
// Mounting costs the same for any number of files: nothing is copied until the sandbox
// writes it. overlayfs cannot be id-mapped itself, so where the sandbox user is not the
// source's owner its lower layer is (Linux 5.19 takes id-mapped layers), and the upper
// layer is in the sandbox user's ids: what it makes there is its own, until the export
// gives it to the workspace's owner (export.h).
Status AddCopyWorkspace(MountPlan& plan, const Spec& spec, state::Record& record, int src,
                        const struct stat& source, IdMapper& mapper) {
  const std::string what = "copy of " + spec.workspace;
  // Unless the sandbox user is the owner's uid (ChooseSandboxUser could not map).
  const bool map = source.st_uid != plan.sandbox_uid;
  const IdMap view{source.st_uid, source.st_gid, map ? plan.sandbox_uid : source.st_uid,
                   map ? plan.sandbox_gid : source.st_gid};
  const struct stat st = Seen(source, view);
  sys::UniqueFd mapped_lower;
  if (map) {
    mapped_lower = BRIG_TRY(sys::OpenTree(src, "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH));
    if (!BRIG_TRY(mapper.Map(mapped_lower.get(), view, spec.workspace))) {
      return Fail("id map", spec.workspace, "its file system cannot be id-mapped");
    }
  }
  std::string scratch_path;
  if (spec.copy_dir.empty() || plan.marks.plan_only()) {
    uint64_t size = spec.disk_size ? spec.disk_size : spec.tmp_size;
    plan.copy_scratch =
        BRIG_TRY(NewFs("tmpfs", {{"size", std::to_string(size)}, {"mode", "0700"}},
                       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, what));
  } else {
    scratch_path = spec.copy_dir + "/" + spec.scratch_name;
    sys::UniqueFd parent(open(spec.copy_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent) return SysError("open", spec.copy_dir);
    plan.copy_scratch =
        BRIG_TRY(plan.marks.AddScratch(record, parent.get(), spec.scratch_name, scratch_path));
    if (spec.disk_size) {
      // The image's file system is a detached mount, as the tmpfs is.
      plan.copy_scratch =
          BRIG_TRY(NewDiskImage(plan.copy_scratch.get(), scratch_path, spec.disk_size));
      scratch_path.clear();
    }
  }
  int scratch = plan.copy_scratch.get();
  // The merged root takes the upper dir's owner and mode: the source's.
  if (mkdirat(scratch, "upper", st.st_mode & 07777) < 0 || mkdirat(scratch, "work", 0700) < 0 ||
      (mapped_lower && mkdirat(scratch, "lower", 0700) < 0)) {
    return SysError("mkdir", what);
  }
  if (fchownat(scratch, "upper", st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
      fchmodat(scratch, "upper", st.st_mode & 07777, 0) < 0) {
    return SysError("chown", what);
  }
  std::vector<std::string> pins;
  sys::UniqueFd upper(openat(scratch, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!upper) return SysError("open", what);
  for (const auto& p : spec.protected_paths) {
    plan.protected_paths.push_back(
        BRIG_TRY(PrepareProtected(src, upper.get(), st, view, p, plan.hidden, pins)));
  }
  for (const auto& p : plan.hidden) BRIG_TRY(HideInCopy(src, upper.get(), view, p));
  // overlayfs before Linux 6.15 takes a layer only from a mount of the caller's namespace
  // (clone_private_mount): the workspace and a --copy-dir directory are opened again in
  // the private one (the same directories: checked), and the scratch tmpfs or disk image
  // is attached there, not above the workspace; an id-mapped lower layer is attached at
  // the scratch space's "lower".
  auto reopen = [](int was, const std::string& path, int flags) -> Result<sys::UniqueFd> {
    sys::UniqueFd fd(open(path.c_str(), flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat now, want;
    if (!fd || fstat(fd.get(), &now) < 0 || fstat(was, &want) < 0) return SysError("open", path);
    if (now.st_dev != want.st_dev || now.st_ino != want.st_ino) {
      return Fail("open", path, "changed while brig was preparing its copy");
    }
    return fd;
  };
  sys::UniqueFd merged;
  BRIG_TRY(InPrivateMountNs(scratch_path.empty() ? scratch : -1, spec.workspace, [&]() -> Status {
    sys::UniqueFd space;
    if (!scratch_path.empty()) space = BRIG_TRY(reopen(scratch, scratch_path, O_RDONLY));
    std::string fd = "/proc/self/fd/";
    std::string up = fd + std::to_string(space ? space.get() : scratch);
    sys::UniqueFd lower;
    std::string lowerdir = up + "/lower";
    if (mapped_lower) {
      BRIG_TRY(sys::MoveMount(mapped_lower.get(), "", space ? space.get() : scratch, "lower",
                              MOVE_MOUNT_F_EMPTY_PATH));
    } else {
      lower = BRIG_TRY(reopen(src, spec.workspace, O_PATH));
      lowerdir = fd + std::to_string(lower.get());
    }
    std::vector<std::pair<std::string, std::string>> opts = {
        {"lowerdir", lowerdir},
        {"upperdir", up + "/upper"},
        {"workdir", up + "/work"},
        // Nothing that makes the overlay read more from its layers than their own files.
        {"index", "off"},
        {"metacopy", "off"},
        // Without root, userxattr (OverlayXattr), with which the kernel takes only
        // nofollow: no redirect made, none followed.
        {"redirect_dir", util::Rootless() ? "nofollow" : "off"}};
    if (util::Rootless()) opts.emplace_back("userxattr", "");
    merged = BRIG_TRY(NewFs("overlay", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, what));
    return {};
  }));
  plan.copy_merged.Reset(fcntl(merged.get(), F_DUPFD_CLOEXEC, 3));
  if (!plan.copy_merged) return SysError("dup", what);
  Step s = Make(StepKind::kBind, "workspace");
  s.tree = std::move(merged);
  s.attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  s.source = "overlay of " + spec.workspace + " (copy: its changes in " +
             (spec.copy_dir.empty() ? std::string("a tmpfs") : spec.copy_dir) + ")";
  plan.steps.push_back(std::move(s));
  AddProtectSteps(plan, pins, "");
  return {};
}

// The files of a read-write workspace that are hard links to files outside it (or under
// a hidden path): each is held read-only, as a protected path is, so no write through the
// workspace reaches an inode outside it. The unix sockets and FIFOs of a bound workspace:
// each is covered as a hidden file is, so nothing inside reaches a host process that
// listens or reads there (a copy's overlay gives them inodes of its own, which no host
// process is bound to). A mount each, and mounts cost more the more a namespace has
// (measured: 1,000 add about 40 ms to a start, 4,000 half a second, 10,000 two seconds):
// past kMaxHeld of either the run is refused, naming the first and the count, before
// anything is made.
constexpr size_t kMaxHeld = 1000;

Status CheckHeld(const std::string& workspace, const std::vector<std::string>& held,
                 const std::string& what, const std::string& how,
                 const std::string& op = "workspace",
                 const std::string& remedy = "use a copy workspace (--workspace-mode copy)") {
  if (held.size() <= kMaxHeld) return {};
  return BadInput(op, workspace + "/" + held.front(),
                  std::to_string(held.size()) + " " + what + ", more than the " +
                      std::to_string(kMaxHeld) + " brig holds " + how + "; " + remedy);
}

// The bound (ro or rw) workspace's tree, id-mapped from its owner to the sandbox user.
// Where its file system cannot be (ChooseSandboxUser then made the sandbox user its owner's
// uid, unless its owner is root), it is seen as it is: as "other" for a group or owner the
// sandbox user is not, which must then be enough to enter it.
Status BindWorkspace(Step& s, int src, const Spec& spec, const struct stat& st,
                     const MountPlan& plan, IdMapper& mapper) {
  const bool ro = spec.workspace_mode == WorkspaceMode::kReadOnly;
  const uint64_t set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0);
  BRIG_TRY(CloneTree(s, src, "", set, ro ? 0 : MOUNT_ATTR_RDONLY, spec.workspace));
  if (st.st_uid == plan.sandbox_uid && st.st_gid == plan.sandbox_gid) return {};
  const IdMap map{st.st_uid, st.st_gid, plan.sandbox_uid, plan.sandbox_gid};
  if (BRIG_TRY(mapper.Map(s.tree.get(), map, spec.workspace))) return {};
  // Never a writable tree whose files the sandbox user would make as another uid.
  const bool owner = st.st_uid == plan.sandbox_uid;
  if ((ro || owner) && (st.st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH)) return {};
  return BadInput("workspace", spec.workspace,
                  "owned by uid " + std::to_string(st.st_uid) + ", not " +
                      (ro ? "readable" : "writable") + " by the sandbox user (host uid " +
                      std::to_string(plan.sandbox_uid) +
                      "), and its file system does not support id-mapped mounts; make it "
                      "readable by others, or chown it");
}

Status AddWorkspace(MountPlan& plan, const Spec& spec, state::Record& record, IdMapper& mapper) {
  if (spec.workspace.empty()) {
    plan.steps.push_back(Make(StepKind::kDir, "workspace"));
    return {};
  }
  sys::UniqueFd src(open(spec.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!src || fstat(src.get(), &st) < 0) return SysError("open", spec.workspace);
  // What to hide, in a read-write workspace which files are also files outside it, and in
  // a bound one which entries are sockets and FIFOs, is found before anything is mounted,
  // in the source itself. A copy breaks a hard link on the first write (overlayfs copies
  // the file up), a read-only workspace is not written.
  const bool rw = spec.workspace_mode == WorkspaceMode::kReadWrite;
  const bool bound = spec.workspace_mode != WorkspaceMode::kCopy;
  WorkspaceScan scan;
  if (!spec.hidden_paths.empty() || bound) {
    std::vector<HiddenPattern> patterns;
    for (const auto& h : spec.hidden_paths) patterns.push_back(BRIG_TRY(ParseHiddenPattern(h)));
    sys::UniqueFd dir(openat(src.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return SysError("open", spec.workspace);
    scan = BRIG_TRY_CTX(ScanWorkspace(dir.get(), patterns, rw), spec.workspace);
    plan.hidden = std::move(scan.hidden);
    BRIG_TRY(CheckHeld(spec.workspace, scan.linked_out,
                       "files of the read-write workspace are hard links to files outside it",
                       "read-only"));
    if (bound) {
      BRIG_TRY(CheckHeld(spec.workspace, scan.ipc, "unix sockets and FIFOs are in the workspace",
                         "out of the sandbox's reach"));
      plan.ipc = std::move(scan.ipc);
    }
  }
  if (spec.workspace_mode == WorkspaceMode::kCopy) {
    return AddCopyWorkspace(plan, spec, record, src.get(), st, mapper);
  }
  Step s = Make(StepKind::kBind, "workspace");
  BRIG_TRY(BindWorkspace(s, src.get(), spec, st, plan, mapper));
  plan.steps.push_back(std::move(s));
  std::vector<std::string> pins;
  for (const auto& p : spec.protected_paths) {
    plan.protected_paths.push_back(
        BRIG_TRY(PrepareProtectedInPlace(plan, record, src.get(), st, spec.workspace, p, pins)));
  }
  AddProtectSteps(plan, pins, spec.workspace);
  for (const auto& p : scan.linked_out) {
    Step held = Make(StepKind::kProtect, "workspace/" + p);
    held.data = spec.workspace + "/" + p;
    plan.steps.push_back(std::move(held));
  }
  return {};
}

Status AddDev(MountPlan& plan, const Spec& spec) {
  plan.steps.push_back(
      NewFsStep("dev", "tmpfs", TmpfsOptions(64 * 1024, 0755), MS_NOSUID | MS_NOEXEC));
  sys::UniqueFd host_dev(open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!host_dev) return SysError("open", "/dev");
  for (const auto& n : kDevNodes) {
    std::string host = std::string("/dev/") + n.name;
    struct stat st;
    if (fstatat(host_dev.get(), n.name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      return SysError("stat", host);
    }
    if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != n.major || minor(st.st_rdev) != n.minor) {
      return Fail("check device", host, "not the expected character device");
    }
    Step s = Make(StepKind::kBind, std::string("dev/") + n.name);
    s.is_dir = false;
    // Read-only: a device is still read and written through it, but its inode, the host's
    // own, is not the sandbox's to touch (utimensat needs only write access to a 0666 node).
    BRIG_TRY(CloneTree(s, host_dev.get(), n.name,
                       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY,
                       MOUNT_ATTR_NODEV, host));
    plan.steps.push_back(std::move(s));
  }
  plan.steps.push_back(
      NewFsStep("dev/pts", "devpts", "ptmxmode=666,mode=620", MS_NOSUID | MS_NOEXEC));
  Step ptmx = Make(StepKind::kSymlink, "dev/ptmx");
  ptmx.data = "pts/ptmx";
  plan.steps.push_back(std::move(ptmx));
  plan.steps.push_back(NewFsStep("dev/shm", "tmpfs", TmpfsOptions(spec.tmp_size, 01777),
                                 MS_NOSUID | MS_NODEV | MS_NOEXEC));
  const std::pair<const char*, const char*> links[] = {{"dev/fd", "/proc/self/fd"},
                                                       {"dev/stdin", "/proc/self/fd/0"},
                                                       {"dev/stdout", "/proc/self/fd/1"},
                                                       {"dev/stderr", "/proc/self/fd/2"}};
  for (const auto& [dest, target] : links) {
    Step s = Make(StepKind::kSymlink, dest);
    s.data = target;
    plan.steps.push_back(std::move(s));
  }
  plan.steps.push_back(Make(StepKind::kSealRoRecursive, "dev"));
  return {};
}

// A fresh /proc, with the kernel paths (fs/kernel_paths.h) masked or made read-only.
void AddProc(MountPlan& plan) {
  plan.steps.push_back(NewFsStep("proc", "proc", "", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  for (const auto& p : KernelPaths()) {
    if (p.rule == KernelPathRule::kAbsent) continue;
    StepKind kind = p.rule == KernelPathRule::kMasked ? StepKind::kMask : StepKind::kReadOnly;
    plan.steps.push_back(Make(kind, p.path + 1));
  }
}

// The directory `name` under `dirfd`, made 0700 and owned by uid:gid if it is missing; an
// existing one must be a directory (not a symlink) of that owner with none of the mode
// bits `foreign` (what others may do with it). The parent is root's alone, so nothing can
// swap it between the mkdir and the open.
Result<sys::UniqueFd> OwnDir(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                             mode_t foreign, const std::string& path) {
  if (mkdirat(dirfd, name.c_str(), 0700) == 0) {
    if (fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
      return SysError("chown", path);
    }
  } else if (errno != EEXIST) {
    return SysError("mkdir", path);
  }
  sys::UniqueFd fd(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && (errno == ELOOP || errno == ENOTDIR)) {
    return BadInput("cache", path, "not a directory (a symlink or a file is there); remove it");
  }
  struct stat st;
  if (!fd || fstat(fd.get(), &st) < 0) return SysError("open", path);
  if (st.st_uid != uid || (st.st_mode & foreign) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    // A cache is one owner's: another's is never shared, nor to be removed for this run.
    std::string name = path.substr(path.rfind('/') + 1);
    return BadInput("cache", path,
                    "owned by uid " + std::to_string(st.st_uid) + " with mode " + mode +
                        ", not uid " + std::to_string(uid) +
                        (uid ? " (this run's sandbox user on the host) with mode 0700; it is "
                               "another owner's cache, which brig never shares: give each "
                               "workspace owner a cache name of its own (a profile whose "
                               "mount is named " +
                                   name + "-" + std::to_string(uid) + ", say)"
                             : " (root) that no one else may write; remove it"));
  }
  return fd;
}

// A per-run mount's source is a host directory as a bound workspace is: a unix socket or
// FIFO a host process may use there is covered by the sandbox's /dev/null (connect(2) and
// open(2) of one ignore a read-only mount), and in a writable one a file that is a hard
// link to a file outside is held read-only, so nothing the sandbox writes leaves through
// it. A --ro-bind's hides the profile's hidden paths too, as the workspace does. Found in
// the source before anything is mounted, as for the workspace.
Status HoldInMount(MountPlan& plan, int src, const NamedMount& m, const std::string& path,
                   const Spec& spec) {
  sys::UniqueFd dir(openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysError("open", path);
  std::vector<HiddenPattern> patterns;
  if (m.ro_bind) {
    for (const auto& h : spec.hidden_paths) patterns.push_back(BRIG_TRY(ParseHiddenPattern(h)));
  }
  WorkspaceScan scan = BRIG_TRY_CTX(ScanWorkspace(dir.get(), patterns, m.writable), path);
  const std::string op = "mount '" + m.name + "'", remedy = "mount another directory";
  BRIG_TRY(CheckHeld(path, scan.ipc, "unix sockets and FIFOs are in the mount's source",
                     "out of the sandbox's reach", op, remedy));
  BRIG_TRY(CheckHeld(path, scan.linked_out,
                     "files of the writable mount's source are hard links to files outside it",
                     "read-only", op, remedy));
  const std::string at = m.target.substr(1) + "/";
  for (const auto& h : scan.hidden) plan.steps.push_back(Make(StepKind::kHide, at + h));
  for (const auto& p : scan.ipc) plan.steps.push_back(Make(StepKind::kHoldIpc, at + p));
  for (const auto& p : scan.linked_out) {
    Step held = Make(StepKind::kProtect, at + p);
    held.data = path + "/" + p;
    plan.steps.push_back(std::move(held));
  }
  return {};
}

// The profile's named mounts: a per-run directory, or a cache under util::CacheDir() (made on
// first use, for the sandbox user alone). Read-only ones as the read-only workspace,
// writable ones as the read-write one: nosuid, nodev.
Status AddNamedMounts(MountPlan& plan, const Spec& spec, IdMapper& mapper) {
  for (const NamedMount& m : spec.mounts) {
    sys::UniqueFd src;
    std::string path = m.source;
    if (m.cache) {
      std::string root = util::CacheDir();
      path = root + "/" + m.name;
      size_t slash = root.rfind('/');
      sys::UniqueFd parent(open(root.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!parent) return SysError("open", root.substr(0, slash));
      sys::UniqueFd caches =
          BRIG_TRY(OwnDir(parent.get(), root.substr(slash + 1), 0, 0, 022, root));
      src = BRIG_TRY(OwnDir(caches.get(), m.name, m.uid, m.gid, 077, path));
    } else {
      src.Reset(open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!src) return SysError("open", path).WithKind(ErrorKind::kBadInput);
    }
    uint64_t set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m.writable ? 0 : MOUNT_ATTR_RDONLY);
    Step s = Make(StepKind::kNamed, m.target.substr(1));
    BRIG_TRY(CloneTree(s, src.get(), "", set, m.writable ? MOUNT_ATTR_RDONLY : 0, path));
    // As the workspace: its owner's files are the sandbox user's (ChooseSandboxUser).
    if (m.uid != plan.sandbox_uid || m.gid != plan.sandbox_gid) {
      const IdMap map{m.uid, m.gid, plan.sandbox_uid, plan.sandbox_gid};
      if (!BRIG_TRY(mapper.Map(s.tree.get(), map, path))) {
        return Fail("id map", path, "its file system cannot be id-mapped");
      }
    }
    plan.steps.push_back(std::move(s));
    if (!m.cache) BRIG_TRY(HoldInMount(plan, src.get(), m, path, spec));
  }
  return {};
}

}  // namespace

Result<sys::UniqueFd> NewFs(const char* type,
                            const std::vector<std::pair<std::string, std::string>>& opts,
                            uint64_t attrs, const std::string& subject) {
  sys::UniqueFd fs = BRIG_TRY_CTX(sys::FsOpen(type), subject);
  for (const auto& [k, v] : opts) {
    BRIG_TRY_CTX(v.empty() ? sys::FsConfigFlag(fs.get(), k, subject)
                           : sys::FsConfigString(fs.get(), k, v),
                 subject);
  }
  BRIG_TRY_CTX(sys::FsConfigCreate(fs.get(), type), subject);
  return sys::FsMount(fs.get(), attrs, subject);
}

Status InPrivateMountNs(int detached, const std::string& avoid, const std::function<Status()>& fn) {
  sys::UniqueFd home(open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  sys::UniqueFd cwd(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!home || !cwd) return SysError("open", "brig's mount namespace");
  if (unshare(CLONE_NEWNS) < 0) return SysError("unshare", "a mount namespace of brig's own");
  Status made = [&]() -> Status {
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
      return SysError("make mounts private", "/");
    }
    if (detached >= 0) {
      const char* at = nullptr;
      for (const char* dir : {"/dev/shm", "/tmp", "/mnt", "/run"}) {
        std::string d = dir;
        struct stat ds;
        bool above = !avoid.empty() && (avoid == d || avoid.rfind(d + "/", 0) == 0);
        if (!above && stat(dir, &ds) == 0 && S_ISDIR(ds.st_mode)) {
          at = dir;
          break;
        }
      }
      if (!at) return Fail("attach", "a detached mount", "no directory to attach it at");
      BRIG_TRY(sys::MoveMount(detached, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH));
    }
    return fn();
  }();
  if (setns(home.get(), CLONE_NEWNS) < 0) return SysError("setns", "brig's mount namespace");
  if (fchdir(cwd.get()) < 0) return SysError("fchdir", "brig's working directory");
  return made;
}

Result<MountPlan> PrepareMountPlan(const Spec& spec, state::Record& record, bool plan_only) {
  MountPlan plan;
  if (plan_only) plan.marks.SetPlanOnly();
  IdMapper mapper;
  SandboxUser user = BRIG_TRY(ChooseSandboxUser(spec, mapper));
  plan.sandbox_uid = user.uid;
  plan.sandbox_gid = user.gid;
  if (spec.rootfs.empty()) {
    BRIG_TRY(AddHostRoot(plan, spec));
  } else {
    BRIG_TRY(AddRootfs(plan, spec.rootfs, spec.layers));
  }
  BRIG_TRY(AddWorkspace(plan, spec, record, mapper));
  plan.steps.push_back(
      NewFsStep("tmp", "tmpfs", TmpfsOptions(spec.tmp_size, 01777), MS_NOSUID | MS_NODEV));
  BRIG_TRY(AddDev(plan, spec));
  AddProc(plan);
  // In a bound workspace, hidden paths are covered (after /dev, whose null covers files).
  if (spec.workspace_mode != WorkspaceMode::kCopy) {
    for (const auto& h : plan.hidden) plan.steps.push_back(Make(StepKind::kHide, "workspace/" + h));
    for (const auto& p : plan.ipc) plan.steps.push_back(Make(StepKind::kHoldIpc, "workspace/" + p));
  }
  BRIG_TRY(AddNamedMounts(plan, spec, mapper));
  return plan;
}

std::string_view StepName(StepKind k) {
  switch (k) {
    case StepKind::kDir: return "dir";
    case StepKind::kSymlink: return "symlink";
    case StepKind::kFile: return "file";
    case StepKind::kBind: return "bind";
    case StepKind::kMask: return "mask";
    case StepKind::kReadOnly: return "read-only";
    case StepKind::kSealRoRecursive: return "seal read-only";
    case StepKind::kPin: return "pin";
    case StepKind::kProtect: return "protect";
    case StepKind::kHide: return "hide";
    case StepKind::kHoldIpc: return "hold ipc";
    case StepKind::kNamed: return "named mount";
    case StepKind::kBindSource: return "bind source";
    case StepKind::kMount: return "mount";
    case StepKind::kTmpfsCopyUp: return "tmpfs copy-up";
    case StepKind::kCgroup: return "cgroup";
    case StepKind::kCgroupGroups: return "cgroup groups";
    case StepKind::kDevice: return "device";
    case StepKind::kLinkInRoot: return "symlink in root";
    case StepKind::kPropagation: return "propagation";
  }
  return "unknown";
}

void MountPlan::AddFileBind(const std::string& path, sys::UniqueFd tree, std::string source) {
  std::vector<std::string_view> parts = util::Split(std::string_view(path).substr(1), '/');
  std::string dest;
  for (size_t p = 0; p + 1 < parts.size(); ++p) {
    dest += (dest.empty() ? "" : "/") + std::string(parts[p]);
    steps.push_back(Make(StepKind::kDir, dest));
  }
  Step bind = Make(StepKind::kBind, path.substr(1));
  bind.is_dir = false;
  bind.tree = std::move(tree);
  bind.source = std::move(source);
  steps.push_back(std::move(bind));
}

Status MountPlan::Finish() {
  copy_merged.Reset();
  copy_scratch.Reset();
  return marks.Remove();
}

}  // namespace brig::fs
