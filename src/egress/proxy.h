// The transparent proxy (service.h, "Proxy"): the sandbox's TCP 80 and 443, redirected to
// brig's listeners. The first bytes of a connection are read for the name (TLS ClientHello
// SNI on 443, the first request's Host on 80, framed by http/framing.h); the name must be
// allowed and be the one the dialed pool address was handed out for (pool.h). brig then
// connects to a floor-checked address it resolved for that name itself (upstream_client.h,
// host_floor.h), sends the bytes it read, and on 443 splices the rest both ways (relay.h);
// on 80 every further request is framed and must name the same host (http_relay.h). TLS is
// never terminated. Every refusal is immediate: a TLS alert or an HTTP 400/403/501/502,
// then close. Every connection is one audit event. With an egress budget (budget.h), once
// it is spent every open connection is closed and every new one refused, reason "budget".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "egress/budget.h"
#include "egress/host_floor.h"
#include "egress/http.h"
#include "egress/http_relay.h"
#include "egress/loop.h"
#include "egress/peek.h"
#include "egress/policy.h"
#include "egress/pool.h"
#include "egress/relay.h"
#include "egress/traffic.h"
#include "egress/upstream_client.h"
#include "http/framing.h"
#include "net/listeners.h"
#include "sys/fd.h"

namespace brig::egress {

class Proxy {
 public:
  // Everything given must outlive the proxy; `sandbox` is the one address served (0: any,
  // service.h).
  Proxy(const Policy& policy, const net::Listeners& listeners, uint32_t sandbox,
        const NamePool& pool, HostFloor& host_floor, UpstreamClient& upstream, Loop& loop,
        Traffic& traffic, Budget* budget);
  // Raises the soft RLIMIT_NOFILE towards what the connections need, and takes no more
  // connections than fit, so accept never fails for want of a descriptor.
  void FitDescriptors();
  // kHttps (tls) or kHttp is readable.
  void Accept(bool tls);
  // The client or upstream socket of connection `id` (its token's id) is ready.
  void OnClient(uint64_t id, uint32_t events);
  void OnUpstream(uint64_t id, uint32_t events);
  // Ends connections past their deadline or idle too long, and every one once the budget
  // is spent.
  void Tick(Clock::time_point now);
  // Ends every connection (each gets its audit event): the sandbox is gone.
  void Close();

 private:
  struct Conn {
    enum State { kReading, kResolving, kConnecting, kRelaying, kRefusing } state = kReading;
    uint64_t id;
    bool tls;
    sys::UniqueFd client, upstream;  // until the relay takes them
    std::optional<Relay> relay;      // TLS
    // Plain HTTP: the first request's framing (its head in to_up), then its relay.
    std::unique_ptr<http::RequestFramer> framer;
    std::string to_up;
    bool first_is_head = false;
    std::unique_ptr<HttpRelay> http;
    uint32_t client_events = 0, upstream_events = 0;
    std::string buf;
    uint32_t dialed = 0;
    uint16_t port = 0;
    std::string name;
    std::vector<uint32_t> addrs;
    size_t next_addr = 0;
    std::string host_floor;  // why the first address passed over as the host's own was
    size_t host_addrs = 0;   // how many were
    uint32_t address = 0;
    Clock::time_point start, deadline, last;
    uint64_t seen_bytes = 0;
    bool allowed = false;
    std::string reason, detail;
    bool denial_told = false;  // Refuse counted it before answering; Finish does not
  };
  // What the first bytes said so far; the name is in the connection once status is kOk.
  struct FirstBytes {
    PeekStatus status = PeekStatus::kNeedMore;
    std::string why;
    bool address = false;  // an address where the name should be
    bool refused = false;  // the connection is refused already
  };

  static uint64_t BytesUp(const Conn& c);
  static uint64_t BytesDown(const Conn& c);
  void Admit(Conn& c);
  void ReadFirstBytes(Conn& c, uint32_t events);
  // Reads what the client sent; true once it closed or failed.
  bool Read(Conn& c, uint32_t events);
  FirstBytes PeekTls(Conn& c);
  FirstBytes PeekHttp(Conn& c);
  Peek<HostPort> FrameFirstRequest(Conn& c);
  void Decide(Conn& c);
  void Resolved(Conn& c, const Resolution& r);
  void TryConnect(Conn& c);
  void Connected(Conn& c);
  void StartRelay(Conn& c);
  void Pump(Conn& c);
  void Refuse(Conn& c, const std::string& reason, const std::string& detail);
  void OverBudget(Conn& c);
  void Linger(Conn& c);
  void Drain(Conn& c);
  void Expire(Conn& c, Clock::time_point now, std::vector<uint64_t>& expired);
  void Finish(uint64_t id);
  std::string BudgetSpent() const;

  const Policy& policy_;
  http::Rules http_rules_;  // the proxy's: none of a broker's, the client's Host goes on
  const net::Listeners& l_;
  uint32_t sandbox_;
  const NamePool& pool_;
  HostFloor& host_floor_;
  UpstreamClient& upstream_;
  Loop& loop_;
  Traffic& traffic_;
  Budget* budget_;
  std::unordered_map<uint64_t, Conn> conns_;
  size_t max_conns_;
};

}  // namespace brig::egress
