// Host name normalisation and allowlist matching. Everything is ASCII and byte-exact: no
// locale, no IDNA mapping (punycode is taken as the A-label it is, which is also what DNS
// compares), no resolution.
#include "egress/allowlist.h"

#include <algorithm>

namespace brig::egress {
namespace {

bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsHex(unsigned char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }
bool IsLdh(unsigned char c) { return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '-'; }

std::string CharProblem(unsigned char c) {
  if (c >= 0x80) return "non-ASCII byte: write an internationalised name as punycode (xn--...)";
  if (c < 0x20 || c == 0x7f) return "control byte in the name";
  if (c == ' ') return "space in the name";
  return std::string("'") + static_cast<char>(c) +
         "' is not allowed in a host name (letters, digits, hyphens and dots)";
}

// inet_aton(3) reads a last label of digits ("127.1", "2130706433", octal "0177") or of
// "0x" and hex digits as part of an IPv4 address, and getaddrinfo(3) with it.
bool IsNumericLabel(std::string_view label) {
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
    return std::all_of(label.begin() + 2, label.end(), [](char c) { return IsHex(c); });
  }
  return std::all_of(label.begin(), label.end(), [](char c) { return IsDigit(c); });
}

// Fills `out` with the normalised name and returns an empty string, or returns why `name`
// is refused. `out` has one byte for each byte of `name` (the trailing dot aside), so a
// label's bounds in `name` are its bounds in `out`.
std::string Normalize(std::string_view name, std::string& out) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty()) return "empty name";
  if (name.size() > kMaxNameLength) return "longer than 253 bytes";
  out.clear();
  out.reserve(name.size());
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '.') {
      unsigned char c = static_cast<unsigned char>(name[i]);
      if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
      if (!IsLdh(c)) return CharProblem(c);
      out += static_cast<char>(c);
      continue;
    }
    // A label ends at i: a dot or the end.
    size_t len = i - start;
    if (len == 0) return "empty label (a leading dot or \"..\")";
    if (len > kMaxLabelLength) return "label longer than 63 bytes";
    if (out[start] == '-' || out[i - 1] == '-') return "label starts or ends with a hyphen";
    if (i < name.size()) {
      out += '.';
      start = i + 1;
    }
  }
  if (IsNumericLabel(std::string_view(out).substr(start))) {
    return "an IP address, not a host name (the last label is a number)";
  }
  return {};
}

}  // namespace

bool IsAddressLiteral(std::string_view s) {
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  if (s.empty()) return false;
  if (s.front() == '[' || s.find(':') != std::string_view::npos) return true;
  std::string last(s.substr(s.rfind('.') == std::string_view::npos ? 0 : s.rfind('.') + 1));
  for (char& c : last) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return !last.empty() && IsNumericLabel(last);
}

namespace {

Error BadEntry(std::string_view entry, std::string why) {
  return BadInput("allowlist entry", std::string(entry), std::move(why));
}

}  // namespace

std::optional<std::string> NormalizeName(std::string_view name) {
  std::string out;
  if (!Normalize(name, out).empty()) return std::nullopt;
  return out;
}

Result<std::string> CheckName(std::string_view name) {
  std::string out;
  std::string why = Normalize(name, out);
  if (!why.empty()) return BadInput("host name", std::string(name), std::move(why));
  return out;
}

bool HostPattern::Matches(std::string_view normalised, uint16_t want_port) const {
  if (port != 0 && want_port != 0 && want_port != port) return false;
  if (normalised.size() == name.size()) return !subdomains_only && normalised == name;
  // A subdomain: the pattern's name preceded by a dot, so labels match whole.
  return normalised.size() > name.size() && normalised.ends_with(name) &&
         normalised[normalised.size() - name.size() - 1] == '.';
}

std::string HostPattern::Str() const {
  std::string s = subdomains_only ? "*." + name : name;
  if (port != 0) s += ":" + std::to_string(port);
  return s;
}

Result<HostPattern> ParseHostPattern(std::string_view entry) {
  if (entry.empty()) return BadEntry(entry, "empty entry");
  // Addresses first, so that they get a clearer reason than "':' is not allowed".
  if (entry.find('/') != std::string_view::npos) {
    return BadEntry(entry, "an address range, not a host name (addresses are listed apart)");
  }
  if (entry[0] == '[' || std::count(entry.begin(), entry.end(), ':') > 1) {
    return BadEntry(entry, "an IPv6 address, not a host name (addresses are listed apart)");
  }
  HostPattern p;
  std::string_view host = entry;
  if (size_t colon = entry.find(':'); colon != std::string_view::npos) {
    host = entry.substr(0, colon);
    std::string_view digits = entry.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return IsDigit(c); })) {
      return BadEntry(entry, "the port must be a number from 1 to 65535");
    }
    uint32_t port = 0;
    for (char c : digits) port = port * 10 + static_cast<uint32_t>(c - '0');
    if (port == 0 || port > 65535) return BadEntry(entry, "port out of range 1-65535");
    p.port = static_cast<uint16_t>(port);
  }
  if (host == "*") {
    return BadEntry(entry, "'*' alone would allow every host: that is the open posture");
  }
  if (host.starts_with("*.")) {
    p.subdomains_only = true;
    host.remove_prefix(2);
  }
  if (host.find('*') != std::string_view::npos) {
    return BadEntry(entry, "a wildcard may only be the whole leftmost label, as in *.example.com");
  }
  std::string why = Normalize(host, p.name);
  if (!why.empty()) return BadEntry(entry, std::move(why));
  return p;
}

Result<Allowlist> Allowlist::Parse(const std::vector<std::string>& entries) {
  Allowlist list;
  list.patterns_.reserve(entries.size());
  for (const std::string& e : entries) list.patterns_.push_back(BRIG_TRY(ParseHostPattern(e)));
  return list;
}

bool Allowlist::Allows(std::string_view name, uint16_t port) const {
  std::optional<std::string> n = NormalizeName(name);
  if (!n) return false;
  // A linear scan: profiles list tens of hosts, not thousands.
  return std::any_of(patterns_.begin(), patterns_.end(),
                     [&](const HostPattern& p) { return p.Matches(*n, port); });
}

}  // namespace brig::egress
