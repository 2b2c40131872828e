#include "egress/floor.h"

#include <arpa/inet.h>

#include <cstring>
#include <span>
#include <string_view>

namespace brig::egress {
namespace {

constexpr std::string_view kMetadata = "cloud metadata";

struct Range {
  const char* net;
  int prefix;
  const char* why;
};

// IPv4, prefixes in IPv4 terms. More specific entries first: the first match names it.
constexpr Range kV4[] = {
    {"169.254.169.254", 32, "cloud metadata"},
    {"169.254.170.2", 32, "cloud metadata"},
    {"100.100.100.200", 32, "cloud metadata"},
    {"0.0.0.0", 8, "this network"},
    {"10.0.0.0", 8, "private (RFC 1918)"},
    {"100.64.0.0", 10, "shared address space (CGNAT)"},
    {"127.0.0.0", 8, "loopback"},
    {"169.254.0.0", 16, "link-local"},
    {"172.16.0.0", 12, "private (RFC 1918)"},
    {"192.0.0.0", 24, "IETF protocol assignments"},
    {"192.0.2.0", 24, "documentation"},
    {"192.88.99.0", 24, "6to4 relay"},
    {"192.168.0.0", 16, "private (RFC 1918)"},
    {"198.18.0.0", 15, "benchmarking"},
    {"198.51.100.0", 24, "documentation"},
    {"203.0.113.0", 24, "documentation"},
    {"224.0.0.0", 4, "multicast"},
    {"240.0.0.0", 4, "reserved or broadcast"},
};

// IPv6 ranges judged as such; the forms that embed an IPv4 address are handled apart.
constexpr Range kV6[] = {
    {"::", 128, "unspecified"},
    {"::1", 128, "loopback"},
    {"fd00:ec2::254", 128, "cloud metadata"},
    {"64:ff9b:1::", 48, "local-use NAT64"},
    {"100::", 64, "discard"},
    {"2001::", 23, "IETF protocol assignments (Teredo, ORCHID)"},
    {"2001:db8::", 32, "documentation"},
    {"fc00::", 7, "unique local (ULA)"},
    {"fe80::", 10, "link-local"},
    {"fec0::", 10, "site-local"},
    {"ff00::", 8, "multicast"},
};

bool PrefixMatch(const uint8_t* a, const uint8_t* b, int bits) {
  int full = bits / 8, rest = bits % 8;
  if (memcmp(a, b, static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

Network Known(const Range& r) {
  Network n;
  n.base = *ParseAddress(r.net);
  n.prefix = r.prefix;
  return n;
}

Address V4At(const uint8_t* p) {
  uint32_t v = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  return FromIpv4(v);
}

std::string V4Reason(const Address& a) {
  for (const auto& r : kV4) {
    if (Known(r).Contains(a)) return r.why;
  }
  return {};
}

}  // namespace

Address FromIpv4(uint32_t host_order) {
  Address a;
  a.v4 = true;
  a.bytes[10] = a.bytes[11] = 0xff;
  a.bytes[12] = static_cast<uint8_t>(host_order >> 24);
  a.bytes[13] = static_cast<uint8_t>(host_order >> 16);
  a.bytes[14] = static_cast<uint8_t>(host_order >> 8);
  a.bytes[15] = static_cast<uint8_t>(host_order);
  return a;
}

std::string Address::Str() const {
  char b[INET6_ADDRSTRLEN];
  if (v4) {
    inet_ntop(AF_INET, bytes.data() + 12, b, sizeof b);
  } else {
    inet_ntop(AF_INET6, bytes.data(), b, sizeof b);
  }
  return b;
}

Result<Address> ParseAddress(std::string_view s) {
  std::string str(s);
  // inet_pton reads a C string: a NUL inside would end it early.
  if (str.empty() || str.find('\0') != std::string::npos) {
    return BadInput("address", str, "expected an IPv4 or IPv6 address");
  }
  Address a;
  in_addr v4;
  if (inet_pton(AF_INET, str.c_str(), &v4) == 1) return FromIpv4(ntohl(v4.s_addr));
  if (inet_pton(AF_INET6, str.c_str(), a.bytes.data()) == 1) {
    // An IPv4-mapped address is IPv4 on the wire.
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    a.v4 = memcmp(a.bytes.data(), kMapped, 12) == 0;
    return a;
  }
  return BadInput("address", str, "expected an IPv4 or IPv6 address");
}

bool Network::Contains(const Address& a) const {
  if (a.v4 != base.v4) return false;
  return base.v4 ? PrefixMatch(a.bytes.data() + 12, base.bytes.data() + 12, prefix)
                 : PrefixMatch(a.bytes.data(), base.bytes.data(), prefix);
}

Result<Network> ParseNetwork(std::string_view s) {
  size_t slash = s.find('/');
  Network n;
  n.base = BRIG_TRY(ParseAddress(s.substr(0, slash)));
  int max = n.base.v4 ? 32 : 128;
  n.prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view p = s.substr(slash + 1);
    if (p.empty() || p.size() > 3 || (p.size() > 1 && p[0] == '0') ||
        p.find_first_not_of("0123456789") != std::string_view::npos) {
      return BadInput("network", std::string(s), "expected a prefix length after '/'");
    }
    n.prefix = std::stoi(std::string(p));
    if (n.prefix > max) {
      return BadInput("network", std::string(s),
                      "the prefix length must be at most " + std::to_string(max));
    }
  }
  // Host bits set would make the entry mean something other than what it says.
  Address masked = n.base;
  const uint8_t* first = masked.bytes.data() + (masked.v4 ? 12 : 0);
  int total = masked.v4 ? 32 : 128;
  for (int bit = n.prefix; bit < total; ++bit) {
    if (first[bit / 8] & (0x80 >> (bit % 8))) {
      return BadInput("network", std::string(s), "host bits are set; name the network address");
    }
  }
  return n;
}

std::string FloorReason(const Address& a) {
  if (a.v4) return V4Reason(a);
  const uint8_t* b = a.bytes.data();
  static const uint8_t kZero[12] = {};
  static const uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  for (const auto& r : kV6) {
    if (Known(r).Contains(a)) return r.why;
  }
  // Forms that carry an IPv4 address: judged by it, and refused whatever it is unless it
  // is public, so no IPv6 spelling reaches an IPv4 address the floor refuses.
  auto embedded = [&](const uint8_t* at, const char* form) -> std::string {
    std::string why = V4Reason(V4At(at));
    return why.empty() ? std::string() : why + " (as " + form + ")";
  };
  if (memcmp(b, kZero, 12) == 0) return embedded(b + 12, "IPv4-compatible IPv6");
  if (memcmp(b, kNat64, 12) == 0) return embedded(b + 12, "NAT64 IPv6");
  if (b[0] == 0x20 && b[1] == 0x02) return embedded(b + 2, "6to4 IPv6");
  return {};
}

Result<Floor> Floor::WithExceptions(const std::vector<std::string>& networks) {
  Floor f;
  for (const auto& text : networks) {
    Network n = BRIG_TRY(ParseNetwork(text));
    for (std::span<const Range> table : {std::span<const Range>(kV4), std::span<const Range>(kV6)}) {
      for (const Range& r : table) {
        if (std::string_view(r.why) == kMetadata && n.Contains(Known(r).base)) {
          return BadInput("floor exception", text,
                          std::string("holds the cloud metadata address ") + r.net +
                              ", which no profile can make reachable");
        }
      }
    }
    f.allowed_.push_back(n);
  }
  return f;
}

std::string Floor::Refuses(const Address& a) const {
  std::string why = FloorReason(a);
  if (why.empty()) return {};
  for (const auto& n : allowed_) {
    if (n.Contains(a)) return {};
  }
  return why;
}

}  // namespace brig::egress
