// The address floor covers the host itself (issue 14, item 1; design.md, Network): a name
// the posture allows that resolves to an address local to the network namespace brig runs
// in (a public address on the host's own interface, typical of a VPS; brig's bridge
// gateway; anything in brig's bridge subnet) never takes a sandbox to the host's own
// services, whatever range the address is in, whatever the profile's allow_addresses
// say, and also when the address appears only after the sandbox started.
//
// The host is the test world's namespace, where brig runs: 11.0.0.1/32 goes on its wi0 and
// an HTTP server of its own answers there; the fake internet's DNS server answers
// host.allowed.test with 11.0.0.1. The clients are curl and getent inside the sandbox.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "proto/brig.pb.h"
#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kHostAddr[] = "11.0.0.1";
constexpr char kHostBody[] = "the host's own service\n";
constexpr char kName[] = "host.allowed.test";

std::string Profile(const char* name) {
  return SourceRoot() + "/tests/host/profiles/" + name + ".textproto";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<v1::AuditEvent> ReadAudit(const std::string& path) {
  std::vector<v1::AuditEvent> out;
  std::istringstream in(ReadFileOrEmpty(path));
  for (std::string line; std::getline(in, line);) {
    v1::AuditEvent e;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e).ok()) << line;
    out.push_back(e);
  }
  return out;
}

// The lines of `audit` for a name: its A queries and its connections.
std::vector<v1::DnsQuery> AQueries(const std::vector<v1::AuditEvent>& audit,
                                   const std::string& name) {
  std::vector<v1::DnsQuery> out;
  for (const auto& e : audit) {
    if (e.has_dns_query() && e.dns_query().name() == name && e.dns_query().qtype() == "A") {
      out.push_back(e.dns_query());
    }
  }
  return out;
}
std::vector<v1::Connection> Connections(const std::vector<v1::AuditEvent>& audit) {
  std::vector<v1::Connection> out;
  for (const auto& e : audit) {
    if (e.has_connection()) out.push_back(e.connection());
  }
  return out;
}

class HostAddress : public HostTest, public AsRootOrUser {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = MakeUser(); !why.empty()) GTEST_SKIP() << why;
    GiveToUser(out_.path());
    for (const char* tool : {"/usr/bin/curl", "/usr/bin/getent", "/usr/bin/python3"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << "no " << tool;
    }
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({"allowed.test", "*.allowed.test"}), "");
    world_.Dns().SetA(kName, {kHostAddr});
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
      EXPECT_EQ(UserProcesses(), "") << "a process of the user outlived its run";
    }
    HostTest::TearDown();
  }

  // The host's own address, on the world's interface towards the fake internet, or routed
  // to the host as a local route alone ("AnyIP", no interface has it), and the host's own
  // web service on it.
  enum class Local { kAddress, kRoute };
  void AddHostAddress(Local how = Local::kAddress) {
    std::string a = std::string(kHostAddr) + "/32";
    auto r = how == Local::kAddress
                 ? world_.InWorld({"ip", "addr", "add", a, "dev", "wi0"})
                 : world_.InWorld({"ip", "route", "add", "local", a, "dev", "lo", "table", "local"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    host_ = world_.ServeHttp(TestWorld::kWorld, kHostAddr, 80, kHostBody);
    ASSERT_NE(host_, nullptr);
  }

  std::vector<std::string> RunArgs(const std::string& profile, const std::string& script,
                                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run",         "--profile",   profile,
                                     "--workspace", ws_.path(),    "--dns-upstream",
                                     kDnsHost,      "--audit-log", audit_path_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return args;
  }

  void AddedWhileRunningIsRefused(Local how);

  TestWorld world_;
  CountingServer* host_ = nullptr;
  ScratchDir ws_, out_;
  std::string audit_path_ = out_.path() + "/audit.jsonl";
};

// curl's status code for a URL, or its exit status when it got none: "code=200", "rc=7".
constexpr char kFetch[] = R"sh(fetch() {
  c=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null); rc=$?
  if [ "$c" != "000" ] && [ -n "$c" ]; then echo "code=$c"; else echo "rc=$rc"; fi
}
)sh";

