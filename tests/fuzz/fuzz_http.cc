// libFuzzer target: the proxy's Host peek on port 80 (egress/http.h). Besides "no crash,
// no UB": the answer only firms up as bytes arrive (a prefix that is kOk or kMalformed keeps
// that answer however the stream goes on), a parsed head ends in its empty line and reads
// the same alone, and its host is a normalised host name that a reference reading of the
// Host line agrees with.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/allowlist.h"
#include "egress/http.h"
#include "fuzz_common.h"

namespace {

using brig::egress::HttpParse;
using Status = HttpParse::Status;

bool Same(const HttpParse& a, const HttpParse& b) {
  return a.status == b.status && a.why == b.why && a.value.method == b.value.method &&
         a.value.minor_version == b.value.minor_version && a.value.host == b.value.host &&
         a.value.port == b.value.port && a.value.end == b.value.end;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The value of the one Host line of a head that parsed, found the simple way.
std::string_view HostLine(std::string_view head) {
  std::string_view found;
  int count = 0;
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    size_t next = head.find("\r\n", at + 2);
    std::string_view line = head.substr(at + 2, next - at - 2);
    if (line.size() >= 5 && Lower(line.substr(0, 5)) == "host:") {
      found = line.substr(5);
      ++count;
    }
    at = next;
  }
  FUZZ_CHECK(count <= 1);
  while (!found.empty() && (found.front() == ' ' || found.front() == '\t')) found.remove_prefix(1);
  while (!found.empty() && (found.back() == ' ' || found.back() == '\t')) found.remove_suffix(1);
  return found;
}

HttpParse Check(std::string_view s) {
  HttpParse r = brig::egress::ParseHttpHost(s);
  if (r.status == Status::kMalformed) {
    FUZZ_CHECK(!r.why.empty());
    for (char c : r.why) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20);  // an audit line
    return r;
  }
  FUZZ_CHECK(r.why.empty());
  if (r.status == Status::kNeedMore) {
    FUZZ_CHECK(s.size() < brig::egress::kMaxHttpHead);
    return r;
  }
  const auto& h = r.value;
  FUZZ_CHECK(h.end >= 4 && h.end <= s.size() && h.end <= brig::egress::kMaxHttpHead);
  FUZZ_CHECK(s.substr(h.end - 4, 4) == "\r\n\r\n");
  FUZZ_CHECK(s.substr(0, h.end - 2).find("\r\n\r\n") == std::string_view::npos);
  FUZZ_CHECK(h.minor_version == 0 || h.minor_version == 1);
  FUZZ_CHECK(!h.method.empty() && h.method != "CONNECT");
  FUZZ_CHECK(h.host.empty() || brig::egress::NormalizeName(h.host) == h.host);
  FUZZ_CHECK(!h.host.empty() || h.minor_version == 0);
  std::string_view host = HostLine(s.substr(0, h.end));
  if (!host.empty()) {
    // The name is the line's up to its port, normalised.
    std::string_view name = host.substr(0, host.find(':'));
    FUZZ_CHECK(brig::egress::NormalizeName(name) == h.host);
    FUZZ_CHECK((h.port != 0) == (host.find(':') != std::string_view::npos));
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > brig::egress::kMaxHttpHead + 256) return -1;  // nothing past the bound is read
  std::string_view s(reinterpret_cast<const char*>(data), size);
  HttpParse full = Check(s);
  FUZZ_CHECK(Same(full, brig::egress::ParseHttpHost(s)));

  brig::fuzz::CheckPrefixesAgree(s, full, Check, Same);
  if (full.status == Status::kNeedMore) return 0;
  FUZZ_CHECK(Same(full, brig::egress::ParseHttpHost(std::string(s) + "\n\rx")));
  if (full.status == Status::kOk) {
    FUZZ_CHECK(Same(full, brig::egress::ParseHttpHost(s.substr(0, full.value.end))));
  }
  return 0;
}
