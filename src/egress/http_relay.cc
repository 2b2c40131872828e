#include "egress/http_relay.h"

#include <sys/socket.h>

#include <cerrno>
#include <tuple>

#include "egress/http.h"

namespace brig::egress {
namespace {

// What brig holds for one direction before it stops reading that direction's source.
constexpr size_t kMaxBuffered = 256 * 1024;

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK; }

}  // namespace

HttpRelay::HttpRelay(sys::UniqueFd client, sys::UniqueFd upstream,
                     std::unique_ptr<http::RequestFramer> framer, std::string to_up,
                     std::string unread, bool first_is_head, std::string name, uint16_t port)
    : client_(std::move(client)),
      upstream_(std::move(upstream)),
      framer_(std::move(framer)),
      to_up_(std::move(to_up)),
      unread_(std::move(unread)),
      name_(std::move(name)),
      port_(port) {
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
    size_t before = to_up_.size();
    http::RequestFramer::Step s = framer_->Feed(in, to_up_);
    in.remove_prefix(s.consumed);
    if (framer_->refusal()) {
      Refuse(framer_->why());
      break;
    }
    if (s.head) {
      HostParse host = ParseHost(framer_->head().host);
      uint16_t port = host.value.port ? host.value.port : 80;
      if (host.status != PeekStatus::kOk || host.value.name != name_ || port != port_) {
        to_up_.resize(before);  // its head never goes
        Refuse("a request for " + framer_->head().host + " on a connection admitted for " +
               name_);
        break;
      }
      responses_.Expect(framer_->head().method == "HEAD");
    }
    if (s.consumed == 0 && !s.head && !s.done) break;
  }
  unread_.erase(0, unread_.size() - in.size());
}

void HttpRelay::ReadClient() {
  char buf[16384];
  for (;;) {
    Frame();
    if (client_eof_ || refusing_ || to_up_.size() >= kMaxBuffered) return;
    ssize_t n = recv(client_.get(), buf, sizeof buf, 0);
    if (n < 0 && WouldBlock()) return;
    if (n <= 0) {
      client_eof_ = true;
      failed_ |= n < 0;
      return;
    }
    unread_.append(buf, static_cast<size_t>(n));
  }
}

void HttpRelay::ReadUpstream() {
  char buf[16384];
  while (!up_eof_ && !failed_ && to_client_.size() < kMaxBuffered) {
    ssize_t n = recv(upstream_.get(), buf, sizeof buf, 0);
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
      to_client_.append(in.data(), s.consumed);
      if (s.consumed == 0 && !s.done) break;
      in.remove_prefix(s.consumed);
    }
  }
}

bool HttpRelay::Flush() {
  for (auto [fd, out, bytes] : {std::tuple{upstream_.get(), &to_up_, &bytes_up_},
                                std::tuple{client_.get(), &to_client_, &bytes_down_}}) {
    while (fd >= 0 && !out->empty()) {
      ssize_t n = send(fd, out->data(), out->size(), MSG_NOSIGNAL);
      if (n < 0 && WouldBlock()) break;
      if (n <= 0) return false;
      *bytes += static_cast<uint64_t>(n);
      out->erase(0, static_cast<size_t>(n));
    }
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
  if (refusing_ && !refused_ && to_client_.empty() &&
      (responses_.outstanding() == 0 || up_eof_)) {
    // The requests before the refused one are answered (or never will be): now its 400.
    to_client_ = std::move(refusal_);
    refused_ = true;
    upstream_.Reset();
    if (!Flush()) {
      failed_ = true;
      return false;
    }
  }
  if (refused_) return !to_client_.empty();
  if (up_eof_ && to_client_.empty() && !client_shut_) {
    (void)shutdown(client_.get(), SHUT_WR);
    client_shut_ = true;
  }
  return !(up_shut_ && client_shut_);
}

uint32_t HttpRelay::Wanted(int fd) const {
  uint32_t ev = 0;
  if (fd == client_.get()) {
    if (!client_eof_ && !refusing_ && to_up_.size() < kMaxBuffered) ev |= EPOLLIN;
    if (!to_client_.empty()) ev |= EPOLLOUT;
  } else {
    if (!up_eof_ && to_client_.size() < kMaxBuffered) ev |= EPOLLIN;
    if (!to_up_.empty()) ev |= EPOLLOUT;
  }
  return ev;
}

}  // namespace brig::egress
