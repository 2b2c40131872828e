// The address floor: every range design.md names, the IPv6 spellings of IPv4 addresses,
// and a profile's explicit exceptions.
#include <gtest/gtest.h>

#include "egress/floor.h"

namespace brig::egress {
namespace {

std::string Why(const char* a) {
  auto addr = ParseAddress(a);
  EXPECT_TRUE(addr) << a;
  return addr ? FloorReason(*addr) : "unparsed";
}

TEST(Floor, RefusesEveryNonPublicRange) {
  for (const char* a :
       {"127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255",
        "192.168.1.1", "169.254.1.1", "100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3",
        "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.2.1",
        "198.51.100.10", "203.0.113.5", "198.18.0.1", "192.0.0.170", "::", "::1",
        "fe80::1", "fd00::1", "fc00::1", "ff02::1", "2001:db8::1", "100::1", "fec0::1"}) {
    EXPECT_NE(Why(a), "") << a << " is in the floor";
  }
}

TEST(Floor, NamesTheMetadataAddresses) {
  EXPECT_EQ(Why("169.254.169.254"), "cloud metadata");
  EXPECT_EQ(Why("169.254.170.2"), "cloud metadata");
  EXPECT_EQ(Why("fd00:ec2::254"), "cloud metadata");
  EXPECT_EQ(Why("10.0.0.1"), "private (RFC 1918)");
}

TEST(Floor, PublicAddressesPass) {
  for (const char* a : {"1.1.1.1", "8.8.8.8", "151.101.1.1", "172.15.255.255", "172.32.0.0",
                        "100.63.255.255", "100.128.0.0", "2606:4700::1111", "2a00:1450::1"}) {
    EXPECT_EQ(Why(a), "") << a;
  }
}

TEST(Floor, Ipv6SpellingsOfIpv4AreJudgedByTheIpv4Address) {
  EXPECT_EQ(Why("::ffff:169.254.169.254"), "cloud metadata");
  EXPECT_EQ(Why("::ffff:7f00:1"), "loopback");
  EXPECT_EQ(Why("::127.0.0.1"), "loopback (as IPv4-compatible IPv6)");
  EXPECT_EQ(Why("64:ff9b::a9fe:a9fe"), "cloud metadata (as NAT64 IPv6)");
  EXPECT_EQ(Why("2002:a9fe:a9fe::1"), "cloud metadata (as 6to4 IPv6)");
  EXPECT_EQ(Why("2002:c0a8:101::1"), "private (RFC 1918) (as 6to4 IPv6)");
  EXPECT_EQ(Why("64:ff9b::101:101"), "") << "NAT64 of a public address";
  EXPECT_NE(Why("64:ff9b:1::1"), "");
  EXPECT_NE(Why("2001::1"), "") << "Teredo";
  auto mapped = ParseAddress("::ffff:10.0.0.1");
  ASSERT_TRUE(mapped);
  EXPECT_TRUE(mapped->v4);
  EXPECT_EQ(mapped->Str(), "10.0.0.1");
}

TEST(Floor, ExceptionsAreExplicitAddressesOrNetworks) {
  auto f = Floor::WithExceptions({"198.51.100.0/24", "10.9.8.7", "fd12::/16"});
  ASSERT_TRUE(f) << f.error().Render();
  EXPECT_EQ(f->Refuses(*ParseAddress("198.51.100.10")), "");
  EXPECT_EQ(f->Refuses(*ParseAddress("10.9.8.7")), "");
  EXPECT_EQ(f->Refuses(*ParseAddress("fd12::5")), "");
  EXPECT_EQ(f->Refuses(*ParseAddress("10.9.8.8")), "private (RFC 1918)");
  EXPECT_EQ(f->Refuses(*ParseAddress("169.254.169.254")), "cloud metadata");
  EXPECT_EQ(f->Refuses(*ParseAddress("1.1.1.1")), "");
  for (const char* bad : {"", "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/08", "10.0.0.0/", "x",
                          "fd00::1/8", "::/129", "10.0.0.0/8/8"}) {
    EXPECT_FALSE(Floor::WithExceptions({bad})) << bad;
  }
}

TEST(Floor, NoExceptionReachesAMetadataAddress) {
  for (const char* bad : {"169.254.169.254", "169.254.0.0/16", "0.0.0.0/0", "100.100.100.200/32",
                          "169.254.170.0/24", "fd00:ec2::254", "fd00::/8", "::/0"}) {
    auto f = Floor::WithExceptions({"198.51.100.0/24", bad});
    ASSERT_FALSE(f) << bad;
    EXPECT_NE(f.error().Render().find("cloud metadata address"), std::string::npos)
        << f.error().Render();
  }
  EXPECT_TRUE(Floor::WithExceptions({"169.254.0.0/17"})) << "a link-local half without it";
}

}  // namespace
}  // namespace brig::egress
