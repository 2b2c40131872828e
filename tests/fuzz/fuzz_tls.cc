// libFuzzer target: the proxy's ClientHello peek (egress/tls.h). Besides "no crash, no UB":
// the answer only firms up as bytes arrive (a prefix that is kOk or kMalformed keeps that
// answer, and its hello, however the stream goes on), a hello parses the same cut into
// records of another size, and a server_name is a normalised host name.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/allowlist.h"
#include "egress/tls.h"
#include "fuzz_common.h"

namespace {

using brig::egress::HelloParse;
using Status = HelloParse::Status;

bool Same(const HelloParse& a, const HelloParse& b) {
  return a.status == b.status && a.why == b.why && a.value.version == b.value.version &&
         a.value.sni == b.value.sni && a.value.ech == b.value.ech && a.value.esni == b.value.esni;
}

HelloParse Check(std::string_view s) {
  HelloParse r = brig::egress::ParseClientHello(s);
  if (r.status == Status::kMalformed) {
    FUZZ_CHECK(!r.why.empty());
    for (char c : r.why) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20);  // an audit line
  } else {
    FUZZ_CHECK(r.why.empty());
  }
  if (r.status == Status::kOk) {
    FUZZ_CHECK(r.value.version >= 0x0301 && r.value.version <= 0x0303);
    FUZZ_CHECK(r.value.sni.empty() || brig::egress::NormalizeName(r.value.sni) == r.value.sni);
  } else {
    FUZZ_CHECK(r.value.sni.empty() && !r.value.ech && !r.value.esni);
  }
  return r;
}

// The payload of the records `s` starts with, the last one as far as it has arrived.
std::string Handshake(std::string_view s) {
  std::string hs;
  while (s.size() > 5) {
    size_t len = static_cast<uint8_t>(s[3]) << 8 | static_cast<uint8_t>(s[4]);
    hs.append(s.substr(5, len));
    s.remove_prefix(std::min(s.size(), 5 + len));
  }
  return hs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Past two full records nothing new is read.
  if (size > 2 * (5 + 16384) + 64) return -1;
  std::string_view s(reinterpret_cast<const char*>(data), size);
  HelloParse full = Check(s);
  FUZZ_CHECK(Same(full, brig::egress::ParseClientHello(s)));

  // Prefixes, every length while short and a sample beyond: once final, an answer stays.
  brig::fuzz::CheckPrefixesAgree(s, full, Check, Same);
  if (full.status == Status::kNeedMore) return 0;
  FUZZ_CHECK(Same(full, brig::egress::ParseClientHello(std::string(s) + "\x16\x03\x01junk")));

  // A hello read whole, cut into records of another size, reads the same. The record
  // version byte of the input is kept (it was checked).
  if (full.status != Status::kOk) return 0;
  std::string hs = Handshake(s);
  size_t frag = 1 + size % 301;
  std::string again;
  for (size_t i = 0; i < hs.size(); i += frag) {
    std::string part = hs.substr(i, frag);
    again += std::string("\x16\x03", 2) + s[2] + static_cast<char>(part.size() >> 8) +
             static_cast<char>(part.size() & 0xff) + part;
  }
  FUZZ_CHECK(Same(full, brig::egress::ParseClientHello(again)));
  return 0;
}
