// brig's nftables rules inside a network namespace that brig serves from within: a pod's
// own (CNI's), whose supervisor installs them before the pod's first container starts
// (pod/supervisor.h), and an ordinary user's sandbox's (net/sealed_net.h). One table,
// `inet brig`, in that namespace only; no other namespace's tables are touched.
//
//   output, nat:    upstream sockets carrying brig's mark pass (a pod's supervisor makes
//                   its own there); IPv4 UDP and TCP 53 go to the resolver, TCP 80 and 443
//                   to the proxy (postures allowlist and open), on the namespace's loopback
//   output, filter: loopback (and what nat sent there: this hook still sees the device the
//                   packet had before), replies on connections accepted there (the
//                   kubelet's probes, a pod's own services), brig's mark and the `direct`
//                   destinations pass; everything else is refused at once (TCP reset, ICMP
//                   administratively prohibited), IPv6 included
//
// No process of the namespace holds a capability over it (pod/harden.h; a sandbox drops
// every one), so none can change the table or set the mark. InsideRules is pure and
// unit-tested; SetUpInside installs what it writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/link.h"
#include "net/listeners.h"
#include "net/nft.h"

namespace brig::net {

// "brig" in ASCII: what a pod supervisor's upstream sockets carry (net/upstream_socket.h).
inline constexpr uint32_t kMark = 0x62726967;

// A destination let out as it is: "tcp:CIDR[:PORT]" or "udp:CIDR[:PORT]"; port 0 is any.
struct Direct {
  bool tcp = true;
  Ipv4 network;
  int prefix = 32;  // 0..32
  uint16_t port = 0;
};
Result<Direct> ParseDirect(std::string_view s);

// The table's script. `listeners`: the resolver's and proxy's ports on 127.0.0.1; none:
// postures none and broker-only, which redirect nothing. `mark`: what upstream sockets made
// in the namespace carry (0: none are, and no rule names a mark).
std::string InsideRules(const std::optional<ListenerPorts>& listeners,
                        const std::vector<Direct>& direct, uint32_t mark);

// In the calling thread's network namespace: loopback up; with `ports`, the listeners on
// 127.0.0.1 (a port 0: one the kernel picks); and the table, replacing, in the same
// transaction, one a sandbox of the namespace left. Returns the listeners.
Result<std::optional<Listeners>> SetUpInside(const std::optional<ListenerPorts>& ports,
                                             const std::vector<Direct>& direct, uint32_t mark);

}  // namespace brig::net
