#include "egress/http_relay.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "egress/http.h"

namespace brig::egress {
namespace {

// What brig holds for one direction before it stops reading that direction's source, and
// the most one read takes: large, so that a download costs few system calls (splice(2)
// moves as much at a time on port 443).
constexpr size_t kMaxBuffered = 256 * 1024;
constexpr size_t kReadSize = 256 * 1024;

// One read buffer for every relay: the event loop is single-threaded, and what is read is
// copied on at once.
char* ReadBuffer() {
  static char buf[kReadSize];
  return buf;
}

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK; }

constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

}  // namespace

HttpRelay::HttpRelay(sys::UniqueFd client, sys::UniqueFd upstream,
                     std::unique_ptr<http::RequestFramer> framer, std::string to_up,
                     std::string unread, bool first_is_head, std::string name, uint16_t port,
                     Budget* budget)
    : client_(std::move(client)),
      upstream_(std::move(upstream)),
      framer_(std::move(framer)),
      to_up_{std::move(to_up)},
      unread_(std::move(unread)),
      name_(std::move(name)),
      port_(port),
      budget_(budget) {
  responses_.Expect(first_is_head);
}

void HttpRelay::Refuse(std::string why) {
  why_ = std::move(why);
  refusal_ = http::Refusal(400, "brig: malformed: " + why_);
  refusing_ = true;
}

// Frames what the client sent and has not been framed yet.
void HttpRelay::Frame() {
  std::string_view in = unread_;
  while (!in.empty() && !refusing_) {
    size_t before = to_up_.data.size();
    http::RequestFramer::Step s = framer_->Feed(in, to_up_.data);
    in.remove_prefix(s.consumed);
    if (framer_->refusal()) {
      Refuse(framer_->why());
      break;
    }
    if (s.head) {
      HostParse host = ParseHost(framer_->head().host);
      uint16_t port = host.value.port ? host.value.port : 80;
      if (host.status != PeekStatus::kOk || host.value.name != name_ || port != port_) {
        to_up_.data.resize(before);  // its head never goes
        Refuse("a request for " + http::Printable(framer_->head().host) +
               " on a connection admitted for " + name_);
        break;
      }
      responses_.Expect(framer_->head().method == "HEAD");
    }
    if (s.consumed == 0 && !s.head && !s.done) break;
  }
  unread_.erase(0, unread_.size() - in.size());
}

void HttpRelay::ReadClient() {
  char* buf = ReadBuffer();
  for (;;) {
    Frame();
    if (client_eof_ || refusing_ || to_up_.size() >= kMaxBuffered) return;
    ssize_t n = recv(client_.get(), buf, kReadSize, 0);
    if (n < 0 && WouldBlock()) return;
    if (n <= 0) {
      client_eof_ = true;
      failed_ |= n < 0;
      return;
    }
    unread_.append(buf, static_cast<size_t>(n));
  }
}

bool HttpRelay::Pipe() {
  if (pipe_r_) return true;
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return false;  // then the bytes are read
  pipe_r_.Reset(p[0]);
  pipe_w_.Reset(p[1]);
  int size = fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kReadSize));
  if (size < 0) size = fcntl(p[1], F_GETPIPE_SZ);
  pipe_capacity_ = size > 0 ? static_cast<size_t>(size) : 4096;
  return true;
}

// Tells the response framer of `n` body bytes that went by splice.
void HttpRelay::CountSpliced(size_t n) {
  static const char kPlaceholder[64 * 1024] = {};
  while (n > 0) {
    size_t k = std::min(n, sizeof kPlaceholder);
    http::ResponseFramer::Step s = responses_.Feed(std::string_view(kPlaceholder, k));
    if (s.consumed == 0) return;
    n -= s.consumed;
  }
}

void HttpRelay::ReadUpstream() {
  char* buf = ReadBuffer();
  while (!up_eof_ && !failed_) {
    // A sized body goes by splice(2), as port 443's bytes do, all but its last byte: the
    // framer reads that one itself, and so sees the response end.
    uint64_t left = responses_.body_left();
    ssize_t n;
    if (left > 1 && Pipe()) {
      if (in_pipe_ >= pipe_capacity_) return;
      size_t want = static_cast<size_t>(std::min<uint64_t>(pipe_capacity_ - in_pipe_, left - 1));
      n = splice(upstream_.get(), nullptr, pipe_w_.get(), nullptr, want, kSpliceFlags);
      if (n > 0) {
        in_pipe_ += static_cast<size_t>(n);
        CountSpliced(static_cast<size_t>(n));
        continue;
      }
    } else {
      // What is read goes after what is in the pipe.
      if (in_pipe_ > 0 || to_client_.size() >= kMaxBuffered) return;
      n = recv(upstream_.get(), buf, kReadSize, 0);
    }
    if (n < 0 && WouldBlock()) return;
    if (n <= 0) {
      up_eof_ = true;
      (void)responses_.Eof();
      failed_ |= n < 0;
      return;
    }
    std::string_view in(buf, static_cast<size_t>(n));
    while (!in.empty()) {
      http::ResponseFramer::Step s = responses_.Feed(in);
      if (responses_.malformed()) {
        why_ = responses_.why();
        failed_ = true;
        return;
      }
      to_client_.data.append(in.data(), s.consumed);
      if (s.consumed == 0 && !s.done) break;
      in.remove_prefix(s.consumed);
    }
  }
}

