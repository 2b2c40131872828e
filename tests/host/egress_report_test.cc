// What brig tells about egress it refused, and the egress budget (issue 16, items 3 and
// 11), as a harness author meets them: a sandbox in the test world (test_world.h) asks
// for names through brig's resolver and sends through its proxy to the fake internet;
// brig's stderr at exit, its --result and its --audit-log are read as a user reads them,
// and what reached the fake internet is asserted at its servers.
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "host/host_fixture.h"
#include "host/test_world.h"
#include "proto/brig.pb.h"

namespace brig::testing {
namespace {

constexpr char kUploadHost[] = "198.51.100.30";  // the recording server of the budget test

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The bytes of one A query brig sends upstream for `name` over UDP: header, question
// (the name's labels, each with its length, and the root), type and class, and the OPT
// record.
uint64_t UpstreamQueryBytes(const std::string& name) { return 12 + name.size() + 2 + 4 + 11; }

// One run: brig's output, its result and its audit.
struct Outcome {
  RunOutput run;
  v1::RunResult result;
  std::vector<v1::AuditEvent> audit;
  std::string audit_text;

  const v1::HostTraffic* Host(const std::string& name) const {
    for (const auto& h : result.network().hosts()) {
      if (h.name() == name) return &h;
    }
    return nullptr;
  }
};

class EgressReport : public HostTest, public AsRootOrUser {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = MakeUser(); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"/usr/bin/curl", "/usr/bin/getent"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << "no " << tool;
    }
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({"allowed.test"}), "");
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
      EXPECT_EQ(UserProcesses(), "") << "a process of the user outlived its run";
    }
    HostTest::TearDown();
  }

  // `script` in a sandbox of the egress test profile (allowed.test and its subdomains,
  // the fake internet's range excepted from the floor) in the world.
  Outcome RunScript(const std::string& script, const std::vector<std::string>& extra = {}) {
    ScratchDir out;
    GiveToUser(out.path());
    std::string audit = out.path() + "/audit.jsonl", result = out.path() + "/result.json";
    std::vector<std::string> args = {
        "run",          "--profile",    SourceRoot() + "/tests/host/profiles/egress.textproto",
        "--dns-upstream", kDnsHost,     "--audit-log", audit, "--result", result};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    Outcome r;
    r.run = world_.Brig(args, As());
    std::string json = ReadFileOrEmpty(result);
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &r.result).ok()) << json;
    r.audit_text = ReadFileOrEmpty(audit);
    std::istringstream in(r.audit_text);
    for (std::string line; std::getline(in, line);) {
      v1::AuditEvent e;
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e).ok()) << line;
      r.audit.push_back(e);
    }
    return r;
  }

  TestWorld world_;
};

// An allowlisted name whose only address is in the floor (a documentation address the
// profile does not except): the resolver refuses it, and brig says so at exit with the
// profile knob that would except it; the result counts the refusals per reason.
TEST_P(EgressReport, AnAllowedNameOnlyInTheFloorIsNamedAtExit) {
  world_.Dns().SetA("doc.allowed.test", {"203.0.113.80"});
  Outcome r = RunScript("getent ahostsv4 doc.allowed.test; echo rc=$?");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.err;
  EXPECT_FALSE(Contains(r.run.out, "rc=0")) << "getent was not refused: " << r.run.out;
  EXPECT_TRUE(Contains(r.run.err,
                       "brig: denied doc.allowed.test: floor"))
      << r.run.err;
  EXPECT_TRUE(Contains(r.run.err, "(203.0.113.80 is a documentation address; a profile can "
                                  "except it with network.allow_addresses)"))
      << r.run.err;
  int refused = 0;
  for (const auto& e : r.audit) {
    if (e.has_dns_query() && e.dns_query().reason() == "floor") ++refused;
  }
  EXPECT_GT(refused, 0) << r.audit_text;
  const v1::HostTraffic* h = r.Host("doc.allowed.test");
  ASSERT_NE(h, nullptr) << r.result.ShortDebugString();
  ASSERT_EQ(h->denials_size(), 1) << h->ShortDebugString();
  EXPECT_EQ(h->denials(0).reason(), "floor");
  EXPECT_EQ(static_cast<int>(h->denials(0).count()), refused);
  EXPECT_EQ(h->denials(0).detail(), "203.0.113.80: documentation");
}

