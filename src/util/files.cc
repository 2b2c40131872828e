// Whole-file helpers for the parent and brig init (both single-threaded).
#include "util/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

Result<std::string> ReadFile(const std::string& path) {
  sys::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  auto r = ReadFd(fd.get(), 0);
  if (!r) return SysError("read", path);
  return r;
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

Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  sys::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return SysError("open", tmp);
  if (fchmod(fd.get(), mode) < 0) return SysError("chmod", tmp);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = SysError("write", tmp);
      unlink(tmp.c_str());
      return e;
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) < 0 || rename(tmp.c_str(), path.c_str()) < 0) {
    Error e = SysError("write", path);
    unlink(tmp.c_str());
    return e;
  }
  return {};
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

}  // namespace brig::util
