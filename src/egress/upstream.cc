#include "egress/upstream.h"

#include "net/link.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::egress {

std::vector<Address> ParseResolvConf(std::string_view text) {
  std::vector<Address> out;
  for (std::string_view line : util::Split(text, '\n')) {
    if (size_t c = line.find_first_of("#;"); c != std::string_view::npos) line = line.substr(0, c);
    auto blank = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; };
    size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    constexpr std::string_view kKey = "nameserver";
    if (line.substr(i, kKey.size()) != kKey) continue;
    i += kKey.size();
    if (i >= line.size() || !blank(line[i])) continue;
    while (i < line.size() && blank(line[i])) ++i;
    size_t end = i;
    while (end < line.size() && !blank(line[end])) ++end;
    // An IPv6 nameserver may carry a zone ("fe80::1%eth0"), which only the host can use;
    // such an entry is not one brig can reach from its own sockets reliably, so it is
    // passed over like any address that does not parse.
    if (auto a = ParseAddress(line.substr(i, end - i))) out.push_back(*a);
  }
  return out;
}

std::string Upstream::Str() const { return net::Ipv4{addr}.Str() + ":" + std::to_string(port); }

Result<Upstream> ParseUpstream(std::string_view s) {
  std::string_view host = s;
  Upstream u;
  if (size_t colon = s.rfind(':'); colon != std::string_view::npos) {
    host = s.substr(0, colon);
    std::string_view digits = s.substr(colon + 1);
    uint32_t port = 0;
    for (char ch : digits) {
      if (ch < '0' || ch > '9' || port > 65535) break;
      port = port * 10 + static_cast<uint32_t>(ch - '0');
    }
    if (digits.empty() || digits.size() > 5 || port == 0 || port > 65535 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return BadInput("--dns-upstream", std::string(s), "the port must be 1-65535");
    }
    u.port = static_cast<uint16_t>(port);
  }
  auto a = ParseAddress(host);
  if (!a || !a->v4) {
    return BadInput("--dns-upstream", std::string(s), "expected an IPv4 address, with :PORT or not");
  }
  u.addr = static_cast<uint32_t>(a->bytes[12]) << 24 | static_cast<uint32_t>(a->bytes[13]) << 16 |
           static_cast<uint32_t>(a->bytes[14]) << 8 | a->bytes[15];
  return u;
}

Result<std::vector<Upstream>> HostUpstreams(const std::string& resolv_conf) {
  std::string text = BRIG_TRY_CTX(util::ReadFile(resolv_conf), "resolver upstream");
  std::vector<Upstream> out;
  for (const Address& a : ParseResolvConf(text)) {
    if (a.v4) out.push_back(*ParseUpstream(a.Str()));
  }
  if (out.empty()) {
    return Fail("resolver upstream", resolv_conf,
                "names no IPv4 nameserver; give one with --dns-upstream ADDR[:PORT]",
                ErrorKind::kSetup);
  }
  return out;
}

}  // namespace brig::egress
