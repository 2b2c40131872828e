// The part of the floor no profile can except (issue 14; service.h): brig's bridge subnet
// and every address local to the network namespace brig runs in. Whether an address is
// local is asked of the kernel (net/local_route.h) each time, so an address the host
// gained after a name was resolved is refused too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brig/result.h"
#include "net/link.h"
#include "net/local_route.h"

namespace brig::egress {

class HostFloor {
 public:
  explicit HostFloor(net::Subnet bridge) : bridge_(bridge) {}
  // `host_netns`: the namespace whose own addresses are the host's (an nsfs descriptor; -1:
  // the one brig runs in). A pod's supervisor runs in the pod's and names the node's.
  Status Open(int host_netns = -1);
  // "ADDR: why" if `a` is the host's own; "" if not.
  std::string Refuses(uint32_t a);
  // The addresses of `addrs` that are not the host's own now; `floor` says why the first
  // refused one was refused.
  std::vector<uint32_t> Usable(const std::vector<uint32_t>& addrs, std::string& floor);

 private:
  net::Subnet bridge_;
  net::LocalRoutes local_;
};

}  // namespace brig::egress
