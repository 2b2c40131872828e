// The supervisor's listeners for one sandbox: where brig's nftables rules redirect the
// sandbox's TCP 80, 443 and TCP/UDP 53. They are brig's, on the host, on the bridge's
// gateway address. This version has no resolver or proxy behind them yet, so they refuse
// everything at once: a TCP connection is accepted and reset, a DNS query is answered
// REFUSED.
#pragma once

#include <vector>

#include "brig/result.h"
#include "net/link.h"
#include "net/nft.h"
#include "sys/fd.h"

namespace brig::net {

class Listeners {
 public:
  static Result<Listeners> Open(Ipv4 gateway);
  ListenerPorts ports() const { return ports_; }
  // The sockets to watch for readability, and what to do when one is readable.
  std::vector<int> fds() const;
  void Handle(int fd);

 private:
  sys::UniqueFd http_, https_, dns_tcp_, dns_udp_;
  ListenerPorts ports_;
};

// A DNS reply that refuses `query` (same id and question, QR set, RCODE REFUSED); empty if
// `query` is too short to be one. Pure; unit-tested and fuzzed.
std::string RefuseDnsQuery(std::string_view query);

}  // namespace brig::net