bool HttpRelay::Send(int fd, Outbox& box, uint64_t& bytes) {
  while (fd >= 0 && !box.empty()) {
    ssize_t n = send(fd, box.data.data() + box.sent, box.size(), MSG_NOSIGNAL);
    if (n < 0 && WouldBlock()) return true;
    if (n <= 0) return false;
    bytes += static_cast<uint64_t>(n);
    box.sent += static_cast<size_t>(n);
  }
  if (box.empty()) {
    box.data.clear();
    box.sent = 0;
  }
  return true;
}

bool HttpRelay::SendUp() {
  while (upstream_ && !to_up_.empty()) {
    size_t len = Quota(budget_, to_up_.size());
    if (len == 0) {
      over_budget_ = true;
      return false;
    }
    ssize_t n = send(upstream_.get(), to_up_.data.data() + to_up_.sent, len, MSG_NOSIGNAL);
    if (n < 0 && WouldBlock()) return true;
    if (n <= 0) return false;
    bytes_up_ += static_cast<uint64_t>(n);
    to_up_.sent += static_cast<size_t>(n);
    if (budget_) budget_->Charge(name_, static_cast<size_t>(n));
  }
  if (to_up_.empty()) to_up_ = Outbox{};
  return true;
}

bool HttpRelay::Flush() {
  if (!SendUp() || !Send(client_.get(), to_client_, bytes_down_)) {
    return false;
  }
  while (to_client_.empty() && in_pipe_ > 0) {
    ssize_t n = splice(pipe_r_.get(), nullptr, client_.get(), nullptr, in_pipe_, kSpliceFlags);
    if (n < 0 && WouldBlock()) break;
    if (n <= 0) return false;
    in_pipe_ -= static_cast<size_t>(n);
    bytes_down_ += static_cast<uint64_t>(n);
  }
  return true;
}

bool HttpRelay::Pump() {
  if (failed_) return false;
  ReadClient();
  ReadUpstream();
  if (failed_ || !Flush()) {
    failed_ = true;
    return false;
  }
  // Nothing more goes up after the client's end or a refused request; the upstream's
  // end of input makes it answer what it has (or give up on a request cut short).
  bool ending = client_eof_ || refusing_;
  if (ending && to_up_.empty() && !up_shut_) {
    (void)shutdown(upstream_.get(), SHUT_WR);
    up_shut_ = true;
  }
  if (refusing_ && !refused_ && Drained() &&
      (responses_.outstanding() == 0 || up_eof_)) {
    // The requests before the refused one are answered (or never will be): now its 400.
    to_client_ = Outbox{std::move(refusal_)};
    refused_ = true;
    upstream_.Reset();
    up_eof_ = up_shut_ = true;
    if (!Flush()) {
      failed_ = true;
      return false;
    }
  }
  if (refused_) return !to_client_.empty();
  if (up_eof_ && Drained() && !client_shut_) {
    (void)shutdown(client_.get(), SHUT_WR);
    client_shut_ = true;
  }
  return !(up_shut_ && client_shut_);
}

uint32_t HttpRelay::Wanted(int fd) const {
  uint32_t ev = 0;
  if (fd == client_.get()) {
    if (!client_eof_ && !refusing_ && to_up_.size() < kMaxBuffered) ev |= EPOLLIN;
    if (!Drained()) ev |= EPOLLOUT;
  } else {
    bool splicing = responses_.body_left() > 1 && pipe_r_;
    bool room = splicing ? in_pipe_ < pipe_capacity_
                         : in_pipe_ == 0 && to_client_.size() < kMaxBuffered;
    if (!up_eof_ && room) ev |= EPOLLIN;
    if (!to_up_.empty()) ev |= EPOLLOUT;
  }
  return ev;
}

}  // namespace brig::egress
