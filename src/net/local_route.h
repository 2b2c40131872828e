// Whether an address is the host's own, asked of the kernel (issue 14): the route a
// connection from the network namespace brig runs in would take to it. An address of any
// interface, an address added a moment ago, and a whole range routed locally ("AnyIP")
// are all local routes, so the answer is as current as the kernel's tables. One rtnetlink
// request per address (libnl has no route lookup); the kernel answers within the request,
// so the supervisor's loop never waits on it.
//
// Answers are kept, and all of them dropped as soon as the kernel says anything about its
// IPv4 routes, addresses or rules: a second socket is subscribed to those groups,
// and every lookup first reads what it queued. The kernel queues the notice before the
// change's own request returns (ip addr add, ip route add local ...), so a lookup made
// after a change always asks anew; a lost notice (a full queue, ENOBUFS) drops them too.
// A kept answer costs one recv that finds nothing, where a request cost ~30 us here, on
// every DNS answer and proxied connection.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "brig/result.h"
#include "net/link.h"

struct mnl_socket;

namespace brig::net {

class LocalRoutes {
 public:
  static Result<LocalRoutes> Open();
  LocalRoutes() = default;
  LocalRoutes(LocalRoutes&&) noexcept = default;
  LocalRoutes& operator=(LocalRoutes&&) noexcept = default;
  ~LocalRoutes();

  // Whether a connection to `addr` stays on this host: its route is local, broadcast or
  // anycast. No route at all is not local (nothing could be reached there).
  Result<bool> IsLocal(Ipv4 addr);

 private:
  struct Close {
    void operator()(mnl_socket* s) const;
  };
  // Drops the kept answers if the kernel has changed anything since the last call.
  void Forget();
  Result<bool> Ask(Ipv4 addr);

  std::unique_ptr<mnl_socket, Close> nl_, changes_;
  std::unordered_map<uint32_t, bool> known_;
  uint32_t seq_ = 0;
};

}  // namespace brig::net
