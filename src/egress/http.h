// The name a plain-HTTP request on port 80 is for, as the proxy checks it: its Host
// header's value (the framing, http/framing.h, has made sure there is exactly one, and that
// an absolute-form target names the same). Strict where a lenient reader and the upstream
// server could disagree about the host (RFC 9110 7.2). Pure; unit-tested and fuzzed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "egress/peek.h"

namespace brig::egress {

struct HostPort {
  std::string name;   // through NormalizeName
  uint16_t port = 0;  // the port given with the name; 0 when none was (so 80)
};

using HostParse = Peek<HostPort>;

// "host[:port]" with a name NormalizeName accepts (so no IP literal, no userinfo) and a
// port 1-65535: kOk, or kMalformed and why (with `address` set for an IP literal, which
// the proxy refuses as a policy answer). Never kNeedMore.
HostParse ParseHost(std::string_view value);

}  // namespace brig::egress
