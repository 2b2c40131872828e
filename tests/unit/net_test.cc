// Pure parts of sandbox networking: subnets and addresses, the set elements that are a
// sandbox's rules (in the kernel's layout), record entries, and the listeners' refusals.
#include <gtest/gtest.h>
#include <netinet/in.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>

#include <string>

#include "net/listeners.h"
#include "net/network.h"
#include "net/nft.h"

namespace brig::net {
namespace {

TEST(NetSubnet, ParsesOnlyNetworkAddresses) {
  auto s = ParseSubnet("10.213.0.0/16");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Str(), "10.213.0.0/16");
  EXPECT_EQ(s->Gateway().Str(), "10.213.0.1");
  EXPECT_EQ(s->Size(), 65536u);
  EXPECT_TRUE(s->Contains(*ParseIpv4("10.213.255.254")));
  EXPECT_FALSE(s->Contains(*ParseIpv4("10.214.0.1")));
  EXPECT_TRUE(s->Overlaps(*ParseIpv4("10.0.0.0"), 8));
  EXPECT_TRUE(s->Overlaps(*ParseIpv4("10.213.7.0"), 24));
  EXPECT_FALSE(s->Overlaps(*ParseIpv4("10.214.0.0"), 16));
  for (const char* bad : {"", "10.213.0.0", "10.213.0.1/16", "10.213.0.0/7", "10.213.0.0/31",
                          "10.213.0.0/x", "10.213.0.0/016x", "10.213.0.0/016", "300.1.1.0/24",
                          "fd00::/8", "10.213.0.0/"}) {
    EXPECT_FALSE(ParseSubnet(bad)) << bad;
  }
  // Found by fuzz_net: a NUL ended the address early for inet_pton.
  EXPECT_FALSE(ParseSubnet(std::string_view("10.213.0.0\0\x1f/16", 15)));
}

TEST(NetSubnet, MacIsLocalUnicastAndFollowsTheAddress) {
  Mac m = MacFor(*ParseIpv4("10.213.1.2"));
  EXPECT_EQ(MacStr(m), "02:62:72:d5:01:02");
  EXPECT_EQ(m[0] & 1, 0) << "multicast bit";
  EXPECT_EQ(m[0] & 2, 2) << "locally administered bit";
}

PortRules Rules() {
  PortRules r;
  r.id = "brig-0123456789ab";
  r.port = "bv0123456789ab";
  r.addr = *ParseIpv4("10.213.0.5");
  r.mac = MacFor(r.addr);
  r.listeners = {40080, 40443, 40053, 40054};
  return r;
}

TEST(NetRules, ElementsAreInTheKernelsLayout) {
  auto sets = PortElements(Rules(), *ParseIpv4("10.213.0.1"));
  ASSERT_EQ(sets.size(), 6u);
  std::string port("bv0123456789ab\0\0", 16);
  std::string mac("\x02\x62\x72\xd5\x00\x05\0\0", 8);
  std::string addr("\x0a\xd5\x00\x05", 4), gw("\x0a\xd5\x00\x01", 4);
  EXPECT_EQ(sets[0].set, "ports_mac");
  EXPECT_EQ(sets[0].family, NFPROTO_BRIDGE);
  EXPECT_EQ(sets[0].elems.at(0).key, port + mac);
  EXPECT_EQ(sets[1].elems.at(0).key, port + addr);
  EXPECT_EQ(sets[2].elems.at(0).key, port + mac + addr + gw);
  EXPECT_EQ(sets[3].set, "redirect_tcp");
  EXPECT_EQ(sets[3].family, NFPROTO_INET);
  ASSERT_EQ(sets[3].elems.size(), 3u);
  EXPECT_EQ(sets[3].elems[0].key, addr + std::string("\x00\x50\0\0", 4));  // 80, padded
  EXPECT_EQ(sets[3].elems[0].data, std::string("\x9c\x90", 2));           // 40080
  EXPECT_EQ(sets[4].elems.at(0).data, std::string("\x9c\x76", 2));        // 40054
  ASSERT_EQ(sets[5].elems.size(), 4u);
  EXPECT_EQ(sets[5].elems[3].key,
            addr + std::string("\x11\0\0\0", 4) + std::string("\x9c\x76\0\0", 4));  // udp
}

TEST(NetRecord, EntryRoundTripsAndRefusesWhatBrigWouldNotWrite) {
  std::string good =
      "4026531840,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,"
      "/run/brig/net/4026531840/addr/10.213.0.5,40080,40443,40053,40054";
  auto e = ParseEntry(good);
  ASSERT_TRUE(e) << e.error().Render();
  EXPECT_EQ(e->netns, "4026531840");
  EXPECT_EQ(e->rules.port, "bv0123456789ab");
  EXPECT_EQ(e->rules.addr.Str(), "10.213.0.5");
  EXPECT_EQ(e->gateway.Str(), "10.213.0.1");
  EXPECT_EQ(e->rules.listeners.dns_udp, 40054);
  // Ten fields: a brig that did not note the namespace's cookie.
  EXPECT_EQ(e->ns.ino, 4026531840u);
  EXPECT_EQ(e->ns.cookie, 0u);
  auto c = ParseEntry(good + ",4107");
  ASSERT_TRUE(c) << c.error().Render();
  EXPECT_EQ(c->ns.ino, 4026531840u);
  EXPECT_EQ(c->ns.cookie, 4107u);
  const std::string bad[] = {
      good + ",",
      good + ",x",
      good + ",1,2",
      // a namespace that is not an inode number
      "netns,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,"
      "/run/brig/net/netns/addr/10.213.0.5,40080,40443,40053,40054",
      "",
      "1,2,3",
      // a link brig does not own
      "4026531840,brig-0123456789ab,eth0,10.213.0.5,10.213.0.1,"
      "/run/brig/net/4026531840/addr/10.213.0.5,1,2,3,4",
      // a lease outside brig's state, or escaping it
      "4026531840,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,/etc/passwd,1,2,3,4",
      "4026531840,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,"
      "/run/brig/net/4026531840/addr/../../../../etc/passwd,1,2,3,4",
      // ports out of range or not numbers
      "4026531840,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,"
      "/run/brig/net/4026531840/addr/10.213.0.5,70000,2,3,4",
      "4026531840,brig-0123456789ab,bv0123456789ab,10.213.0.5,10.213.0.1,"
      "/run/brig/net/4026531840/addr/10.213.0.5,-1,2,3,4",
      "4026531840,brig-0123456789ab,bv0123456789ab,not-an-ip,10.213.0.1,"
      "/run/brig/net/4026531840/addr/10.213.0.5,1,2,3,4",
  };
  for (const auto& b : bad) EXPECT_FALSE(ParseEntry(b)) << b;
}

// The same namespace when both keys say so; a key without a cookie goes by the inode.
TEST(NetRecord, NamespaceKeysTellAReusedInodeApart) {
  EXPECT_TRUE((NetnsKey{7, 100}).Matches({7, 100}));
  EXPECT_FALSE((NetnsKey{7, 100}).Matches({7, 101}));
  EXPECT_FALSE((NetnsKey{7, 100}).Matches({8, 100}));
  EXPECT_TRUE((NetnsKey{7, 0}).Matches({7, 101}));
  EXPECT_TRUE((NetnsKey{7, 100}).Matches({7, 0}));
}

}  // namespace
}  // namespace brig::net
