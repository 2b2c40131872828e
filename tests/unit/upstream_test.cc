// The host's nameservers as the resolver's upstream, from resolv.conf text.
#include <gtest/gtest.h>

#include "egress/upstream.h"
#include "testlib/testlib.h"
#include "util/files.h"

namespace brig::egress {
namespace {

std::vector<std::string> Strs(const std::vector<Address>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.Str());
  return out;
}

TEST(ResolvConf, NameserversInOrder) {
  EXPECT_EQ(Strs(ParseResolvConf("# generated\nsearch example.com\n"
                                 "nameserver 198.51.100.53\n"
                                 "  nameserver\t2001:db8::53  # second\n"
                                 "options edns0\nnameserver 127.0.0.53\n")),
            (std::vector<std::string>{"198.51.100.53", "2001:db8::53", "127.0.0.53"}));
}

TEST(ResolvConf, MalformedLinesArePassedOver) {
  EXPECT_TRUE(ParseResolvConf("").empty());
  EXPECT_TRUE(ParseResolvConf("nameserver\nnameservers 1.1.1.1\nnameserver not-an-ip\n"
                              "; nameserver 1.1.1.1\nnameserver fe80::1%eth0\n"
                              "nameserver1.1.1.1\n")
                  .empty());
  EXPECT_EQ(Strs(ParseResolvConf("nameserver 192.0.2.1\r\nnameserver 192.0.2.2")),
            (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
}

TEST(DnsUpstream, AddressWithOrWithoutPort) {
  auto u = ParseUpstream("198.51.100.53");
  ASSERT_TRUE(u) << u.error().Render();
  EXPECT_EQ(u->Str(), "198.51.100.53:53");
  u = ParseUpstream("127.0.0.1:5353");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->addr, 0x7f000001u);
  EXPECT_EQ(u->port, 5353);
  for (const char* bad : {"", ":53", "198.51.100.53:", "198.51.100.53:0", "198.51.100.53:65536",
                          "198.51.100.53:5x", "198.51.100.53:+53", "2001:db8::53", "[::1]:53",
                          "resolver.test", "198.51.100.53:53:53", "1.2.3.4:000053"}) {
    auto b = ParseUpstream(bad);
    ASSERT_FALSE(b) << bad;
    EXPECT_EQ(b.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(b.error().Render().rfind("--dns-upstream", 0), 0u) << b.error().Render();
  }
}

TEST(DnsUpstream, TheHostsIpv4NameserversOrAClearError) {
  brig::testing::ScratchDir dir;
  std::string path = dir.path() + "/resolv.conf";
  ASSERT_TRUE(util::WriteFileAtomic(path, "nameserver 2001:db8::53\nnameserver 192.0.2.53\n"));
  auto ups = HostUpstreams(path);
  ASSERT_TRUE(ups) << ups.error().Render();
  ASSERT_EQ(ups->size(), 1u);
  EXPECT_EQ((*ups)[0].Str(), "192.0.2.53:53");
  ASSERT_TRUE(util::WriteFileAtomic(path, "nameserver 2001:db8::53\n"));
  ups = HostUpstreams(path);
  ASSERT_FALSE(ups);
  EXPECT_NE(ups.error().Render().find("--dns-upstream"), std::string::npos) << ups.error().Render();
  EXPECT_FALSE(HostUpstreams(dir.path() + "/missing"));
}

}  // namespace
}  // namespace brig::egress
