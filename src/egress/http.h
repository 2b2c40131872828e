// The head of the first HTTP/1.x request a sandbox's client sends on port 80, read for the
// host it is meant for: the proxy checks that name against the allowlist and passes the
// bytes on untouched. Strict where a lenient reader and the upstream server could disagree
// about the host (RFC 9112 3.2, 5.1, 5.2; RFC 9110 7.2). Pure; unit-tested and fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/peek.h"

namespace brig::egress {

// The longest request head brig reads, its final empty line included.
inline constexpr size_t kMaxHttpHead = 16384;

struct HttpRequestHead {
  std::string method;
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  // The Host header's (or the absolute-form target's) name through NormalizeName. Empty
  // only for an HTTP/1.0 request that has neither: the proxy then has no name to check.
  std::string host;
  uint16_t port = 0;  // the port given with the host; 0 when none was (so 80)
  size_t end = 0;     // the head's size, its final CRLF included
};

using HttpParse = Peek<HttpRequestHead>;

// `bytes` is everything the client has sent so far. Every line ends in CRLF (a bare CR or
// LF is malformed, not tolerated, so no two readers split lines differently). The request
// line is a method token, an origin-form target ("/..."), an absolute-form one
// ("http://host[:port]/..."), or "*" for OPTIONS, and HTTP/1.0 or HTTP/1.1; CONNECT is
// refused. Header names are tokens with the colon right after them; obs-fold, NULs and other
// control bytes are refused. There must be at most one Host (exactly one for HTTP/1.1),
// "host[:port]", with a name NormalizeName accepts (so no IP literal, no userinfo); an
// absolute-form target must name the same host and port (80 when none is given).
// Every proper prefix of a valid head is kNeedMore; a line is checked as far as it has
// arrived, so a first byte that cannot start a method is kMalformed at once. A head that
// has not ended within kMaxHttpHead bytes is kMalformed. Bytes after the head are not read.
HttpParse ParseHttpHost(std::string_view bytes);

// What the proxy answers a refused request with before it closes: `status` (400, 403 or
// 502) and a one-line plain-text body "brig: " + why.
std::string HttpRefusal(int status, std::string_view why);

}  // namespace brig::egress
