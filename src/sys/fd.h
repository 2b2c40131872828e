// Owned file descriptors (style.md 2.4). Every fd brig opens is born CLOEXEC and owned by
// exactly one of these; a raw int or a const& borrows.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "brig/result.h"

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

// `fd` at `min` or above (a copy, CLOEXEC, the original closed), or as it is if it is already:
// for a descriptor a child inherits, which must not land on a number the child hands on.
inline Result<UniqueFd> MoveAbove(UniqueFd fd, int min) {
  if (fd.get() >= min) return fd;
  UniqueFd moved(fcntl(fd.get(), F_DUPFD_CLOEXEC, min));
  if (!moved) return SysError("fcntl", "F_DUPFD_CLOEXEC");
  return moved;
}

// Two connected descriptors, both CLOEXEC, one for each side of a fork or clone: each side
// takes its end and closes the other at once (style.md 2.4).
class FdPair {
 public:
  // An AF_UNIX socketpair of `type` (SOCK_SEQPACKET, SOCK_STREAM...).
  static Result<FdPair> SocketPair(int type, const std::string& subject) {
    int sv[2];
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0) return SysError("socketpair", subject);
    return FdPair(sv[0], sv[1]);
  }
  // A pipe the parent reads from (the child writes) or, with `parent_reads` false, writes to.
  static Result<FdPair> Pipe(bool parent_reads, const std::string& subject) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return SysError("pipe2", subject);
    return parent_reads ? FdPair(p[0], p[1]) : FdPair(p[1], p[0]);
  }
  UniqueFd TakeParentEnd() { return std::move(parent_); }
  UniqueFd TakeChildEnd() { return std::move(child_); }

 private:
  FdPair(int parent, int child) : parent_(parent), child_(child) {}
  UniqueFd parent_, child_;
};

}  // namespace brig::sys
