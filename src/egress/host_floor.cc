#include "egress/host_floor.h"

#include "egress/loop.h"
#include "net/netns.h"

namespace brig::egress {

Status HostFloor::Open(int host_netns) {
  auto open = [this]() -> Status {
    local_ = BRIG_TRY(net::LocalRoutes::Open());
    return {};
  };
  return host_netns >= 0 ? net::InNetns(host_netns, "the host's network namespace", open) : open();
}

std::string HostFloor::Refuses(uint32_t a) {
  std::string why;
  if (a == bridge_.Gateway().v) {
    why = "brig's bridge gateway, an address of this host";
  } else if (bridge_.Contains(net::Ipv4{a})) {
    why = "in brig's bridge subnet " + bridge_.Str();
  } else if (auto local = local_.IsLocal(net::Ipv4{a}); !local) {
    why = "cannot tell whether it is an address of this host: " + local.error().Render();
  } else if (*local) {
    why = "an address of this host";
  }
  return why.empty() ? why : Ip(a) + ": " + why;
}

std::vector<uint32_t> HostFloor::Usable(const std::vector<uint32_t>& addrs, std::string& floor) {
  std::vector<uint32_t> out;
  bool host = false;
  for (uint32_t a : addrs) {
    std::string why = Refuses(a);
    if (why.empty()) {
      out.push_back(a);
    } else if (!host) {
      host = true;
      floor = std::move(why);
    }
  }
  return out;
}

}  // namespace brig::egress
