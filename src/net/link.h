// Links and addresses through rtnetlink (libnl-route-3): brig's bridge on the host, one
// veth per sandbox whose sandbox end is created directly in the sandbox's network
// namespace (moving a veth costs ~16 ms of kernel time, creating it there ~1 ms), and the
// sandbox side's address and route, set by brig init from inside.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "brig/result.h"

namespace brig::net {

using Mac = std::array<uint8_t, 6>;

// An IPv4 address in host byte order.
struct Ipv4 {
  uint32_t v = 0;
  std::string Str() const;
  bool operator==(const Ipv4&) const = default;
};

// "10.213.0.0/16". The prefix is 8..30; the address is the network's (host bits zero).
struct Subnet {
  Ipv4 network;
  int prefix = 16;
  Ipv4 Gateway() const { return {network.v + 1}; }
  uint32_t Size() const { return 1u << (32 - prefix); }
  bool Contains(Ipv4 a) const;
  bool Overlaps(Ipv4 other_net, int other_prefix) const;
  std::string Str() const;
};
Result<Subnet> ParseSubnet(std::string_view s);
Result<Ipv4> ParseIpv4(std::string_view s);

// A locally administered unicast MAC derived from a sandbox address: 02:62:72:xx:xx:xx.
Mac MacFor(Ipv4 addr);
std::string MacStr(const Mac& m);

// Host side. Creates bridge `name` with the subnet's gateway address, a MAC of its own
// (MacFor the gateway, set so that no port joining or leaving changes it), and brings it
// up; one that exists already is checked to carry that address (a bridge of another
// subnet is refused) and given that MAC if it has another. Returns its ifindex.
Result<int> EnsureBridge(const std::string& name, const Subnet& subnet);
// Refuses a subnet that overlaps a route of any of the host's tables (the local table's
// own addresses included) other than the bridge's own.
Status CheckNoRouteOverlap(const Subnet& subnet, const std::string& bridge);
// Creates veth `host_name` (up; a port of bridge `master` unless 0) whose peer is "eth0"
// with `mac`, directly in the network namespace `netns_fd` (-1: this thread's).
Status CreateSandboxVeth(const std::string& host_name, int master, int netns_fd, const Mac& mac);
// Deletes a link if it exists (brig gc). Returns whether there was one.
Result<bool> DeleteLinkIfExists(const std::string& name);

// Sandbox side, from brig init in the sandbox's network namespace: eth0 up with
// `addr`/32, and a default route via the subnet's gateway, on link.
Status ConfigureSandboxSide(Ipv4 addr, const Subnet& subnet);

}  // namespace brig::net
