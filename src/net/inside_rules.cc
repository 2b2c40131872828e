#include "net/inside_rules.h"

#include <netinet/in.h>

#include <algorithm>
#include <sstream>

#include "net/loopback.h"

namespace brig::net {

Result<Direct> ParseDirect(std::string_view s) {
  auto bad = [&](const std::string& why) {
    return BadInput("direct", std::string(s), why + " (tcp:CIDR[:PORT] or udp:CIDR[:PORT])");
  };
  Direct d;
  if (s.rfind("tcp:", 0) == 0) {
    d.tcp = true;
  } else if (s.rfind("udp:", 0) == 0) {
    d.tcp = false;
  } else {
    return bad("no protocol");
  }
  std::string_view rest = s.substr(4);
  size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    std::string_view port = rest.substr(colon + 1);
    uint64_t v = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || (v = v * 10 + (c - '0')) > 65535) return bad("a bad port");
    }
    if (port.empty() || v == 0) return bad("a bad port");
    d.port = static_cast<uint16_t>(v);
    rest = rest.substr(0, colon);
  }
  size_t slash = rest.find('/');
  auto addr = ParseIpv4(rest.substr(0, slash));
  if (!addr) return bad("a bad address");
  if (slash != std::string_view::npos) {
    std::string_view len = rest.substr(slash + 1);
    if (len.empty() || len.size() > 2 ||
        !std::all_of(len.begin(), len.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return bad("a bad prefix length");
    }
    d.prefix = std::stoi(std::string(len));
    if (d.prefix > 32) return bad("a bad prefix length");
  }
  uint32_t mask = d.prefix == 0 ? 0 : ~0u << (32 - d.prefix);
  if ((addr->v & ~mask) != 0) return bad("host bits set in the network");
  d.network = *addr;
  return d;
}

std::string InsideRules(const std::optional<ListenerPorts>& l, const std::vector<Direct>& direct,
                        uint32_t mark) {
  std::ostringstream s;
  s << "table inet brig {\n"
    << "  chain nat_out {\n"
    << "    type nat hook output priority -100; policy accept;\n"
    << (mark ? "    meta mark " + std::to_string(mark) + " return\n" : "")
    << "    oif \"lo\" return\n";
  if (l) {
    s << "    meta nfproto ipv4 udp dport 53 redirect to :" << l->dns_udp << "\n"
      << "    meta nfproto ipv4 tcp dport 53 redirect to :" << l->dns_tcp << "\n"
      << "    meta nfproto ipv4 tcp dport 80 redirect to :" << l->http << "\n"
      << "    meta nfproto ipv4 tcp dport 443 redirect to :" << l->https << "\n";
  }
  s << "  }\n"
    << "  chain filter_out {\n"
    << "    type filter hook output priority 0; policy drop;\n"
    << "    oif \"lo\" accept\n"
    << "    ip daddr 127.0.0.1 ct status dnat accept\n"
    << "    ct state established,related accept\n"
    << (mark ? "    meta mark " + std::to_string(mark) + " accept\n" : "");
  for (const Direct& d : direct) {
    s << "    ip daddr " << d.network.Str() << "/" << d.prefix << " " << (d.tcp ? "tcp" : "udp");
    if (d.port) s << " dport " << d.port;
    s << " accept\n";
  }
  s << "    meta l4proto tcp reject with tcp reset\n"
    << "    reject with icmpx admin-prohibited\n"
    << "  }\n"
    << "}\n";
  return s.str();
}

Result<std::optional<Listeners>> SetUpInside(const std::optional<ListenerPorts>& ports,
                                             const std::vector<Direct>& direct, uint32_t mark) {
  BRIG_TRY_CTX(BringUpLoopback(), "loopback");
  std::optional<Listeners> listeners;
  if (ports) listeners = BRIG_TRY(Listeners::Open(Ipv4{INADDR_LOOPBACK}, *ports));
  std::optional<ListenerPorts> bound;
  if (listeners) bound = listeners->ports();
  BRIG_TRY_CTX(
      RunNft("add table inet brig\ndelete table inet brig\n" + InsideRules(bound, direct, mark)),
      "rules");
  return listeners;
}

}  // namespace brig::net
