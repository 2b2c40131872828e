// The host's nameservers as the resolver's upstream, from resolv.conf text.
#include <gtest/gtest.h>

#include "egress/upstream.h"

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

}  // namespace
}  // namespace brig::egress