// The attack: an allowlisted name that resolves to the host's own address. Before the fix
// the sandbox got the host's 200 through brig's proxy.
TEST_P(HostAddress, AnAllowedNameThatResolvesToTheHostIsRefused) {
  AddHostAddress();
  auto r =
      world_.Brig(RunArgs(Profile("egress"),
                          std::string(kFetch) + "echo getent $(getent hosts " + kName +
                              " >/dev/null; echo $?); echo http $(fetch http://" + kName + "/)"),
                  As());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out, "getent 2\n")) << r.out;  // no address for the name
  EXPECT_FALSE(Contains(r.out, "code=200")) << "the sandbox reached the host's own service:\n"
                                            << r.out;
  ASSERT_NE(host_, nullptr);
  EXPECT_EQ(Lines(host_->Hits()), "") << "the host's own service was reached";
  auto audit = ReadAudit(audit_path_);
  auto qs = AQueries(audit, kName);
  ASSERT_FALSE(qs.empty()) << ReadFileOrEmpty(audit_path_);
  for (const auto& q : qs) {
    EXPECT_FALSE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.reason(), "floor") << q.ShortDebugString();
    EXPECT_TRUE(Contains(q.detail(), kHostAddr) && Contains(q.detail(), "host"))
        << q.ShortDebugString();
    EXPECT_EQ(q.rcode(), "REFUSED") << q.ShortDebugString();
  }
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

// The address appears on the host only after the sandbox resolved the name (and brig
// cached the answer, and that the address was not the host's): the proxy refuses to
// connect to it all the same, and the resolver stops answering for it.
TEST_P(HostAddress, AnAddressAddedWhileTheSandboxRunsIsRefusedToo) {
  AddedWhileRunningIsRefused(Local::kAddress);
}

// The same with a local route and no address: only the kernel's route notice says so.
TEST_P(HostAddress, ALocalRouteAddedWhileTheSandboxRunsIsRefusedToo) {
  AddedWhileRunningIsRefused(Local::kRoute);
}

void HostAddress::AddedWhileRunningIsRefused(Local how) {
  // Resolve while the address is nobody's, say so, wait for the test, then connect by the
  // pool address brig gave out, and ask again.
  std::string script = std::string(kFetch) + "a=$(getent ahostsv4 " + kName +
                       " | head -n 1 | cut -d ' ' -f 1); echo \"resolved $a\"; "
                       "while [ ! -e /workspace/go ]; do sleep 0.02; done; echo http $(fetch --resolve " +
                       kName + ":80:$a http://" + kName + "/); echo https $(fetch -k --resolve " +
                       kName + ":443:$a https://" + kName + "/); echo getent $(getent hosts " +
                       kName + " >/dev/null; echo $?)";
  pid_t brig = world_.SpawnBrig(RunArgs(Profile("egress"), script), out_.path(), As());
  std::string stdout_path = out_.path() + "/stdout";
  ASSERT_TRUE(Eventually([&] { return Contains(ReadFileOrEmpty(stdout_path), "resolved"); }))
      << ReadFileOrEmpty(stdout_path) << ReadFileOrEmpty(out_.path() + "/stderr");
  EXPECT_TRUE(Contains(ReadFileOrEmpty(stdout_path), "resolved 198.1"))
      << "the name did not resolve while it was nobody's:\n"
      << ReadFileOrEmpty(stdout_path);
  AddHostAddress(how);
  ws_.Write("go", "");
  EXPECT_EQ(world_.Wait(brig), 0) << ReadFileOrEmpty(out_.path() + "/stderr");
  std::string out = ReadFileOrEmpty(stdout_path);
  EXPECT_TRUE(Contains(out, "http code=403\n")) << out;
  EXPECT_FALSE(Contains(out, "https code=")) << out;
  EXPECT_TRUE(Contains(out, "getent 2\n")) << out;
  ASSERT_NE(host_, nullptr);
  EXPECT_EQ(Lines(host_->Hits()), "") << "the host's own service was reached";
  EXPECT_EQ(Lines(world_.AllHits()), "");
  auto audit = ReadAudit(audit_path_);
  auto conns = Connections(audit);
  EXPECT_EQ(conns.size(), 2u) << ReadFileOrEmpty(audit_path_);
  for (const auto& c : conns) {
    EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
    EXPECT_EQ(c.reason(), "floor") << c.ShortDebugString();
    EXPECT_TRUE(Contains(c.detail(), kHostAddr) && Contains(c.detail(), "host"))
        << c.ShortDebugString();
    EXPECT_EQ(c.address(), "") << c.ShortDebugString();
  }
  // The first answer, while the address was nobody's, and the ones after it was the host's.
  auto qs = AQueries(audit, kName);
  ASSERT_GE(qs.size(), 2u) << ReadFileOrEmpty(audit_path_);
  EXPECT_TRUE(qs[0].allowed()) << qs[0].ShortDebugString();
  for (size_t i = 1; i < qs.size(); ++i) {
    EXPECT_EQ(qs[i].reason(), "floor") << qs[i].ShortDebugString();
  }
}

