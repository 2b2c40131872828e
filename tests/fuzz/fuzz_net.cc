// libFuzzer target: what brig's network code reads from an operator or the host: --subnet,
// the record entries of /run/brig, the address floor's addresses and networks, the host's
// resolv.conf and --dns-upstream (ParseSubnet, ParseEntry, ParseAddress, ParseNetwork,
// ParseResolvConf, ParseUpstream). Besides "no crash, no UB": a parsed subnet prints back
// as itself; a parsed entry names only brig's own links and files; a parsed upstream
// prints back as itself with its port.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/floor.h"
#include "egress/upstream.h"
#include "fuzz_common.h"
#include "net/network.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;
  std::string_view s(reinterpret_cast<const char*>(data), size);

  if (auto sub = brig::net::ParseSubnet(s)) {
    FUZZ_CHECK(sub->Str() == s);
    FUZZ_CHECK(sub->prefix >= 8 && sub->prefix <= 30);
  } else {
    brig::fuzz::CheckRendersOneLine(sub.error());
  }

  if (auto e = brig::net::ParseEntry(std::string(s))) {
    FUZZ_CHECK(e->rules.port.rfind(brig::net::kPortPrefix, 0) == 0);
    FUZZ_CHECK(e->rules.port.size() < 16);
    FUZZ_CHECK(e->lease.rfind(brig::net::StateDir() + "/", 0) == 0);
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
  if (auto u = brig::egress::ParseUpstream(s)) {
    auto again = brig::egress::ParseUpstream(u->Str());
    FUZZ_CHECK(again && again->addr == u->addr && again->port == u->port && u->port != 0);
  } else {
    brig::fuzz::CheckRendersOneLine(u.error());
  }
  if (auto n = brig::egress::ParseNetwork(s)) {
    FUZZ_CHECK(n->Contains(n->base));
  } else {
    brig::fuzz::CheckRendersOneLine(n.error());
  }
  return 0;
}
