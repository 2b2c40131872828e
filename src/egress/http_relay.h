// One proxied plain-HTTP connection (port 80) after its first request was admitted for a
// name: every further request is framed by the framing brokers use (http/framing.h) and
// must name the same host, so a body that hides a second request (CL+TE smuggling) or a
// kept-alive request for another host never reaches the upstream. Request bytes pass
// through brig's memory to be framed; responses are read only for where each ends (a
// body of known length goes by splice(2), uncopied), so that a refusal (400, then a
// close) follows the responses to the requests before it.
// Half-close is passed on as the splice relay (egress/relay.h) does. Level-triggered,
// single-threaded, nonblocking; the owner asks Wanted() after every Pump(). With an egress
// budget (budget.h) the bytes to the upstream are charged to it and never exceed it.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <memory>
#include <string>

#include "egress/budget.h"
#include "http/framing.h"
#include "sys/fd.h"

namespace brig::egress {

class HttpRelay {
 public:
  // The connection was admitted for `name` on `port` after its first request, whose head
  // `framer` framed into `to_up` (with the body bytes it framed after it); `unread` is what
  // the client sent that the framer has not read yet. `first_is_head`: it was a HEAD.
  HttpRelay(sys::UniqueFd client, sys::UniqueFd upstream,
            std::unique_ptr<http::RequestFramer> framer, std::string to_up, std::string unread,
            bool first_is_head, std::string name, uint16_t port, Budget* budget = nullptr);

  int client() const { return client_.get(); }
  int upstream() const { return upstream_.get(); }
  uint32_t Wanted(int fd) const;
  // Moves what it can. False once the relay is over: both directions closed, an error on
  // either side, or a refused request answered (then refused() is set, the upstream is
  // closed, and the client's socket is the owner's to linger on, with TakeClient).
  bool Pump();
  uint64_t bytes_up() const { return bytes_up_; }
  uint64_t bytes_down() const { return bytes_down_; }
  bool failed() const { return failed_; }
  bool refused() const { return refused_; }
  // The relay ended because request bytes were waiting and the budget was spent.
  bool over_budget() const { return over_budget_; }
  // Why a request was refused, or why the upstream's bytes ended the connection.
  const std::string& why() const { return why_; }
  sys::UniqueFd TakeClient() { return std::move(client_); }

 private:
  // Bytes on their way to one side, sent from `sent` on: a partial send moves nothing.
  struct Outbox {
    std::string data;
    size_t sent = 0;
    size_t size() const { return data.size() - sent; }
    bool empty() const { return size() == 0; }
  };
  void ReadClient();
  void Frame();
  bool Pipe();
  void CountSpliced(size_t n);
  void ReadUpstream();
  static bool Send(int fd, Outbox& box, uint64_t& bytes);
  // Sends what the budget allows of to_up_; false on an error or a spent budget.
  bool SendUp();
  bool Drained() const { return to_client_.empty() && in_pipe_ == 0; }
  bool Flush();
  void Refuse(std::string why);

  sys::UniqueFd client_, upstream_;
  std::unique_ptr<http::RequestFramer> framer_;
  http::ResponseFramer responses_;
  Outbox to_up_, to_client_;
  std::string unread_;
  // A response body's bytes on their way by splice, after to_client_'s.
  sys::UniqueFd pipe_r_, pipe_w_;
  size_t pipe_capacity_ = 0, in_pipe_ = 0;
  std::string name_;
  uint16_t port_;
  bool client_eof_ = false, up_eof_ = false, up_shut_ = false, client_shut_ = false;
  bool failed_ = false;
  // A request was refused: its 400 (refusal_) goes to the client once the responses to
  // the requests before it are through (refused_), and the relay is over.
  bool refusing_ = false, refused_ = false;
  std::string refusal_;
  std::string why_;
  uint64_t bytes_up_ = 0, bytes_down_ = 0;
  Budget* budget_;
  bool over_budget_ = false;
};

}  // namespace brig::egress