// No profile can except the host: allow_addresses naming its address (and the range of
// brig's bridge, here a public one of its own) leave the host's address, brig's gateway and
// another address of the bridge subnet refused.
TEST_P(HostAddress, AllowAddressesCannotExceptTheHost) {
  AddHostAddress();
  const char kSubnet[] = "11.213.0.0/16";
  world_.Dns().SetA("gateway.allowed.test", {"11.213.0.1"});
  world_.Dns().SetA("peer.allowed.test", {"11.213.0.77"});
  std::string profile = ReadFileOrEmpty(Profile("egress"));
  const std::string field = "allow_addresses: \"198.51.100.0/24\"";
  ASSERT_NE(profile.find(field), std::string::npos) << profile;
  profile.replace(
      profile.find(field), field.size(),
      field + "\n  allow_addresses: \"11.0.0.1/32\"\n  allow_addresses: \"11.213.0.0/16\"");
  ScratchDir dir;
  std::string script = std::string(kFetch);
  for (const char* name : {kName, "gateway.allowed.test", "peer.allowed.test"}) {
    script += std::string("echo ") + name + " $(fetch http://" + name + "/); ";
  }
  auto r = world_.Brig(RunArgs(dir.Write("host.textproto", profile), script, {"--subnet", kSubnet}),
                       As());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_FALSE(Contains(r.out, "code=")) << r.out;  // no name even resolved
  ASSERT_NE(host_, nullptr);
  EXPECT_EQ(Lines(host_->Hits()), "") << "the host's own service was reached";
  auto audit = ReadAudit(audit_path_);
  for (const char* name : {kName, "gateway.allowed.test", "peer.allowed.test"}) {
    auto qs = AQueries(audit, name);
    ASSERT_FALSE(qs.empty()) << name << "\n" << ReadFileOrEmpty(audit_path_);
    for (const auto& q : qs) {
      EXPECT_EQ(q.reason(), "floor") << q.ShortDebugString();
      EXPECT_EQ(q.rcode(), "REFUSED") << q.ShortDebugString();
    }
  }
  EXPECT_TRUE(Contains(AQueries(audit, "peer.allowed.test")[0].detail(), "bridge"))
      << AQueries(audit, "peer.allowed.test")[0].ShortDebugString();
  EXPECT_TRUE(Contains(AQueries(audit, "gateway.allowed.test")[0].detail(), "11.213.0.1"))
      << AQueries(audit, "gateway.allowed.test")[0].ShortDebugString();
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

BRIG_AS_ROOT_AND_AS_A_USER(HostAddress);

}  // namespace
}  // namespace brig::testing
