// libFuzzer target: what brig's network code reads from a sandbox or an operator. The
// listeners answer DNS queries from the sandbox (RefuseDnsQuery); --subnet, the record
// entries of /run/brig, the address floor's addresses and networks, and the host's
// resolv.conf are parsed (ParseSubnet, ParseEntry, ParseAddress, ParseNetwork,
// ParseResolvConf). Besides "no crash, no UB":
// a refusal is the query with only the flags changed, never a reply to a reply; a parsed
// subnet prints back as itself; a parsed entry names only brig's own links and files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/floor.h"
#include "egress/upstream.h"
#include "fuzz_common.h"
#include "net/listeners.h"
#include "net/network.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;
  std::string_view s(reinterpret_cast<const char*>(data), size);

  std::string r = brig::net::RefuseDnsQuery(s);
  if (!r.empty()) {
    FUZZ_CHECK(r.size() == s.size());
    FUZZ_CHECK((static_cast<uint8_t>(s[2]) & 0x80) == 0);
    FUZZ_CHECK((static_cast<uint8_t>(r[2]) & 0x80) != 0 && r[3] == 5);
    FUZZ_CHECK(r.substr(0, 2) == s.substr(0, 2) && r.substr(4) == s.substr(4));
    FUZZ_CHECK(brig::net::RefuseDnsQuery(r).empty());
  } else {
    FUZZ_CHECK(s.size() < 12 || (static_cast<uint8_t>(s[2]) & 0x80) != 0);
  }

  if (auto sub = brig::net::ParseSubnet(s)) {
    FUZZ_CHECK(sub->Str() == s);
    FUZZ_CHECK(sub->prefix >= 8 && sub->prefix <= 30);
  } else {
    brig::fuzz::CheckRendersOneLine(sub.error());
  }

  if (auto e = brig::net::ParseEntry(std::string(s))) {
    FUZZ_CHECK(e->rules.port.rfind(brig::net::kPortPrefix, 0) == 0);
    FUZZ_CHECK(e->rules.port.size() < 16);
    FUZZ_CHECK(e->lease.rfind(std::string(brig::net::kStateDir) + "/", 0) == 0);
    FUZZ_CHECK(e->lease.find("/..") == std::string::npos);
  } else {
    brig::fuzz::CheckRendersOneLine(e.error());
  }
  // The address floor reads addresses and networks from profiles: an address prints
  // back as one that parses to itself, and its IPv4-mapped spelling is judged the same.
  if (auto a = brig::egress::ParseAddress(s)) {
    auto again = brig::egress::ParseAddress(a->Str());
    FUZZ_CHECK(again && *again == *a);
    if (a->v4) {
      auto mapped = brig::egress::ParseAddress("::ffff:" + a->Str());
      FUZZ_CHECK(mapped && brig::egress::FloorReason(*mapped) == brig::egress::FloorReason(*a));
    }
  }
  // resolv.conf: every nameserver found prints as an address that parses back.
  for (const auto& a : brig::egress::ParseResolvConf(s)) {
    FUZZ_CHECK(brig::egress::ParseAddress(a.Str()).has_value());
  }
  if (auto n = brig::egress::ParseNetwork(s)) {
    FUZZ_CHECK(n->Contains(n->base));
  } else {
    brig::fuzz::CheckRendersOneLine(n.error());
  }
  return 0;
}
