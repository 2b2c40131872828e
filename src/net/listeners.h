// The supervisor's listeners for one sandbox: where brig's nftables rules redirect the
// sandbox's TCP 80, 443 and TCP/UDP 53. They are brig's, on the host, on the bridge's
// gateway address. This version has no resolver or proxy behind them yet, so they refuse
// everything at once, in each protocol's own words: HTTP gets a 403, TLS a fatal
// access_denied alert, DNS over UDP a REFUSED answer, DNS over TCP a closed connection.
// Their sockets and connections sit in an epoll set of their own, which the supervisor's
// loop watches as one fd.
#pragma once

#include <deque>
#include <string>
#include <string_view>

#include "brig/result.h"
#include "net/link.h"
#include "net/nft.h"
#include "sys/fd.h"

namespace brig::net {

class Listeners {
 public:
  // Listens on `gateway`; talks only to `sandbox`, the one address whose traffic brig's
  // rules redirect here (a host process reaching these ports some other way is dropped).
  static Result<Listeners> Open(Ipv4 gateway, Ipv4 sandbox);
  ListenerPorts ports() const { return ports_; }
  // Readable when a listener or a connection needs attention; then call Handle().
  int fd() const { return epoll_.get(); }
  void Handle();

 private:
  void Accept(int listener);
  void Drain(int conn);
  sys::UniqueFd epoll_, http_, https_, dns_tcp_, dns_udp_;
  std::deque<sys::UniqueFd> conns_;  // refused, waiting for the client to close
  ListenerPorts ports_;
  Ipv4 sandbox_;
};

// A DNS reply that refuses `query` (same id and question, QR set, RCODE REFUSED); empty if
// `query` is too short to be one or is itself a reply. Pure; unit-tested and fuzzed.
std::string RefuseDnsQuery(std::string_view query);

// What the TCP listeners send before they close: an HTTP 403 and a TLS alert record.
std::string_view HttpRefusal();
std::string_view TlsRefusal();

// At most this many refused connections are kept waiting for their client's close; the
// oldest is dropped beyond it.
inline constexpr size_t kMaxRefusedConnections = 256;

}  // namespace brig::net
