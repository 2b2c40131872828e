// The resolver's upstream: the host's own nameservers from /etc/resolv.conf (or the ones
// `--dns-upstream` will name). Only allowlisted names are ever sent there. Pure parsing;
// unit-tested and fuzzed.
#pragma once

#include <string_view>
#include <vector>

#include "brig/result.h"
#include "egress/floor.h"

namespace brig::egress {

// The "nameserver ADDRESS" lines of a resolv.conf, in order; other lines, comments ('#'
// and ';') and malformed addresses are passed over, as the C library does. A loopback
// nameserver (a local caching resolver) is kept: it is the host's, not the sandbox's.
std::vector<Address> ParseResolvConf(std::string_view text);

}  // namespace brig::egress
