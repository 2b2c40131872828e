// What the parts of one egress service (service.h) share to run in the supervisor's loop:
// one epoll set, whose fd the supervisor waits on, and the tokens that say which part a
// ready descriptor belongs to. Service::Impl reads the set and hands each token on.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::egress {

using Clock = std::chrono::steady_clock;

// Tokens below kFirstId are the service's own sockets; a proxied connection's, a DNS TCP
// client's or an upstream TCP query's token is its id shifted left by two, or'ed with
// which of its sockets it is.
enum Token : uint64_t { kHttp = 1, kHttps, kDnsTcp, kDnsUdp, kTimer, kUpstreamUdp, kFirstId = 16 };
enum Side : uint64_t { kClient = 0, kUpstreamSide = 1, kDnsClient = 2, kUpstreamTcp = 3 };

class Loop {
 public:
  Status Open();
  int fd() const { return ep_.get(); }
  // Watches `fd` for input under `token`.
  Status Add(int fd, uint64_t token);
  // Changes what `fd` is watched for; `current` is what it is watched for now.
  void Interest(int fd, uint64_t token, uint32_t& current, uint32_t want);
  // A new id, unique within the service, for a connection, a client or a TCP query.
  uint64_t NewId() { return next_id_++; }

 private:
  sys::UniqueFd ep_;
  uint64_t next_id_ = kFirstId;
};

std::string Ip(uint32_t host_order);
sockaddr_in Sockaddr(uint32_t addr, uint16_t port);
uint32_t Millis(Clock::duration d);
uint32_t Micros(Clock::duration d);

}  // namespace brig::egress
