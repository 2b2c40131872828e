#include "util/slots.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace brig::util {

namespace {

// Locks `fd`, opened at `path`, as LockHeld says.
Result<sys::UniqueFd> Lock(sys::UniqueFd fd, const std::string& path) {
  if (!fd) return SysError("open", path);
  if (flock(fd.get(), LOCK_EX | LOCK_NB) < 0) return SysError("flock", path);
  struct stat a, b;
  if (fstat(fd.get(), &a) < 0) return SysError("fstat", path);
  if (stat(path.c_str(), &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
    errno = EWOULDBLOCK;
    return SysError("flock", path);
  }
  return fd;
}

}  // namespace

Result<sys::UniqueFd> LockHeld(const std::string& path, bool create) {
  return Lock(sys::UniqueFd(open(path.c_str(),
                                 O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600)),
              path);
}

Result<std::optional<Slot>> TakeSlot(const std::string& dir, uint32_t first, uint32_t count,
                                     Left left) {
  uint32_t start = 0;
  if (getrandom(&start, sizeof start, 0) != sizeof start) start = static_cast<uint32_t>(getpid());
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t n = first + (start + i) % count;
    std::string path = dir + "/" + std::to_string(n);
    int excl = left == Left::kSkip ? O_EXCL : 0;
    auto fd = Lock(
        sys::UniqueFd(open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT | excl, 0600)),
        path);
    if (fd) return std::optional<Slot>(Slot{n, std::move(path), std::move(*fd)});
    // Held, unlinked between our open and flock (LockHeld), or left (kSkip): another slot.
    int err = fd.error().err;
    if (err != EWOULDBLOCK && err != EEXIST) return std::move(fd).error();
  }
  return std::optional<Slot>();
}

Result<bool> DropUnheld(const std::string& dir, std::vector<std::string>* removed,
                        const std::function<bool(const std::string&)>& in_use) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] != '.') names.push_back(de->d_name);
    }
    closedir(d);
  }
  bool all = true;
  for (const auto& name : names) {
    std::string path = dir + "/" + name;
    auto held = LockHeld(path, false);
    if (!held) {
      if (held.error().err == EWOULDBLOCK) {
        all = false;
        continue;
      }
      if (held.error().err == ENOENT) continue;
      return std::move(held).error();
    }
    if (in_use && in_use(name)) {
      all = false;
      continue;
    }
    if (unlink(path.c_str()) < 0 && errno != ENOENT) return SysError("unlink", path);
    if (removed) removed->push_back(path);
  }
  return all;
}

}  // namespace brig::util
