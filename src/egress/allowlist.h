// The egress allowlist (brig-profile(5), ALLOWLIST HOSTS): host patterns from a profile's
// network.allow_hosts and --allow-host, and the one normalisation that both the entries and
// the names a sandbox presents (DNS question, TLS SNI, HTTP Host) go through before they
// are compared. Pure: no resolution, no I/O. Unit-tested and fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::egress {

// RFC 1035 2.3.4 in text form, without the trailing dot: 255 octets on the wire.
inline constexpr size_t kMaxNameLength = 253;
inline constexpr size_t kMaxLabelLength = 63;

// `name` as brig compares it: ASCII lower case, ONE trailing dot dropped, at most 253
// bytes of labels of 1-63 letters, digits and hyphens that neither start nor end with a
// hyphen. An A-label ("xn--bcher-kva") passes as it is; a U-label does not, non-ASCII must
// come as punycode already. Refused: an empty name or label (leading dot, ".."), any other
// byte (space, NUL, backslash, "_", "*", ":", controls, UTF-8), and a last label that
// inet_aton(3) would read as a number ("10.0.0.1", "127.1", "0x7f"): an address is never a
// name, and must not be matched, or resolved, as one.
std::optional<std::string> NormalizeName(std::string_view name);
// The same, with the reason for a refusal: BadInput("host name", name, why).
Result<std::string> CheckName(std::string_view name);

// Whether `s` (a Host value without its port, an SNI) names an address rather than a host:
// an IPv6 literal, bracketed or not, or a name whose last label inet_aton(3) reads as a
// number ("198.51.100.20", "127.1", "0x7f000001"). Case and one trailing dot aside.
bool IsAddressLiteral(std::string_view s);

// One allowlist entry: "example.com" (the apex and every subdomain), "*.example.com"
// (every subdomain, not the apex), either with ":port".
struct HostPattern {
  std::string name;              // normalised, without "*."
  bool subdomains_only = false;  // the "*." form
  uint16_t port = 0;             // 0: every port

  // `normalised` must come from NormalizeName. Labels match whole: "example.com" matches
  // "a.example.com" but never "evil-example.com" or "example.com.evil.net". Port 0 asks
  // whether the name is allowed on any port (the resolver's question).
  bool Matches(std::string_view normalised, uint16_t port) const;
  // The entry in normalised form, as Parse reads it back: "*.example.com:443".
  std::string Str() const;
  bool operator==(const HostPattern&) const = default;
};

// Reads one entry. Errors are BadInput("allowlist entry", entry, why).
Result<HostPattern> ParseHostPattern(std::string_view entry);

class Allowlist {
 public:
  // An empty list allows nothing.
  Allowlist() = default;
  // Every entry must parse; the first that does not is the error.
  static Result<Allowlist> Parse(const std::vector<std::string>& entries);

  // Whether `name`, in any form NormalizeName accepts, may be reached on `port`. Port 0
  // means on some port: a name listed only as "example.com:443" still resolves. A name
  // NormalizeName refuses is never allowed.
  bool Allows(std::string_view name, uint16_t port) const;
  const std::vector<HostPattern>& patterns() const { return patterns_; }

 private:
  std::vector<HostPattern> patterns_;
};

}  // namespace brig::egress
