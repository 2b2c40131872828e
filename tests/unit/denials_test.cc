// The lines brig prints at exit about refused egress (issue 16, item 3; egress/denials.h):
// the reason and its remedy per name, bounded, and the sandbox's bytes made harmless.
#include <gtest/gtest.h>

#include "egress/denials.h"

namespace brig::egress {
namespace {

v1::HostTraffic* Denied(v1::NetworkSummary& n, const std::string& name, const std::string& reason,
                        const std::string& detail, uint32_t count = 1) {
  v1::HostTraffic* h = n.add_hosts();
  h->set_name(name);
  v1::Denial* d = h->add_denials();
  d->set_reason(reason);
  d->set_detail(detail);
  d->set_count(count);
  return h;
}

TEST(DenialLines, AFloorAddressNamesTheProfileKnob) {
  v1::NetworkSummary n;
  Denied(n, "registry.example", "floor", "203.0.113.80: documentation");
  auto lines = DenialLines(n);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "denied registry.example: floor (203.0.113.80 is a documentation address; a profile "
            "can except it with network.allow_addresses)");
}

// The line said as a refusal happens is the summary's line for that one refusal, and a
// name from the sandbox is made one line of text there too.
TEST(DenialLines, TheLineSaidAsItHappensIsTheSummarysWords) {
  v1::NetworkSummary n;
  v1::HostTraffic* h = Denied(n, "registry.example", "floor", "203.0.113.80: documentation");
  EXPECT_EQ(DenialLine(h->name(), h->denials(0)), DenialLines(n)[0]);
  v1::Denial d;
  d.set_reason("not_allowlisted");
  d.set_count(1);
  EXPECT_EQ(DenialLine("evil\n\x1b[2Jname", d).find_first_of("\n\x1b"), std::string::npos);
}

// --deny stop stops at the policy's refusals, not at an upstream's failure or a client's
// silence.
TEST(DenialLines, OnlyThePolicysRefusalsStopThePhase) {
  for (const char* r : {"not_allowlisted", "floor", "budget", "name_mismatch", "not_from_resolver",
                        "ip_literal", "no_sni", "ech", "not_a_name"}) {
    EXPECT_TRUE(StopsThePhase(r)) << r;
  }
  EXPECT_FALSE(StopsThePhase("upstream_failed"));
  EXPECT_FALSE(StopsThePhase("timeout"));
}

TEST(DenialLines, TheHostsOwnAddressesAndMetadataHaveNoException) {
  EXPECT_EQ(Remedy("a.test", "floor", "10.0.0.1: an address of this host"),
            "10.0.0.1: an address of this host; no profile can except the host's own addresses");
  EXPECT_EQ(Remedy("a.test", "floor", "169.254.169.254: cloud metadata"),
            "169.254.169.254 is a cloud metadata address, which no profile can except");
  EXPECT_EQ(Remedy("a.test", "floor", "127.0.0.1: loopback"),
            "127.0.0.1 is a loopback address; a profile can except it with "
            "network.allow_addresses");
}

TEST(DenialLines, ANameNotAllowedNamesTheFlag) {
  v1::NetworkSummary n;
  Denied(n, "other.test", "not_allowlisted", "", 3);
  auto lines = DenialLines(n);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "denied other.test: not_allowlisted, 3 times (not on the allowlist; allow it with "
            "--allow-host other.test or the profile's network.allow_hosts)");
}

TEST(DenialLines, AreBoundedAndOneLineEach) {
  v1::NetworkSummary n;
  for (int i = 0; i < 25; ++i) {
    Denied(n, "n" + std::to_string(i) + ".test", "malformed", "x\x1b[2J\ny\r\x07z");
  }
  n.add_hosts()->set_name("fine.test");  // no denial: no line
  auto lines = DenialLines(n);
  ASSERT_EQ(lines.size(), kMaxDenialLines + 1);
  EXPECT_EQ(lines.back(), "and 5 more names denied (--result and --audit-log have them all)");
  for (const auto& l : lines) {
    for (unsigned char c : l) EXPECT_GE(c, 0x20) << l;
  }
  EXPECT_EQ(lines[0], "denied n0.test: malformed (x [2J y z)");
}

TEST(DenialLines, ABrokerThatFailedAndASpentBudget) {
  v1::NetworkSummary n;
  v1::BrokerTraffic* b = n.add_brokers();
  b->set_name("api");
  b->set_requests(4);
  b->set_failed(2);
  v1::Denial* d = b->add_failures();
  d->set_reason("unreachable");
  d->set_count(2);
  d->set_detail("cannot connect to tcp:127.0.0.1:9");
  n.add_brokers()->set_name("quiet");
  n.set_egress_budget(1024);
  n.set_budget_exceeded(true);
  auto lines = DenialLines(n);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "broker api failed 2 of 4 requests: unreachable, 2 times (cannot connect to "
            "tcp:127.0.0.1:9)");
  EXPECT_EQ(lines[1],
            "egress budget of 1024 bytes spent: connections and DNS queries past it were refused "
            "(--egress-budget, limits.egress_bytes)");
}

}  // namespace
}  // namespace brig::egress
