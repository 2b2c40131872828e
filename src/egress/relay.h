// One proxied connection's bytes: client to upstream and back, through a pipe each way
// with splice(2), so the data never enters brig's memory. Half-close is passed on (a
// client's FIN becomes a shutdown of the upstream's write side, and the other way
// round); an error on either side ends both. Level-triggered: after every event the
// owner asks which events each socket now needs. Single-threaded, nonblocking. splice(2)
// has no MSG_NOSIGNAL, so the owner must ignore SIGPIPE. With an egress budget (budget.h)
// the bytes to the upstream are charged to it and never exceed it.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <string>

#include "brig/result.h"
#include "egress/budget.h"
#include "sys/fd.h"

namespace brig::egress {

class Relay {
 public:
  // `client` and `upstream` are connected, nonblocking sockets. `prefix` is what was
  // already read from the client (a ClientHello, a request head): it goes upstream first.
  // `budget` (null: none) is charged for what goes upstream, under `name`.
  static Result<Relay> Start(sys::UniqueFd client, sys::UniqueFd upstream, std::string prefix,
                             Budget* budget = nullptr, std::string name = {});

  int client() const { return client_.get(); }
  int upstream() const { return upstream_.get(); }
  // The epoll events `fd` (client() or upstream()) needs now; 0 when none.
  uint32_t Wanted(int fd) const;
  // Moves what it can after an event on either socket. False once the relay is over:
  // both directions closed, or an error on either side.
  bool Pump();
  uint64_t bytes_up() const { return up_.bytes; }    // client to upstream
  uint64_t bytes_down() const { return down_.bytes; }  // upstream to client
  bool failed() const { return failed_; }
  // The relay ended because bytes were waiting to go upstream and the budget was spent.
  bool over_budget() const { return over_budget_; }

 private:
  struct Direction {
    sys::UniqueFd pipe_r, pipe_w;
    size_t capacity = 0;  // of the pipe
    size_t in_pipe = 0;
    bool eof = false;       // the source said FIN
    bool shut = false;      // passed on to the destination
    uint64_t bytes = 0;
    std::string pending;    // plain bytes to write before splicing (the prefix)
  };
  // One step of `d` from `src` to `dst`; false on an error or a spent budget.
  bool Move(Direction& d, int src, int dst);
  // How many of `n` bytes `d` may write now; 0 sets over_budget_.
  size_t Quota(const Direction& d, size_t n);
  void Charge(Direction& d, size_t n);
  sys::UniqueFd client_, upstream_;
  Direction up_, down_;
  bool failed_ = false;
  bool over_budget_ = false;
  Budget* budget_ = nullptr;
  std::string name_;
};

}  // namespace brig::egress
