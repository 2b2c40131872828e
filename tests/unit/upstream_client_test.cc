// The resolver's upstream client and the egress budget (issue 16, item 11): every query
// it writes upstream is charged, retries included, and a query the budget cannot pay for
// whole is not sent. The upstream is a UDP socket on loopback that never answers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "egress/budget.h"
#include "egress/upstream_client.h"

namespace brig::egress {
namespace {

using namespace std::chrono_literals;

// A silent upstream: what reached it, one datagram at a time.
struct Silent {
  sys::UniqueFd fd{socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  Upstream Bind() {
    sockaddr_in a = Sockaddr(INADDR_LOOPBACK, 0);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    return Upstream{INADDR_LOOPBACK, ntohs(a.sin_port)};
  }
  // The size of the next datagram, -1 if none is waiting (loopback delivers at once).
  ssize_t Next() {
    char buf[512];
    return recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
  }
};

TEST(UpstreamBudget, EveryTryIsChargedAndTheOneItCannotPayForIsNotSent) {
  Silent up;
  Policy policy;
  policy.upstreams = {up.Bind()};
  Loop loop;
  ASSERT_TRUE(loop.Open());
  int audited = 0;
  const size_t each = BuildQuery(1, "x.allowed.test", kTypeA).size();
  Budget budget(2 * each + each / 2, [&](v1::AuditEvent) { ++audited; });
  UpstreamClient client(policy, loop, &budget);
  ASSERT_TRUE(client.Open());
  int done = 0;
  Resolution last;
  client.Resolve("x.allowed.test", [&](const Resolution& r) { ++done, last = r; });
  EXPECT_EQ(up.Next(), static_cast<ssize_t>(each));
  EXPECT_EQ(budget.sent(), each);
  client.Tick(Clock::now() + 2s);  // no answer: the retry is charged too
  EXPECT_EQ(up.Next(), static_cast<ssize_t>(each));
  EXPECT_EQ(budget.sent(), 2 * each);
  EXPECT_EQ(done, 0);
  client.Tick(Clock::now() + 4s);  // the third try: half of it is left, so none of it goes
  EXPECT_EQ(up.Next(), -1);
  EXPECT_EQ(budget.sent(), 2 * each);
  EXPECT_TRUE(budget.exceeded());
  EXPECT_EQ(audited, 1);
  ASSERT_EQ(done, 1);
  EXPECT_TRUE(last.over_budget);
  EXPECT_NE(last.error.find("egress budget"), std::string::npos) << last.error;
  EXPECT_EQ(budget.hosts().at("x.allowed.test"), 2 * each);
  // Past the budget, a new name is refused at once and never sent.
  client.Resolve("y.allowed.test", [&](const Resolution& r) { ++done, last = r; });
  EXPECT_EQ(done, 2);
  EXPECT_TRUE(last.over_budget);
  EXPECT_EQ(up.Next(), -1);
}

TEST(UpstreamBudget, WithoutABudgetNothingIsRefused) {
  Silent up;
  Policy policy;
  policy.upstreams = {up.Bind()};
  Loop loop;
  ASSERT_TRUE(loop.Open());
  UpstreamClient client(policy, loop);
  ASSERT_TRUE(client.Open());
  client.Resolve("x.allowed.test", [](const Resolution&) {});
  EXPECT_GT(up.Next(), 0);
}

}  // namespace
}  // namespace brig::egress
