// Whole-file helpers for the parent and brig init (both single-threaded).
#include "util/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "sys/fd.h"

namespace brig::util {

Result<std::string> ReadFd(int fd, off_t offset) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("read");
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return out;
}

Result<std::string> ReadStream(int fd, const std::string& name, size_t max_bytes) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("read", name);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return BadInput("read", name, "more than " + std::to_string(max_bytes) + " bytes");
    }
  }
}

Result<std::string> ReadFile(const std::string& path) {
  sys::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  auto r = ReadFd(fd.get(), 0);
  if (!r) return SysError("read", path);
  return r;
}

Result<std::string> ReadUserFile(const std::string& path, size_t max_bytes, FinalLink link) {
  int nofollow = link == FinalLink::kRefuse ? O_NOFOLLOW : 0;
  sys::UniqueFd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | nofollow));
  if (!fd && errno == ELOOP && nofollow) {
    return BadInput("open", path, "a symlink, which brig does not follow to a file it is handed");
  }
  if (!fd) return SysError("open", path).WithKind(ErrorKind::kBadInput);
  struct stat st;
  if (fstat(fd.get(), &st) < 0) return SysError("stat", path);
  if (!S_ISREG(st.st_mode)) return BadInput("open", path, "not a regular file");
  std::string out;
  char buf[65536];
  for (;;) {
    size_t want = std::min(sizeof buf, max_bytes + 1 - out.size());
    ssize_t n = read(fd.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("read", path);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return BadInput("read", path, "larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
}

std::optional<std::string> RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (!real) return std::nullopt;
  std::string out = real;
  free(real);
  return out;
}

Status MakeDirs(const std::string& dir) {
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    std::string part = dir.substr(0, slash);
    if (mkdir(part.c_str(), 0700) < 0 && errno != EEXIST) return SysError("mkdir", part);
  }
  return {};
}

Status WriteFile(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return SysError("open", path);
  ssize_t n = write(fd, data.data(), data.size());
  int e = errno;
  close(fd);
  errno = e;
  if (n != static_cast<ssize_t>(data.size())) return SysError("write", path + " <- " + data);
  return {};
}

namespace {

// Writes `data` to the new file `fd` (`tmp` names it) with `mode`, and syncs it.
Status FillTemp(int fd, const std::string& tmp, const std::string& data, mode_t mode,
                bool flush = true) {
  if (fchmod(fd, mode) < 0) return SysError("chmod", tmp);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("write", tmp);
    off += static_cast<size_t>(n);
  }
  if (flush && fsync(fd) < 0) return SysError("fsync", tmp);
  return {};
}

// Renames `tmp` over `path`; on any failure removes `tmp`. `prior` is the outcome so far.
Status RenameOrDrop(Status prior, const std::string& tmp, const std::string& path) {
  if (prior && rename(tmp.c_str(), path.c_str()) < 0) prior = SysError("write", path);
  if (!prior) unlink(tmp.c_str());
  return prior;
}

// What is at a user's output path may be replaced only if it is a regular file (or nothing).
Status CheckReplaceable(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) < 0) return errno == ENOENT ? Status() : SysError("stat", path);
  if (S_ISREG(st.st_mode)) return {};
  return BadInput("write", path, "not a regular file, which brig does not replace");
}

}  // namespace

Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  sys::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return SysError("open", tmp);
  return RenameOrDrop(FillTemp(fd.get(), tmp, data, mode), tmp, path);
}

Status ReplaceFile(const std::string& path, const std::string& data, mode_t mode) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  sys::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return SysError("open", tmp);
  return RenameOrDrop(FillTemp(fd.get(), tmp, data, mode, false), tmp, path);
}

Status WriteUserFileAtomic(const std::string& path, const std::string& data,
                           const NoteTemp& note_temp, mode_t mode) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  if (note_temp) BRIG_TRY(note_temp(tmp));
  // O_EXCL: whatever is at the temp's name (a link, a FIFO, a device) is not opened.
  sys::UniqueFd fd(
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
  if (!fd) return SysError("open", tmp);
  Status s = FillTemp(fd.get(), tmp, data, mode);
  if (s) s = CheckReplaceable(path);
  return RenameOrDrop(std::move(s), tmp, path);
}

Status RemoveTreeAt(int dirfd, const std::string& name, const std::string& path) {
  if (unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return {};
  if (errno != EISDIR) return SysError("remove", path);
  sys::UniqueFd dir(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return SysError("open", path);
  // Names first, then the directory stream is closed: one fd a level while descending.
  std::vector<std::string> names;
  {
    DIR* d = fdopendir(fcntl(dir.get(), F_DUPFD_CLOEXEC, 3));
    if (!d) return SysError("opendir", path);
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    closedir(d);
  }
  for (const auto& n : names) BRIG_TRY(RemoveTreeAt(dir.get(), n, path + "/" + n));
  if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT) {
    return SysError("remove", path);
  }
  return {};
}

std::vector<std::string> ListDir(int dirfd) {
  std::vector<std::string> out;
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(std::move(n));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status ChownTreeAt(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                   const std::string& path) {
  sys::UniqueFd dir(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir) {
    for (const auto& n : ListDir(dir.get())) {
      BRIG_TRY(ChownTreeAt(dir.get(), n, uid, gid, path + "/" + n));
    }
  } else if (errno != ENOTDIR && errno != ELOOP) {
    return SysError("open", path);
  }
  if (fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
    return SysError("chown", path);
  }
  return {};
}

bool PathWithin(const std::string& path, const std::string& dir) {
  if (dir == "/" || path == dir) return true;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

}  // namespace brig::util
