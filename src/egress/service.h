// brig's egress enforcement for one sandbox (design.md, Network; issue 6): its resolver and
// its transparent proxy, behind the listeners brig's nftables rules redirect the sandbox's
// TCP/UDP 53 and TCP 80/443 to. Both run in the supervisor's single-threaded event loop:
// no thread, no process, and the sandbox's bytes are read only as far as the checks need.
//
// Resolver: a name the posture allows (the allowlist, or any host name in posture open) is
// resolved upstream for its A records; if some address passes the floor the sandbox gets
// one A record with the name's address in brig's pool (pool.h), never a real one. Every
// other name gets NXDOMAIN and never leaves the host. AAAA and every other type get an
// empty answer (IPv6 is off in the sandbox). CNAME chains are followed on the host and not
// shown. Queries beyond a rate are dropped.
//
// Proxy: the first bytes of a connection are read for the name (TLS ClientHello SNI on 443,
// the first request's Host on 80, framed by http/framing.h); the name must be allowed and
// be the one the dialed pool address was handed out for. brig then connects to the
// floor-checked address it resolved for that name itself, sends the bytes it read, and on
// 443 splices the rest both ways; on 80 every further request is framed and must name the
// same host (egress/http_relay.h). TLS is never terminated. Every refusal is immediate: a
// TLS alert or an HTTP 400/403/501, then close.
//
// The floor (floor.h) has a part no profile can except (issue 14): brig's bridge subnet
// and every address local to the network namespace brig runs in. Whether an address is
// local is asked of the kernel (local_route.h) each time an answer is given and each time
// the proxy connects, so an address the host gained after the name was resolved is
// refused too.
//
// Every query and connection is one audit event; Summary() totals them per name, with why
// each name was refused (denials.h prints that at exit).
//
// The egress budget (budget.h) counts what the proxy writes upstream: on 443 the sandbox's
// own TLS bytes, records and handshake included, as brig passes them on; on 80 the request
// bytes brig forwards. DNS counts too: an allowlist entry that covers subdomains lets the
// sandbox choose the labels it queries under it, which that domain's name servers see (in
// posture open, every name goes upstream), so the upstream client charges each query it
// sends under the name asked (upstream_client.h), and one the budget cannot pay for is
// not sent: the sandbox gets REFUSED with reason "budget". Names the posture refuses,
// types but A and cached answers never leave the host and cost nothing.
//
// Where each part lives: the resolver in resolver.h, its upstream client (retries, TCP
// fallback, cache) in upstream_client.h, the proxy in proxy.h, the host's floor in
// host_floor.h, the audit events and totals in traffic.h. The Service owns them and puts
// their descriptors into one epoll set (loop.h), the one fd the supervisor's loop sees.
#pragma once

#include <memory>

#include "brig/result.h"
#include "proto/brig.pb.h"
#include "egress/budget.h"
#include "egress/policy.h"
#include "egress/traffic.h"
#include "net/link.h"
#include "net/listeners.h"

namespace brig::egress {

class Service {
 public:
  // `listeners` and `budget` (null: none) must outlive the service; `sandbox` is the one
  // address served, in brig's bridge subnet `bridge` (0: every client that reaches the
  // listeners, which are a pod's, in its own network namespace). `denied` is told of each
  // name's first refusal for each reason as it happens (traffic.h). `host_netns`: where
  // the host floor's own addresses are asked (HostFloor::Open).
  static Result<std::unique_ptr<Service>> Start(Policy policy, const net::Listeners& listeners,
                                                uint32_t sandbox, net::Subnet bridge,
                                                AuditSink audit, DenialSink denied, Budget* budget,
                                                int host_netns = -1);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Readable when something needs attention; then call Handle().
  int fd() const;
  void Handle();
  // Ends every connection (each gets its audit event): the sandbox is gone.
  void Close();
  v1::NetworkSummary Summary() const;

  class Impl;

 private:
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brig::egress
