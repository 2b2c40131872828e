#include "net/link.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include <cerrno>
#include <cstdio>
#include <memory>

namespace brig::net {
namespace {

struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct LinkFree {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrFree {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct RtAddrFree {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct RouteFree {
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
};
struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using Sock = std::unique_ptr<nl_sock, SockFree>;
using Link = std::unique_ptr<rtnl_link, LinkFree>;

// libnl returns negative NLE_* codes; they map to errno well enough for messages.
Error NlError(const std::string& op, const std::string& subject, int nle) {
  return Fail(op, subject, nl_geterror(nle));
}

Result<Sock> Connect() {
  Sock s(nl_socket_alloc());
  if (!s) return Fail("netlink", "", "out of memory");
  if (int e = nl_connect(s.get(), NETLINK_ROUTE); e < 0) return NlError("netlink", "connect", e);
  return s;
}

std::unique_ptr<nl_addr, AddrFree> NlAddr(Ipv4 a, int prefix) {
  uint32_t be = htonl(a.v);
  std::unique_ptr<nl_addr, AddrFree> n(nl_addr_build(AF_INET, &be, sizeof be));
  if (n) nl_addr_set_prefixlen(n.get(), prefix);
  return n;
}

Status AddAddress(nl_sock* s, int ifindex, Ipv4 a, int prefix, const std::string& dev) {
  std::unique_ptr<rtnl_addr, RtAddrFree> ra(rtnl_addr_alloc());
  auto local = NlAddr(a, prefix);
  if (!ra || !local) return Fail("netlink", dev, "out of memory");
  rtnl_addr_set_ifindex(ra.get(), ifindex);
  rtnl_addr_set_local(ra.get(), local.get());
  if (int e = rtnl_addr_add(s, ra.get(), 0); e < 0 && e != -NLE_EXIST) {
    return NlError("add address " + a.Str(), dev, e);
  }
  return {};
}

Status SetUp(nl_sock* s, rtnl_link* link, const std::string& dev) {
  Link change(rtnl_link_alloc());
  if (!change) return Fail("netlink", dev, "out of memory");
  rtnl_link_set_flags(change.get(), IFF_UP);
  if (int e = rtnl_link_change(s, link, change.get(), 0); e < 0) return NlError("set up", dev, e);
  return {};
}

// Whether `ifindex` carries exactly `addr`/prefix; another IPv4 address on it is refused
// (it would be a bridge of another subnet).
Result<bool> HasAddress(nl_sock* s, const std::string& name, int ifindex, Ipv4 addr,
                        int prefix) {
  nl_cache* raw = nullptr;
  if (int e = rtnl_addr_alloc_cache(s, &raw); e < 0) return NlError("list addresses", "", e);
  std::unique_ptr<nl_cache, CacheFree> cache(raw);
  bool found = false;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) != ifindex || rtnl_addr_get_family(a) != AF_INET) continue;
    nl_addr* local = rtnl_addr_get_local(a);
    uint32_t be;
    memcpy(&be, nl_addr_get_binary_addr(local), sizeof be);
    if (ntohl(be) == addr.v && rtnl_addr_get_prefixlen(a) == prefix) {
      found = true;
    } else {
      return Fail("bridge", name,
                  "has address " + Ipv4{ntohl(be)}.Str() + "/" +
                      std::to_string(rtnl_addr_get_prefixlen(a)) + ", not " + addr.Str() + "/" +
                      std::to_string(prefix) + ": another --subnet is in use on this host");
    }
  }
  return found;
}

}  // namespace

std::string Ipv4::Str() const {
  char b[INET_ADDRSTRLEN];
  uint32_t be = htonl(v);
  inet_ntop(AF_INET, &be, b, sizeof b);
  return b;
}

bool Subnet::Contains(Ipv4 a) const {
  uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
  return (a.v & mask) == network.v;
}

bool Subnet::Overlaps(Ipv4 other_net, int other_prefix) const {
  int p = std::min(prefix, other_prefix);
  uint32_t mask = p == 0 ? 0 : ~0u << (32 - p);
  return (network.v & mask) == (other_net.v & mask);
}

std::string Subnet::Str() const { return network.Str() + "/" + std::to_string(prefix); }

Result<Ipv4> ParseIpv4(std::string_view s) {
  std::string str(s);
  in_addr a;
  // inet_pton reads a C string: a NUL inside would end it early.
  if (str.empty() || str.find('\0') != std::string::npos ||
      inet_pton(AF_INET, str.c_str(), &a) != 1) {
    return BadInput("address", str, "expected a dotted IPv4 address");
  }
  return Ipv4{ntohl(a.s_addr)};
}

Result<Subnet> ParseSubnet(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return BadInput("subnet", std::string(s), "expected A.B.C.D/N");
  Ipv4 net = BRIG_TRY(ParseIpv4(s.substr(0, slash)));
  std::string_view p = s.substr(slash + 1);
  if (p.empty() || p.size() > 2 || p[0] == '0' ||
      p.find_first_not_of("0123456789") != std::string_view::npos) {
    return BadInput("subnet", std::string(s), "expected a prefix length after '/'");
  }
  int prefix = std::stoi(std::string(p));
  if (prefix < 8 || prefix > 30) {
    return BadInput("subnet", std::string(s), "the prefix length must be from 8 to 30");
  }
  Subnet sub{net, prefix};
  if (!sub.Contains(net) || (net.v & ~(~0u << (32 - prefix))) != 0) {
    return BadInput("subnet", std::string(s), "host bits are set; name the network address");
  }
  return sub;
}

Mac MacFor(Ipv4 addr) {
  return {0x02, 0x62, 0x72, static_cast<uint8_t>(addr.v >> 16), static_cast<uint8_t>(addr.v >> 8),
          static_cast<uint8_t>(addr.v)};
}

std::string MacStr(const Mac& m) {
  char b[18];
  snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

Result<int> EnsureBridge(const std::string& name, const Subnet& subnet) {
  Sock s = BRIG_TRY(Connect());
  // A bridge whose address is not set takes the lowest of its ports', so it changed as
  // sandboxes came and went, and a sandbox that had learnt the old one lost its gateway
  // (issue 14). Set, it is the kernel's to keep (addr_assign_type NET_ADDR_SET). The
  // gateway's own address is no sandbox's, so neither is this MAC.
  Mac mac = MacFor(subnet.Gateway());
  std::unique_ptr<nl_addr, AddrFree> lladdr(nl_addr_build(AF_LLC, mac.data(), mac.size()));
  if (!lladdr) return Fail("netlink", name, "out of memory");
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(s.get(), 0, name.c_str(), &raw) < 0) {
    Link br(rtnl_link_bridge_alloc());
    if (!br) return Fail("netlink", name, "out of memory");
    rtnl_link_set_name(br.get(), name.c_str());
    rtnl_link_set_addr(br.get(), lladdr.get());
    int e = rtnl_link_add(s.get(), br.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (e < 0 && e != -NLE_EXIST) return NlError("create bridge", name, e);
    if (int g = rtnl_link_get_kernel(s.get(), 0, name.c_str(), &raw); g < 0) {
      return NlError("find bridge", name, g);
    }
  }
  Link link(raw);
  if (!rtnl_link_is_bridge(link.get())) {
    return Fail("bridge", name, "a link of that name exists and is not a bridge");
  }
  int ifindex = rtnl_link_get_ifindex(link.get());
  // One made by an older brig: its current address is a port's (which the bridge goes on
  // delivering to), or a random one while it has none, so changing it cuts off no sandbox.
  if (nl_addr* now = rtnl_link_get_addr(link.get());
      !now || nl_addr_get_len(now) != mac.size() ||
      memcmp(nl_addr_get_binary_addr(now), mac.data(), mac.size()) != 0) {
    Link change(rtnl_link_alloc());
    if (!change) return Fail("netlink", name, "out of memory");
    rtnl_link_set_addr(change.get(), lladdr.get());
    if (int e = rtnl_link_change(s.get(), link.get(), change.get(), 0); e < 0) {
      return NlError("set address " + MacStr(mac), name, e);
    }
  }
  if (!BRIG_TRY(HasAddress(s.get(), name, ifindex, subnet.Gateway(), subnet.prefix))) {
    BRIG_TRY(AddAddress(s.get(), ifindex, subnet.Gateway(), subnet.prefix, name));
  }
  if (!(rtnl_link_get_flags(link.get()) & IFF_UP)) BRIG_TRY(SetUp(s.get(), link.get(), name));
  return ifindex;
}

Status CheckNoRouteOverlap(const Subnet& subnet, const std::string& bridge) {
  Sock s = BRIG_TRY(Connect());
  int bridge_index = 0;
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(s.get(), 0, bridge.c_str(), &raw) == 0) {
    bridge_index = rtnl_link_get_ifindex(raw);
    rtnl_link_put(raw);
  }
  nl_cache* rc = nullptr;
  if (int e = rtnl_route_alloc_cache(s.get(), AF_INET, 0, &rc); e < 0) {
    return NlError("list routes", "", e);
  }
  std::unique_ptr<nl_cache, CacheFree> cache(rc);
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    nl_addr* dst = rtnl_route_get_dst(r);
    int plen = dst ? nl_addr_get_prefixlen(dst) : 0;
    if (plen == 0) continue;  // the default route covers everything, and collides with nothing
    uint32_t be = 0;
    memcpy(&be, nl_addr_get_binary_addr(dst), sizeof be);
    bool own = false;
    if (rtnl_route_get_nnexthops(r) > 0) {
      own = rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, 0)) == bridge_index &&
            bridge_index != 0;
    }
    if (!own && subnet.Overlaps(Ipv4{ntohl(be)}, plen)) {
      char text[64];
      nl_addr2str(dst, text, sizeof text);
      return Fail("subnet", subnet.Str(),
                  std::string("overlaps the host's route to ") + text +
                      "; choose another with --subnet",
                  ErrorKind::kSetup);
    }
  }
  return {};
}

