// The address floor (design.md, Network): addresses the proxy never connects to, whatever
// name resolved to them, unless the profile lists that address or network explicitly.
// Loopback, RFC 1918, link-local, CGNAT, multicast and broadcast, "this network",
// documentation and benchmarking ranges, ULA, the cloud metadata addresses, and the same
// inside IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms. Pure; unit-tested and
// fuzzed. The host's own addresses and brig's bridge subnet are in the floor too, beyond
// any exception, but they are asked of the kernel where they are used (service.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::egress {

// An IPv4 or IPv6 address; IPv4 is stored as its IPv4-mapped IPv6 form.
struct Address {
  std::array<uint8_t, 16> bytes{};
  bool v4 = false;
  std::string Str() const;
  bool operator==(const Address&) const = default;
};
Result<Address> ParseAddress(std::string_view s);
Address FromIpv4(uint32_t host_order);

struct Network {
  Address base;
  int prefix = 0;  // in the address's own family: 0..32 for IPv4, 0..128 for IPv6
  bool Contains(const Address& a) const;
};
// "10.0.0.0/8", "fd00::/8", or a single address (a /32 or /128). Host bits must be zero.
Result<Network> ParseNetwork(std::string_view s);

// Why `a` is in the floor ("loopback", "private (RFC 1918)", "cloud metadata", ...), or an
// empty string if it is not. An IPv6 form that embeds an IPv4 address is judged by that
// address too.
std::string FloorReason(const Address& a);

// The floor with a profile's exceptions: addresses or networks it lists explicitly. An
// exception that holds a cloud metadata address is refused: those are never reachable.
class Floor {
 public:
  static Result<Floor> WithExceptions(const std::vector<std::string>& networks);
  // Empty if the proxy may connect to `a`; otherwise why not.
  std::string Refuses(const Address& a) const;

 private:
  std::vector<Network> allowed_;
};

}  // namespace brig::egress
