#include "fs/host_marks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "util/files.h"

namespace brig::fs {
namespace {

// A record value: "DEV:INO:PATH", the device and inode of the directory the mark was made
// in, then the mark's own path.
std::string Encode(const struct stat& dir, const std::string& path) {
  return std::to_string(dir.st_dev) + ":" + std::to_string(dir.st_ino) + ":" + path;
}

Status Note(state::Record& record, const char* kind, int dir, const std::string& path) {
  struct stat st;
  if (fstat(dir, &st) < 0) return SysError("stat", path);
  return record.Add(kind, Encode(st, path));
}

// Whether `st` is still the placeholder brig made: a FIFO of kPlaceholderMode with no other
// name. Anything else there is the workspace owner's, and stays.
bool IsPlaceholderStat(const struct stat& st) {
  return S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == kPlaceholderMode && st.st_nlink == 1;
}

bool IsPlaceholder(int dir, const std::string& name) {
  struct stat st;
  return fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && IsPlaceholderStat(st);
}

// Whether `name` in `dir` is a scratch directory brig made: root's, and no one else's to
// enter.
bool IsScratch(int dir, const std::string& name) {
  struct stat st;
  return fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
         st.st_uid == 0 && (st.st_mode & 077) == 0;
}

// Whether `name` in `dir` is a temporary file brig made: a regular file of brig's with no
// other name.
bool IsTemp(int dir, const std::string& name) {
  struct stat st;
  return fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
         st.st_uid == geteuid() && st.st_nlink == 1;
}

// Whether `name` in `dir` is what a record entry of `kind` says brig made there.
bool IsMark(const std::string& kind, int dir, const std::string& name) {
  if (kind == kPlaceholderKind) return IsPlaceholder(dir, name);
  if (kind == kTempKind) return IsTemp(dir, name);
  return IsScratch(dir, name);  // a scratch or a partial directory: made 0700, root's
}

Status RemoveOne(int dir, bool scratch, const std::string& name, const std::string& path) {
  if (scratch) {
    if (!IsScratch(dir, name)) return {};
    return util::RemoveTreeAt(dir, name, path);
  }
  if (!IsPlaceholder(dir, name)) return {};
  if (unlinkat(dir, name.c_str(), 0) < 0 && errno != ENOENT) return SysError("remove", path);
  return {};
}

}  // namespace

Status HostMarks::AddPlaceholder(state::Record& record, int dir, const std::string& name,
                                 const std::string& path, uid_t uid, gid_t gid) {
  sys::UniqueFd held(fcntl(dir, F_DUPFD_CLOEXEC, 3));
  if (!held) return SysError("dup", path);
  BRIG_TRY(Note(record, kPlaceholderKind, dir, path));
  if (mknodat(dir, name.c_str(), S_IFIFO | kPlaceholderMode, 0) < 0) {
    return SysError("create placeholder", path);
  }
  marks_.push_back({false, std::move(held), name, path});
  // The workspace's owner may rename entries of its directory: what is chowned is the FIFO
  // reached by this fd, checked to be root's new one, never a name looked up again.
  sys::UniqueFd f(openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!f || fstat(f.get(), &st) < 0) return SysError("create placeholder", path);
  if (!IsPlaceholderStat(st) || st.st_uid != geteuid()) {
    return Fail("create placeholder", path, "replaced while brig was making it");
  }
  if (fchownat(f.get(), "", uid, gid, AT_EMPTY_PATH) < 0) {
    return SysError("create placeholder", path);
  }
  return {};
}

Result<sys::UniqueFd> HostMarks::AddScratch(state::Record& record, int dir, const std::string& name,
                                            const std::string& path) {
  sys::UniqueFd held(fcntl(dir, F_DUPFD_CLOEXEC, 3));
  if (!held) return SysError("dup", path);
  BRIG_TRY(Note(record, kScratchKind, dir, path));
  if (mkdirat(dir, name.c_str(), 0700) < 0) return SysError("mkdir", path);
  marks_.push_back({true, std::move(held), name, path});
  sys::UniqueFd made(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!made) return SysError("open", path);
  return made;
}

Status HostMarks::Remove() {
  Status first;
  while (!marks_.empty()) {
    Mark& m = marks_.back();
    if (auto s = RemoveOne(m.dir.get(), m.scratch, m.name, m.path); !s && first) first = s;
    marks_.pop_back();
  }
  return first;
}

Status NoteOutputTemp(state::Record& record, const char* kind, const std::string& path) {
  size_t slash = path.rfind('/');
  std::string parent = slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  sys::UniqueFd dir(open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysError("open", parent);
  // brig gc may run elsewhere: the record names the directory by its absolute path.
  std::optional<std::string> real = util::RealPath(parent);
  if (!real) return SysError("open", parent);
  return Note(record, kind, dir.get(), *real + (*real == "/" ? "" : "/") + name);
}

bool IsMarkKind(const std::string& kind) {
  return kind == kPlaceholderKind || kind == kScratchKind || kind == kTempKind ||
         kind == kPartialKind;
}

Result<bool> RemoveStaleMark(const std::string& kind, const std::string& value) {
  bool tree = kind == kScratchKind || kind == kPartialKind;
  size_t a = value.find(':'), b = a == std::string::npos ? a : value.find(':', a + 1);
  if (b == std::string::npos || value.size() <= b + 2 || value[b + 1] != '/') {
    return Fail("brig gc", value, "not a " + kind + " entry");
  }
  std::string path = value.substr(b + 1);
  size_t slash = path.rfind('/');
  std::string parent = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  sys::UniqueFd dir(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st;
  if (!dir || fstat(dir.get(), &st) < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;  // gone with its directory
    return SysError("open", parent);
  }
  if (value.compare(0, b + 1, std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":") !=
      0) {
    return false;  // another directory now: not brig's to touch
  }
  if (!IsMark(kind, dir.get(), name)) return false;
  if (tree) BRIG_TRY(util::RemoveTreeAt(dir.get(), name, path));
  if (!tree && unlinkat(dir.get(), name.c_str(), 0) < 0 && errno != ENOENT) {
    return SysError("remove", path);
  }
  return true;
}

}  // namespace brig::fs
