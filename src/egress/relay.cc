#include "egress/relay.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace brig::egress {
namespace {

// Each pipe's capacity, and so the most one splice moves: four times the default, which in
// tools/bench-egress moves 20-25 % more bytes a second for the same CPU. A connection's
// pipes can hold 512 KiB at most, less than its sockets' own buffers may.
constexpr size_t kChunk = 1 << 18;

Status MakePipe(sys::UniqueFd& r, sys::UniqueFd& w, size_t& capacity) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return SysError("pipe2", "relay");
  r.Reset(p[0]);
  w.Reset(p[1]);
  // Best effort: above /proc/sys/fs/pipe-max-size an unprivileged brig keeps the default.
  int size = fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kChunk));
  if (size < 0) size = fcntl(p[1], F_GETPIPE_SZ);
  if (size <= 0) return SysError("fcntl F_GETPIPE_SZ", "relay");
  capacity = static_cast<size_t>(size);
  return {};
}

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK; }

}  // namespace

Result<Relay> Relay::Start(sys::UniqueFd client, sys::UniqueFd upstream, std::string prefix,
                          Budget* budget, std::string name) {
  Relay r;
  r.budget_ = budget;
  r.name_ = std::move(name);
  r.client_ = std::move(client);
  r.upstream_ = std::move(upstream);
  BRIG_TRY(MakePipe(r.up_.pipe_r, r.up_.pipe_w, r.up_.capacity));
  BRIG_TRY(MakePipe(r.down_.pipe_r, r.down_.pipe_w, r.down_.capacity));
  r.up_.pending = std::move(prefix);
  return r;
}

size_t Relay::Quota(const Direction& d, size_t n) {
  if (&d != &up_) return n;
  size_t q = egress::Quota(budget_, n);
  if (q == 0 && n > 0) over_budget_ = true;
  return q;
}

void Relay::Charge(Direction& d, size_t n) {
  d.bytes += n;
  if (&d == &up_ && budget_) budget_->Charge(name_, n);
}

bool Relay::Move(Direction& d, int src, int dst) {
  while (!d.pending.empty()) {
    size_t len = Quota(d, d.pending.size());
    if (len == 0) return false;
    ssize_t n = send(dst, d.pending.data(), len, MSG_NOSIGNAL);
    if (n < 0) return WouldBlock();
    Charge(d, static_cast<size_t>(n));
    d.pending.erase(0, static_cast<size_t>(n));
  }
  for (;;) {
    bool progress = false;
    if (!d.eof && d.in_pipe < d.capacity) {
      ssize_t n = splice(src, nullptr, d.pipe_w.get(), nullptr, d.capacity - d.in_pipe,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n == 0) {
        d.eof = true;
      } else if (n > 0) {
        d.in_pipe += static_cast<size_t>(n);
        progress = true;
      } else if (!WouldBlock()) {
        return false;
      }
    }
    if (d.in_pipe > 0) {
      size_t len = Quota(d, d.in_pipe);
      if (len == 0) return false;
      ssize_t n = splice(d.pipe_r.get(), nullptr, dst, nullptr, len,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d.in_pipe -= static_cast<size_t>(n);
        Charge(d, static_cast<size_t>(n));
        progress = true;
      } else if (n < 0 && !WouldBlock()) {
        return false;
      }
    }
    if (d.eof && d.in_pipe == 0 && !d.shut) {
      (void)shutdown(dst, SHUT_WR);
      d.shut = true;
    }
    if (!progress) return true;
  }
}

bool Relay::Pump() {
  if (failed_) return false;
  if (!Move(up_, client_.get(), upstream_.get()) ||
      !Move(down_, upstream_.get(), client_.get())) {
    failed_ = true;
    return false;
  }
  return !(up_.shut && down_.shut);
}

uint32_t Relay::Wanted(int fd) const {
  bool is_client = fd == client_.get();
  // As a source: readable while its direction has room; as a destination: writable
  // while something waits for it.
  const Direction& out = is_client ? up_ : down_;
  const Direction& in = is_client ? down_ : up_;
  uint32_t ev = 0;
  if (!out.eof && out.in_pipe < out.capacity) ev |= EPOLLIN;
  if (in.in_pipe > 0 || !in.pending.empty()) ev |= EPOLLOUT;
  return ev;
}

}  // namespace brig::egress
