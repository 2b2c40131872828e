// Whether an address is the host's own, asked of the kernel (issue 14): the route a
// connection from the network namespace brig runs in would take to it. An address of any
// interface, an address added a moment ago, and a whole range routed locally ("AnyIP")
// are all local routes, so the answer is as current as the kernel's tables, with nothing
// to keep in step. One rtnetlink request per address (libnl has no route lookup); the
// kernel answers within the request, so the supervisor's loop never waits on it.
#pragma once

#include <cstdint>
#include <memory>

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
  std::unique_ptr<mnl_socket, Close> nl_;
  uint32_t seq_ = 0;
};

}  // namespace brig::net
