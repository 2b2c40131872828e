#include "pod/rules.h"

#include <sstream>

namespace brig::pod {

std::string PodRules(const std::optional<net::ListenerPorts>& l,
                     const std::vector<Direct>& direct) {
  std::ostringstream s;
  s << "table inet brig {\n"
    << "  chain nat_out {\n"
    << "    type nat hook output priority -100; policy accept;\n"
    << "    meta mark " << kMark << " return\n"
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
    << "    meta mark " << kMark << " accept\n";
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

}  // namespace brig::pod