// A name not on the allowlist: one line naming --allow-host with the name.
TEST_P(EgressReport, ANameNotAllowedIsNamedAtExitWithItsRemedy) {
  world_.Dns().SetA("denied.test", {kWebHost});
  Outcome r = RunScript("getent ahostsv4 denied.test; echo rc=$?");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.err;
  EXPECT_FALSE(Contains(r.run.out, "rc=0")) << r.run.out;
  EXPECT_TRUE(Contains(r.run.err, "brig: denied denied.test: not_allowlisted"));
  EXPECT_TRUE(Contains(r.run.err, "(not on the allowlist; allow it with --allow-host denied.test "
                                  "or the profile's network.allow_hosts)"))
      << r.run.err;
  const v1::HostTraffic* h = r.Host("denied.test");
  ASSERT_NE(h, nullptr) << r.result.ShortDebugString();
  ASSERT_EQ(h->denials_size(), 1) << h->ShortDebugString();
  EXPECT_EQ(h->denials(0).reason(), "not_allowlisted");
  EXPECT_EQ(h->denials(0).count(), h->denied());
}

// A refusal is said when it happens, not only at exit: each name's first refusal, in the
// summary's words, comes on stderr before what the workload writes after it was refused
// (the summary at exit comes after all of it). A name refused again is not said again.
TEST_P(EgressReport, EachNamesFirstRefusalIsSaidAsItHappens) {
  world_.Dns().SetA("denied.test", {kWebHost});
  Outcome r = RunScript(
      "getent ahostsv4 denied.test; echo after-first >&2; getent ahostsv4 denied.test; "
      "getent ahostsv4 second.test; echo after-second >&2");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.err;
  const std::string first =
      "brig: denied denied.test: not_allowlisted (not on the allowlist; "
      "allow it with --allow-host denied.test or the profile's "
      "network.allow_hosts)\n";
  size_t live = r.run.err.find(first), after = r.run.err.find("after-first");
  ASSERT_NE(live, std::string::npos) << r.run.err;
  ASSERT_NE(after, std::string::npos) << r.run.err;
  EXPECT_LT(live, after) << "not said before the workload went on:\n" << r.run.err;
  size_t other = r.run.err.find("brig: denied second.test: not_allowlisted");
  EXPECT_LT(after, other) << r.run.err;
  EXPECT_LT(other, r.run.err.find("after-second")) << r.run.err;
  // Between the two markers denied.test was refused again, and not said again.
  std::string between = r.run.err.substr(after, other - after);
  EXPECT_FALSE(Contains(between, "denied.test")) << between;
  // The summary still comes at exit, with the count.
  size_t summary = r.run.err.find("brig: denied denied.test: not_allowlisted, ");
  EXPECT_GT(summary, r.run.err.find("after-second")) << r.run.err;
  EXPECT_EQ(r.result.error_code(), "");
  EXPECT_FALSE(r.result.has_denial_stop());
}

// --deny stop, as a harness that wants to fail fast uses it: the first refusal ends the
// phase before the workload hears the answer, with exit 123, error_code egress_denied and
// the refusal named in the result. A name the allowlist holds goes through first.
TEST_P(EgressReport, DenyStopEndsThePhaseAtTheFirstRefusalOfAName) {
  world_.Dns().SetA("www.allowed.test", {kWebHost});
  world_.Dns().SetA("denied.test", {kWebHost});
  Outcome r = RunScript(
      "getent ahostsv4 www.allowed.test >/dev/null && echo allowed-ok; "
      "getent ahostsv4 denied.test; echo survived",
      {"--deny", "stop"});
  EXPECT_EQ(r.run.exit_code, 123) << r.run.err;
  EXPECT_TRUE(Contains(r.run.out, "allowed-ok")) << r.run.out;
  EXPECT_FALSE(Contains(r.run.out, "survived")) << "the workload went on: " << r.run.out;
  EXPECT_EQ(r.result.exit_code(), 123);
  EXPECT_EQ(r.result.error_code(), "egress_denied");
  EXPECT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.denial_stop().name(), "denied.test");
  EXPECT_EQ(r.result.denial_stop().reason(), "not_allowlisted");
  EXPECT_TRUE(Contains(r.run.err,
                       "brig: the phase was stopped at its first refusal (--deny "
                       "stop): denied denied.test: not_allowlisted"))
      << r.run.err;
  bool exit_event = false;
  for (const auto& e : r.audit) {
    if (e.has_sandbox_exit()) {
      exit_event = true;
      EXPECT_EQ(e.sandbox_exit().error_code(), "egress_denied");
    }
  }
  EXPECT_TRUE(exit_event) << r.audit_text;
}