Status CreateSandboxVeth(const std::string& host_name, int master, int netns_fd, const Mac& mac) {
  Sock s = BRIG_TRY(Connect());
  Link veth(rtnl_link_veth_alloc());
  if (!veth) return Fail("netlink", host_name, "out of memory");
  rtnl_link_set_name(veth.get(), host_name.c_str());
  if (master > 0) rtnl_link_set_master(veth.get(), master);
  rtnl_link_set_flags(veth.get(), IFF_UP);
  rtnl_link* peer = rtnl_link_veth_get_peer(veth.get());
  rtnl_link_set_name(peer, "eth0");
  if (netns_fd >= 0) rtnl_link_set_ns_fd(peer, netns_fd);
  std::unique_ptr<nl_addr, AddrFree> lladdr(nl_addr_build(AF_LLC, mac.data(), mac.size()));
  rtnl_link_set_addr(peer, lladdr.get());
  rtnl_link_put(peer);
  if (int e = rtnl_link_add(s.get(), veth.get(), NLM_F_CREATE | NLM_F_EXCL); e < 0) {
    return NlError("create veth", host_name, e);
  }
  return {};
}

Result<bool> DeleteLinkIfExists(const std::string& name) {
  Sock s = BRIG_TRY(Connect());
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(s.get(), 0, name.c_str(), &raw) < 0) return false;
  Link link(raw);
  int e = rtnl_link_delete(s.get(), link.get());
  if (e < 0 && e != -NLE_OBJ_NOTFOUND && e != -NLE_NODEV) return NlError("delete link", name, e);
  return true;
}

