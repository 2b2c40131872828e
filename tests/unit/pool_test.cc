// brig's address pool, which ties a proxied connection to the one name its dialed address
// was handed out for, and the resolver's rate limit.
#include <gtest/gtest.h>

#include <set>

#include "http/framing.h"
#include "egress/pool.h"

namespace brig::egress {
namespace {

TEST(NamePool, OneAddressPerNameAndBack) {
  NamePool pool;
  auto a = pool.AddressFor("allowed.test");
  auto b = pool.AddressFor("other.test");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, 0xc6120001u) << "198.18.0.1";
  EXPECT_NE(*a, *b);
  EXPECT_EQ(pool.AddressFor("allowed.test"), a) << "stable for the sandbox's life";
  ASSERT_NE(pool.NameAt(*a), nullptr);
  EXPECT_EQ(*pool.NameAt(*a), "allowed.test");
  EXPECT_EQ(*pool.NameAt(*b), "other.test");
  EXPECT_EQ(pool.size(), 2u);
}

TEST(NamePool, AddressesItDidNotHandOutNameNothing) {
  NamePool pool;
  ASSERT_TRUE(pool.AddressFor("allowed.test"));
  for (uint32_t addr : {0xc6120000u /* the network */, 0xc6120002u /* not yet given */,
                        0xc613ffffu, 0xc6140001u /* 198.20.0.1: outside */,
                        0xc6110001u /* 198.17.0.1 */, 0x0a000001u, 0u, 0xffffffffu}) {
    EXPECT_EQ(pool.NameAt(addr), nullptr) << std::hex << addr;
  }
  EXPECT_TRUE(NamePool::Contains(0xc6120000u));
  EXPECT_TRUE(NamePool::Contains(0xc613ffffu));
  EXPECT_FALSE(NamePool::Contains(0xc6140000u));
  EXPECT_FALSE(NamePool::Contains(0xc611ffffu));
}

TEST(NamePool, FullMeansNoNewNamesButOldOnesStay) {
  NamePool pool(3);
  std::set<uint32_t> seen;
  for (const char* n : {"a.test", "b.test", "c.test"}) {
    auto a = pool.AddressFor(n);
    ASSERT_TRUE(a) << n;
    seen.insert(*a);
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(pool.full());
  EXPECT_FALSE(pool.AddressFor("d.test"));
  EXPECT_FALSE(pool.Has("d.test"));
  EXPECT_TRUE(pool.Has("b.test"));
  EXPECT_TRUE(pool.AddressFor("b.test"));
  // Never more than the range holds, whatever is asked for.
  NamePool huge(size_t{1} << 40);
  EXPECT_TRUE(huge.AddressFor("x.test"));
}

TEST(TokenBucket, BurstThenRate) {
  TokenBucket b(10, 5);
  auto t = TokenBucket::Clock::time_point{} + std::chrono::hours(1);
  int taken = 0;
  for (int i = 0; i < 20; ++i) taken += b.Take(t);
  EXPECT_EQ(taken, 5) << "the burst";
  EXPECT_FALSE(b.Take(t + std::chrono::milliseconds(50))) << "half a token";
  EXPECT_TRUE(b.Take(t + std::chrono::milliseconds(100)));
  taken = 0;
  for (int i = 0; i < 20; ++i) taken += b.Take(t + std::chrono::seconds(100));
  EXPECT_EQ(taken, 5) << "saved up to the burst, no more";
  EXPECT_FALSE(b.Take(t)) << "a clock going back gives nothing";
}

TEST(HttpRefusal, IsAWellFormedResponse) {
  for (int status : {400, 403, 405, 431, 501, 502}) {
    std::string r = http::Refusal(status, "brig: not_allowlisted: denied.test on port 80");
    EXPECT_EQ(r.rfind("HTTP/1.1 " + std::to_string(status) + " ", 0), 0u) << r;
    size_t body = r.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    EXPECT_NE(r.find("Content-Length: " + std::to_string(r.size() - body - 4) + "\r\n"),
              std::string::npos) << r;
    EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos);
    EXPECT_EQ(r.substr(body + 4), "brig: not_allowlisted: denied.test on port 80\n");
  }
}

}  // namespace
}  // namespace brig::egress