// The same for a connection: curl to the web server's address with a name the allowlist
// does not hold; the proxy refuses it, the phase ends there, and the server saw nothing.
TEST_P(EgressReport, DenyStopEndsThePhaseAtTheFirstRefusedConnection) {
  world_.ClearWebLog();
  world_.ClearHits();
  Outcome r = RunScript(std::string("curl -s -o /dev/null -H 'Host: denied.test' http://") +
                            kWebHost + "/x; echo survived",
                        {"--deny=stop"});
  EXPECT_EQ(r.run.exit_code, 123) << r.run.err;
  EXPECT_FALSE(Contains(r.run.out, "survived")) << r.run.out;
  EXPECT_EQ(r.result.error_code(), "egress_denied");
  EXPECT_EQ(r.result.denial_stop().name(), "denied.test");
  EXPECT_FALSE(r.result.denial_stop().reason().empty());
  EXPECT_EQ(world_.WebLog(), std::vector<std::string>{});
  EXPECT_EQ(world_.AllHits(), std::vector<std::string>{});
}

// The egress budget: an upload past it through the proxy is cut off at the budget, to the
// byte (brig never writes upstream what would exceed it, so the bound is the budget itself,
// not the budget plus a buffer); a new connection is refused with reason budget; the result
// and the audit say so and give the bytes per host.
TEST_P(EgressReport, AnUploadPastTheBudgetIsCutOffAndTheNextRefused) {
  constexpr uint64_t kBudget = 64 * 1024;
  RecordingServer* rec = world_.Record(kUploadHost, 80);
  ASSERT_NE(rec, nullptr);
  world_.Dns().SetA("upload.allowed.test", {kUploadHost});
  const std::string script =
      "head -c 300000 /dev/zero > /tmp/big; "
      "curl -sS -m 60 -H 'Expect:' --data-binary @/tmp/big http://upload.allowed.test/up; "
      "rc=$?; echo; echo first=$rc; "
      "curl -sS -m 60 -o /dev/null -w 'second=%{http_code}\\n' http://upload.allowed.test/again";
  Outcome r = RunScript(script, {"--egress-budget", "64K"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.err;
  EXPECT_TRUE(Contains(r.run.out, "second=403")) << r.run.out;
  EXPECT_FALSE(Contains(r.run.out, "first=0")) << "the upload was not cut off: " << r.run.out;
  // The server noted the cut-off connection once its FIN arrived.
  ASSERT_TRUE(Eventually([&] { return !rec->Received().empty(); })) << r.run.out << r.run.err;
  std::vector<std::string> got = rec->Received();
  uint64_t received = 0;
  for (const auto& g : got) received += g.size();
  EXPECT_EQ(got.size(), 1u) << "the second connection reached the server";
  // The budget also paid for the one upstream A query for the name (the second connection
  // is answered from the cache).
  EXPECT_EQ(received + UpstreamQueryBytes("upload.allowed.test"), kBudget)
      << "the server received more (or less) than the budget";

  const auto& net = r.result.network();
  EXPECT_TRUE(net.budget_exceeded()) << net.ShortDebugString();
  EXPECT_EQ(net.egress_budget(), kBudget);
  EXPECT_EQ(net.egress_bytes(), kBudget);
  const v1::HostTraffic* h = r.Host("upload.allowed.test");
  ASSERT_NE(h, nullptr) << net.ShortDebugString();
  EXPECT_EQ(h->bytes_up(), received) << "the proxy's bytes";
  ASSERT_GE(h->denials_size(), 1) << h->ShortDebugString();
  EXPECT_EQ(h->denials(0).reason(), "budget") << h->ShortDebugString();
  EXPECT_EQ(h->denials(0).count(), 2u) << "the cut-off and the refused: " << h->ShortDebugString();
  EXPECT_TRUE(Contains(r.run.err, "brig: egress budget of 65536 bytes spent")) << r.run.err;

  int budget_events = 0, budget_connections = 0;
  for (const auto& e : r.audit) {
    if (e.has_egress_budget()) {
      ++budget_events;
      EXPECT_EQ(e.egress_budget().sent(), kBudget);
      ASSERT_EQ(e.egress_budget().hosts_size(), 1) << e.ShortDebugString();
      EXPECT_EQ(e.egress_budget().hosts(0).name(), "upload.allowed.test");
      EXPECT_EQ(e.egress_budget().hosts(0).bytes_up(), kBudget);
    }
    if (e.has_connection() && e.connection().reason() == "budget") ++budget_connections;
  }
  EXPECT_EQ(budget_events, 1) << r.audit_text;
  EXPECT_EQ(budget_connections, 2) << r.audit_text;
}

// DNS is egress too: the labels of a name under an allowed apex are the sandbox's to
// choose and reach that domain's name servers. With a budget of 1000 bytes, queries for
// distinct subdomains are answered while the budget pays for them; then each is refused
// with reason budget and the fake internet's name server sees no further query.
TEST_P(EgressReport, DnsQueriesPastTheBudgetAreRefusedAndNeverSent) {
  constexpr uint64_t kBudget = 1000;
  constexpr int kNames = 40;
  auto name = [](int i) { return "q" + std::to_string(10 + i) + ".allowed.test"; };
  for (int i = 0; i < kNames; ++i) world_.Dns().SetA(name(i), {kWebHost});
  std::string script;
  for (int i = 0; i < kNames; ++i) {
    script += "getent ahostsv4 " + name(i) + " >/dev/null; echo " + name(i) + "=$?; ";
  }
  Outcome r = RunScript(script, {"--egress-budget", std::to_string(kBudget)});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.err;

  // Every name costs the same, so the budget pays for exactly this many.
  const uint64_t each = UpstreamQueryBytes(name(0));
  const int paid = static_cast<int>(kBudget / each);
  std::vector<std::string> asked = world_.Dns().Queries();
  for (int i = 0; i < kNames; ++i) {
    bool answered = Contains(r.run.out, name(i) + "=0\n");
    int upstream = static_cast<int>(std::count(asked.begin(), asked.end(), "udp A " + name(i)));
    EXPECT_EQ(answered, i < paid) << name(i) << "\n" << r.run.out;
    EXPECT_EQ(upstream, i < paid ? 1 : 0) << name(i) << " reached the name server";
  }
  EXPECT_TRUE(Contains(r.run.err, "brig: egress budget of 1000 bytes spent")) << r.run.err;

  const auto& net = r.result.network();
  EXPECT_TRUE(net.budget_exceeded()) << net.ShortDebugString();
  EXPECT_EQ(net.egress_bytes(), paid * each);
  const v1::HostTraffic* h = r.Host(name(kNames - 1));
  ASSERT_NE(h, nullptr) << net.ShortDebugString();
  ASSERT_EQ(h->denials_size(), 1) << h->ShortDebugString();
  EXPECT_EQ(h->denials(0).reason(), "budget");
  int refused = 0, budget_events = 0;
  for (const auto& e : r.audit) {
    if (e.has_dns_query() && e.dns_query().reason() == "budget") {
      ++refused;
      EXPECT_EQ(e.dns_query().rcode(), "REFUSED") << e.ShortDebugString();
    }
    if (!e.has_egress_budget()) continue;
    ++budget_events;
    EXPECT_EQ(e.egress_budget().sent(), paid * each);
    ASSERT_EQ(e.egress_budget().hosts_size(), paid) << e.ShortDebugString();
    EXPECT_EQ(e.egress_budget().hosts(0).bytes_up(), each);
  }
  EXPECT_GE(refused, kNames - paid) << r.audit_text;
  EXPECT_EQ(budget_events, 1) << r.audit_text;
}

BRIG_AS_ROOT_AND_AS_A_USER(EgressReport);

}  // namespace
}  // namespace brig::testing
