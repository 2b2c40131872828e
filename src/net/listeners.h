// The supervisor's listeners for one sandbox: where brig's nftables rules redirect the
// sandbox's TCP 80, 443 and TCP/UDP 53. They are brig's, on the host, on the bridge's
// gateway address, opened before clone so that the rules can name their ports; the egress
// service (egress/service.h) serves them once the sandbox runs.
#pragma once

#include "brig/result.h"
#include "net/link.h"
#include "net/nft.h"
#include "sys/fd.h"

namespace brig::net {

class Listeners {
 public:
  // Nonblocking sockets bound to `gateway`, on `ports` (where 0, one the kernel picks).
  static Result<Listeners> Open(Ipv4 gateway, ListenerPorts ports = {});
  ListenerPorts ports() const { return ports_; }
  int http() const { return http_.get(); }
  int https() const { return https_.get(); }
  int dns_tcp() const { return dns_tcp_.get(); }
  int dns_udp() const { return dns_udp_.get(); }

 private:
  sys::UniqueFd http_, https_, dns_tcp_, dns_udp_;
  ListenerPorts ports_;
};

}  // namespace brig::net
