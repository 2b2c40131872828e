// The resolver the sandbox talks to (service.h, "Resolver"): its queries over UDP and TCP
// on the port 53 listeners brig's rules redirect to, each decided here: a name the posture
// allows is resolved upstream (upstream_client.h) and answered with the name's address in
// brig's pool (pool.h) if some address passes both floors; every other name gets NXDOMAIN,
// every type but A an empty answer, and queries beyond a rate are dropped. A query the
// egress budget cannot pay for is not sent upstream and gets REFUSED (upstream_client.h).
// Every query is one audit event.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "egress/dns.h"
#include "egress/host_floor.h"
#include "egress/loop.h"
#include "egress/policy.h"
#include "egress/pool.h"
#include "egress/traffic.h"
#include "egress/upstream_client.h"
#include "net/listeners.h"
#include "sys/fd.h"

namespace brig::egress {

class Resolver {
 public:
  // Everything given must outlive the resolver; `sandbox` is the one address served (0: any,
  // service.h).
  Resolver(const Policy& policy, const net::Listeners& listeners, uint32_t sandbox,
           NamePool& pool, HostFloor& host_floor, UpstreamClient& upstream, Loop& loop,
           Traffic& traffic);

  // kDnsUdp is readable.
  void ReadUdp();
  // kDnsTcp is readable.
  void AcceptClients();
  // The TCP client `id` (its token's id) is ready.
  void OnClient(uint64_t id);
  // TCP clients idle too long are closed.
  void Tick(Clock::time_point now);
  // Closes every TCP client: the sandbox is gone.
  void Close() { clients_.clear(); }

 private:
  // A query waiting for its answer.
  struct Waiter {
    enum Kind { kUdp, kTcp } kind;
    uint64_t id = 0;  // the TCP client
    sockaddr_in from{};
    std::string raw;  // the query, for the reply
    DnsQuery q;
    Clock::time_point start;
  };

  struct Client {
    uint64_t id;
    sys::UniqueFd fd;
    std::string in, out;
    int waiting = 0;
    bool eof = false;
    Clock::time_point last;
    uint32_t events = 0;
  };

  void ReadClient(Client& c);
  void Flush(Client& c);
  void Query(std::string raw, Waiter w);
  // The query is over the rate: dropped unanswered.
  void Drop(const Waiter& w, v1::DnsQuery& ev);
  void Answer(const Waiter& w, const Resolution& r);
  void Reply(const Waiter& w, const std::string& reply, v1::DnsQuery& ev);

  const Policy& policy_;
  const net::Listeners& l_;
  uint32_t sandbox_;
  NamePool& pool_;
  HostFloor& host_floor_;
  UpstreamClient& upstream_;
  Loop& loop_;
  Traffic& traffic_;
  TokenBucket bucket_;
  uint32_t dropped_since_audit_ = 0;
  Clock::time_point last_drop_audit_;
  std::unordered_map<uint64_t, Client> clients_;
};

}  // namespace brig::egress
