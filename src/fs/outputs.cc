// Checks of the user's output paths (outputs.h). Nothing here creates anything.
#include "fs/outputs.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>

#include "util/files.h"

namespace brig::fs {
namespace {

// File systems of the kernel's own objects: root may pass access(2) there, but a file brig
// writes is refused or means something else (/proc, /sys, cgroups).
bool KernelFs(const struct statfs& s) {
  switch (static_cast<unsigned long>(s.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
    case 0x62656570:  // configfs
      return true;
    default:
      return false;
  }
}

Result<std::string> RealDir(const std::string& dir, const char* flag, const std::string& path) {
  std::optional<std::string> real = util::RealPath(dir);
  if (!real) return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  return std::move(*real);
}

// `dir` (real) exists, is a directory brig can make files in, and is not the workspace's.
Status CheckDir(const std::string& dir, const char* flag, const std::string& path,
                const std::string& workspace, const char* inside_why) {
  struct stat st;
  if (stat(dir.c_str(), &st) < 0) return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  if (!S_ISDIR(st.st_mode)) return BadInput(flag, path, "not a directory");
  if (!workspace.empty() && util::PathWithin(dir, workspace)) {
    return BadInput(flag, path, inside_why);
  }
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) == 0 && KernelFs(fs)) {
    return BadInput(flag, path, "on a kernel file system (" + dir + "), which holds no files");
  }
  if (access(dir.c_str(), W_OK | X_OK) < 0) {
    return SysError(flag, dir).WithKind(ErrorKind::kBadInput);
  }
  return {};
}

constexpr char kForgeable[] =
    "inside the workspace, where the sandbox could forge or truncate it";

// A file output: its directory checked, and what is at its path a regular file or nothing.
Status CheckFile(const std::string& path, const char* flag, const std::string& workspace) {
  if (path.empty()) return {};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  BRIG_TRY(CheckDir(BRIG_TRY(RealDir(dir, flag, path)), flag, path, workspace, kForgeable));
  struct stat st;
  if (lstat(path.c_str(), &st) < 0) {
    if (errno == ENOENT) return {};
    return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  }
  if (!S_ISREG(st.st_mode)) {
    return BadInput(flag, path,
                    std::string("not a regular file (") +
                        (S_ISLNK(st.st_mode)    ? "a symlink"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISDIR(st.st_mode)  ? "a directory"
                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                      : "a socket") +
                        "), which brig does not write through or replace");
  }
  return {};
}

// --export-changes: absent, in a directory that is checked.
Status CheckExport(std::string& p, const std::string& workspace) {
  if (p.empty()) return {};
  const char* flag = "--export-changes";
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  struct stat st;
  if (lstat(p.c_str(), &st) == 0) return BadInput(flag, p, "already exists");
  size_t slash = p.rfind('/');
  std::string parent = slash == std::string::npos ? "." : p.substr(0, std::max<size_t>(slash, 1));
  std::string name = p.substr(slash == std::string::npos ? 0 : slash + 1);
  auto real = RealDir(parent, flag, p);
  if (!real) return std::move(real).error();
  p = (*real == "/" ? "" : *real) + "/" + name;
  return CheckDir(*real, flag, p, workspace, kForgeable);
}

// --copy-dir: an existing directory, checked.
Status CheckCopyDir(std::string& p, const std::string& workspace) {
  if (p.empty()) return {};
  p = BRIG_TRY(RealDir(p, "--copy-dir", p));
  return CheckDir(p, "--copy-dir", p, workspace,
                  "inside the workspace, whose copy cannot hold its own changes");
}

}  // namespace

Status CheckOutputs(Outputs& o, const std::string& workspace) {
  BRIG_TRY(CheckFile(o.result, "--result", workspace));
  BRIG_TRY(CheckFile(o.manifest, "--manifest", workspace));
  BRIG_TRY(CheckFile(o.audit_log, "--audit-log", workspace));
  BRIG_TRY(CheckExport(o.export_changes, workspace));
  return CheckCopyDir(o.copy_dir, workspace);
}

}  // namespace brig::fs
