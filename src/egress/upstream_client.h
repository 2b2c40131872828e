// The resolver's upstream client (service.h): asks the policy's upstreams (upstream.h) for
// a name's A records over UDP, moving to the next upstream after each try that gets no
// answer, asks again over TCP after a truncated answer, and keeps each answer for its TTL.
// Only the server asked may answer a query. Addresses the profile's floor refuses are
// dropped here; the host's own are asked at use (host_floor.h). Names reach it only once
// the posture allowed them (resolver.h, proxy.h).
//
// Every query it sends is charged to the egress budget (budget.h) under the queried name,
// since the labels of a name under an allowed apex are the sandbox's to choose and reach
// that domain's name servers: each try's DNS message as written, over UDP the message
// itself (every retry again), over TCP the message with its two-byte length prefix. IP,
// UDP and TCP headers are not counted, nor answers. A query the budget cannot pay for
// whole is not sent: its resolution says over_budget and the budget is exceeded. Answers
// from the cache cost nothing.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "brig/result.h"
#include "egress/budget.h"
#include "egress/dns.h"
#include "egress/loop.h"
#include "egress/policy.h"
#include "sys/fd.h"

namespace brig::egress {

// What the upstream said about a name.
struct Resolution {
  std::string name;
  std::string error;  // no answer at all
  uint8_t rcode = 0;
  std::vector<uint32_t> addrs;  // passed the profile's floor (the host's is asked at use)
  std::vector<std::string> seen, cnames;
  std::string floor;  // why the first refused address was refused
  bool over_budget = false;  // not asked: the egress budget is spent (error says so)
};

class UpstreamClient {
 public:
  using Done = std::function<void(const Resolution&)>;
  // `policy`, `loop` and `budget` (null: none) must outlive the client.
  UpstreamClient(const Policy& policy, Loop& loop, Budget* budget = nullptr);
  // The UDP socket queries leave from, in the loop as kUpstreamUdp.
  Status Open();
  // Calls `done` with the resolution of `name`: at once while the cached answer is fresh,
  // else once the upstream answered or every try failed.
  void Resolve(const std::string& name, Done done);
  // kUpstreamUdp is readable.
  void ReadUdp();
  // The TCP query `serial` (its token's id) is ready.
  void OnTcp(uint64_t serial, uint32_t events);
  // Retries and gives up on queries past their deadline; sweeps stale answers.
  void Tick(Clock::time_point now);

 private:
  struct Entry {
    Resolution r;
    bool pending = false;
    // The query in flight.
    uint16_t id = 0;
    int tries = 0;
    Clock::time_point deadline;
    std::string query;
    size_t upstream = 0;
    sys::UniqueFd tcp;  // the query again over TCP, after a truncated answer
    std::string tcp_in;
    size_t tcp_sent = 0;
    uint64_t serial = 0;
    Clock::time_point expires;
    std::vector<Done> waiters;
  };

  void Send(Entry& e);
  // Charges e's query of `n` bytes to the budget; false, and the budget exceeded, if it
  // cannot pay for all of them.
  bool Afford(const Entry& e, size_t n);
  void StartTcp(Entry& e);
  void Complete(Entry& e, const DnsAnswer* answer, std::string error, bool over_budget = false);
  void OverBudget(Entry& e);

  const Policy& policy_;
  Loop& loop_;
  Budget* budget_;
  sys::UniqueFd udp_;
  std::mt19937_64 rng_;
  std::unordered_map<std::string, Entry> cache_;
  std::unordered_map<uint16_t, std::string> inflight_;     // query id: name
  std::unordered_map<uint64_t, std::string> tcp_serials_;  // TCP query serial: name
};

}  // namespace brig::egress
