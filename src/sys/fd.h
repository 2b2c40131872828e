// Owned file descriptors (style.md 2.4). Every fd brig opens is born CLOEXEC and owned by
// exactly one of these; a raw int or a const& borrows.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace brig::sys {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) Reset(o.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Hands the fd over to the caller (systemd's TAKE_FD).
  [[nodiscard]] int Release() { return std::exchange(fd_, -1); }
  // Closes the current fd, preserving errno, and takes ownership of `fd`.
  void Reset(int fd = -1) {
    if (fd_ >= 0) {
      int saved = errno;
      ::close(fd_);
      errno = saved;
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace brig::sys
