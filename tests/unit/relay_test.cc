// The proxy's byte relay over real sockets (socket pairs; no privileges): bytes both ways,
// the prefix first, half-close in each direction, a large transfer, a peer that vanishes.
#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "egress/relay.h"

namespace brig::egress {
namespace {

struct Pair {
  sys::UniqueFd near, far;  // `near` goes to the relay, the test speaks on `far`
};

Pair MakePair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
  return {sys::UniqueFd(sv[0]), sys::UniqueFd(sv[1])};
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Pumps until `done` holds or the relay ends; the relay's sockets are all nonblocking, so
// this is the level-triggered loop of the supervisor without epoll.
template <typename F>
bool PumpUntil(Relay& r, F done) {
  for (int i = 0; i < 10000; ++i) {
    bool open = r.Pump();
    if (done()) return true;
    if (!open) return done();
  }
  return false;
}

TEST(Relay, PrefixThenBytesBothWays) {
  Pair client = MakePair(), server = MakePair();
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "HELLO ");
  ASSERT_TRUE(r) << r.error().Render();
  ASSERT_EQ(write(client.far.get(), "world", 5), 5);
  std::string got;
  ASSERT_TRUE(PumpUntil(*r, [&] { return (got += ReadAll(server.far.get())) == "HELLO world"; }));
  ASSERT_EQ(write(server.far.get(), "reply", 5), 5);
  std::string back;
  ASSERT_TRUE(PumpUntil(*r, [&] { return (back += ReadAll(client.far.get())) == "reply"; }));
  EXPECT_EQ(r->bytes_up(), 11u);
  EXPECT_EQ(r->bytes_down(), 5u);
}

TEST(Relay, HalfCloseIsPassedOnAndTheOtherWayStaysOpen) {
  Pair client = MakePair(), server = MakePair();
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "");
  ASSERT_TRUE(r);
  ASSERT_EQ(write(client.far.get(), "request", 7), 7);
  ASSERT_EQ(shutdown(client.far.get(), SHUT_WR), 0);
  std::string got;
  char c;
  // The server sees the request, then EOF.
  ASSERT_TRUE(PumpUntil(*r, [&] {
    got += ReadAll(server.far.get());
    return got == "request" && read(server.far.get(), &c, 1) == 0;
  }));
  // It can still answer, and the answer arrives.
  ASSERT_EQ(write(server.far.get(), "response", 8), 8);
  ASSERT_EQ(shutdown(server.far.get(), SHUT_WR), 0);
  std::string back;
  EXPECT_TRUE(PumpUntil(*r, [&] { return (back += ReadAll(client.far.get())) == "response"; }));
  // Both directions closed: the relay is over, and not as a failure.
  EXPECT_FALSE(r->Pump());
  EXPECT_FALSE(r->failed());
}

TEST(Relay, ALargeTransferArrivesWhole) {
  Pair client = MakePair(), server = MakePair();
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "");
  ASSERT_TRUE(r);
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  size_t sent = 0;
  std::string got;
  ASSERT_TRUE(PumpUntil(*r, [&] {
    if (sent < data.size()) {
      ssize_t n = write(client.far.get(), data.data() + sent, data.size() - sent);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    got += ReadAll(server.far.get());
    return got.size() == data.size();
  }));
  EXPECT_TRUE(got == data);
  EXPECT_EQ(r->bytes_up(), data.size());
}

TEST(Relay, AVanishedPeerEndsItAsAFailure) {
  // splice(2) has no MSG_NOSIGNAL: the relay's owner ignores SIGPIPE, as the supervisor
  // will.
  signal(SIGPIPE, SIG_IGN);
  Pair client = MakePair(), server = MakePair();
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "");
  ASSERT_TRUE(r);
  server.far.Reset();
  ASSERT_EQ(write(client.far.get(), "x", 1), 1);
  EXPECT_TRUE(PumpUntil(*r, [&] { return r->failed(); }));
}

TEST(Relay, WantsWhatItCanUse) {
  Pair client = MakePair(), server = MakePair();
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "prefix");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Wanted(r->client()), static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(r->Wanted(r->upstream()), static_cast<uint32_t>(EPOLLIN | EPOLLOUT))
      << "the prefix waits to be written";
  r->Pump();
  EXPECT_EQ(r->Wanted(r->upstream()), static_cast<uint32_t>(EPOLLIN));
}


// The egress budget (issue 16, item 11): the upstream gets exactly the budget, prefix
// included, never one buffer more; the relay then ends as over budget, audited once.
TEST(Relay, StopsAtTheBudgetToTheByte) {
  signal(SIGPIPE, SIG_IGN);
  Pair client = MakePair(), server = MakePair();
  int audited = 0;
  Budget budget(1000, [&](v1::AuditEvent e) {
    ++audited;
    EXPECT_EQ(e.egress_budget().sent(), 1000u);
    ASSERT_EQ(e.egress_budget().hosts_size(), 1);
    EXPECT_EQ(e.egress_budget().hosts(0).name(), "up.test");
  });
  auto r = Relay::Start(std::move(client.near), std::move(server.near), std::string(100, 'p'),
                        &budget, "up.test");
  ASSERT_TRUE(r);
  std::string data(64 << 10, 'x');
  ASSERT_EQ(write(client.far.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  std::string got;
  ASSERT_TRUE(PumpUntil(*r, [&] {
    got += ReadAll(server.far.get());
    return r->over_budget();
  }));
  got += ReadAll(server.far.get());
  EXPECT_EQ(got.size(), 1000u);
  EXPECT_EQ(r->bytes_up(), 1000u);
  EXPECT_EQ(budget.sent(), 1000u);
  EXPECT_TRUE(budget.exceeded());
  EXPECT_EQ(audited, 1);
}

// Bytes that fit the budget exactly do not exceed it.
TEST(Relay, ABudgetMetExactlyIsNotExceeded) {
  Pair client = MakePair(), server = MakePair();
  Budget budget(10, nullptr);
  auto r = Relay::Start(std::move(client.near), std::move(server.near), "", &budget, "up.test");
  ASSERT_TRUE(r);
  ASSERT_EQ(write(client.far.get(), "0123456789", 10), 10);
  std::string got;
  ASSERT_TRUE(PumpUntil(*r, [&] { return (got += ReadAll(server.far.get())) == "0123456789"; }));
  EXPECT_TRUE(r->Pump());
  EXPECT_FALSE(budget.exceeded());
  EXPECT_FALSE(r->over_budget());
}

}  // namespace
}  // namespace brig::egress
