// brig's nftables rules inside a pod's own network namespace (CNI's), which its supervisor
// installs before the pod's first container starts (pod/supervisor.h). One table, `inet
// brig`, in that namespace only; the node's tables are never touched.
//
//   output, nat:    the supervisor's own sockets (brig's mark) pass; IPv4 UDP and TCP 53
//                   go to the pod's resolver, TCP 80 and 443 to its proxy (postures
//                   allowlist and open), on the pod's loopback
//   output, filter: loopback (and what nat sent there: this hook still sees the device the
//                   packet had before), replies on connections the pod accepted (the kubelet's
//                   probes, its own services), brig's mark and the handler's `direct`
//                   destinations pass; everything else is refused at once (TCP reset, ICMP
//                   administratively prohibited), IPv6 included
//
// The pod's processes hold no capability over the namespace (pod/harden.h), so they can
// neither change the table nor set the mark. Pure; unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/nft.h"
#include "pod/handler.h"

namespace brig::pod {

// "brig" in ASCII: what the supervisor's upstream sockets carry (net/upstream_socket.h).
inline constexpr uint32_t kMark = 0x62726967;

// The table's script. `listeners`: the resolver's and proxy's ports on 127.0.0.1; none:
// postures none and broker-only, which redirect nothing.
std::string PodRules(const std::optional<net::ListenerPorts>& listeners,
                     const std::vector<Direct>& direct);

}  // namespace brig::pod