Status ConfigureSandboxSide(Ipv4 addr, const Subnet& subnet) {
  Sock s = BRIG_TRY(Connect());
  rtnl_link* raw = nullptr;
  if (int e = rtnl_link_get_kernel(s.get(), 0, "eth0", &raw); e < 0) {
    return NlError("find", "eth0", e);
  }
  Link link(raw);
  int ifindex = rtnl_link_get_ifindex(link.get());
  // A /32: every packet, to another sandbox too, goes to the gateway, where brig's rules
  // decide (no sandbox ever talks to another at layer 2).
  BRIG_TRY(AddAddress(s.get(), ifindex, addr, 32, "eth0"));
  BRIG_TRY(SetUp(s.get(), link.get(), "eth0"));
  std::unique_ptr<rtnl_route, RouteFree> route(rtnl_route_alloc());
  auto any = NlAddr(Ipv4{0}, 0);
  auto gw = NlAddr(subnet.Gateway(), 32);
  rtnl_route_set_family(route.get(), AF_INET);
  rtnl_route_set_dst(route.get(), any.get());
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  rtnl_route_nh_set_ifindex(nh, ifindex);
  rtnl_route_nh_set_gateway(nh, gw.get());
  rtnl_route_nh_set_flags(nh, RTNH_F_ONLINK);
  rtnl_route_add_nexthop(route.get(), nh);
  if (int e = rtnl_route_add(s.get(), route.get(), 0); e < 0) {
    return NlError("add default route via " + subnet.Gateway().Str(), "eth0", e);
  }
  return {};
}

}  // namespace brig::net
