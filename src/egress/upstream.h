// The resolver's upstream: the host's own nameservers from /etc/resolv.conf, or the one
// `--dns-upstream` names. Only names the posture allows are ever sent there. Pure parsing
// (HostUpstreams reads the file); unit-tested and fuzzed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "egress/floor.h"

namespace brig::egress {

// The "nameserver ADDRESS" lines of a resolv.conf, in order; other lines, comments ('#'
// and ';') and malformed addresses are passed over, as the C library does. A loopback
// nameserver (a local caching resolver) is kept: it is the host's, not the sandbox's.
std::vector<Address> ParseResolvConf(std::string_view text);

struct Upstream {
  uint32_t addr = 0;  // IPv4, host order
  uint16_t port = 53;
  std::string Str() const;
};
// "ADDR" or "ADDR:PORT", IPv4: --dns-upstream. Errors are BadInput("--dns-upstream", ...).
Result<Upstream> ParseUpstream(std::string_view s);
// The host's IPv4 nameservers from /etc/resolv.conf; an error if it names none.
Result<std::vector<Upstream>> HostUpstreams(const std::string& resolv_conf = "/etc/resolv.conf");

}  // namespace brig::egress
