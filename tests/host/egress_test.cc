// brig's egress resolver and proxy (issue 6, "Tests"; design.md, Network and Invariant 4)
// against a fake internet that the test builds in its own test world (test_world.h): an
// authoritative DNS server at 198.51.100.53, HTTPS servers at 198.51.100.20 and .21 with
// certificates of a test CA made at run time, and plain HTTP at .20. Each server writes down
// whatever reaches it, so "denied" is asserted at the server (no query for the name reached
// the upstream, no connection reached the wrong address) and not only by a client's error.
//
// The clients are real programs inside the sandbox: curl, openssl s_client, git over https,
// getent and busybox nslookup. Each runs as a timed step of one script (RunSteps), so that
// a refusal is seen to come at once, not after a timeout. The sandbox reaches the CA through
// its workspace (ca.crt: a *.pem would be one of the secret files a workspace hides).
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "proto/brig.pb.h"
#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

constexpr char kPrivate[] = "10.1.2.3";
constexpr char kMetadata[] = "169.254.169.254";
constexpr char kHello[] = "hello from the fake internet\n";

std::string Profile(const char* name) {
  return SourceRoot() + "/tests/host/profiles/" + name + ".textproto";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// 198.18.0.0/15, brig's pool of the addresses its resolver hands out.
bool InPool(const std::string& addr) {
  return addr.rfind("198.18.", 0) == 0 || addr.rfind("198.19.", 0) == 0;
}

// `s` in single quotes for sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One client command of a sandbox's script: its exit status and its output (stdout and
// stderr together).
struct Step {
  int rc = -1;
  std::string out;
};

// The sandbox side of RunSteps: `step NAME CMD` evaluates CMD (in a subshell: the helpers
// below are in reach) and prints "@@step NAME RC" and then its output. `addr NAME` prints
// the IPv4 address the sandbox's resolver gives NAME. glibc's resolver waits 30 s for an
// answer (RES_OPTIONS), longer than `timeout 20` gives getent: a getent that was never
// answered ends with timeout's 124, one that was answered with its own status.
constexpr char kStepScript[] = R"sh(export RES_OPTIONS='timeout:30 attempts:1'
step() {
  ( eval "$2" ) >/tmp/step.out 2>&1 </dev/null
  echo "@@step $1 $?"
  cat /tmp/step.out
  echo
}
addr() { getent ahostsv4 "$1" | head -n 1 | cut -d " " -f 1; }
getent() { timeout 20 /usr/bin/getent "$@"; }
)sh";

std::map<std::string, Step> ParseSteps(const std::string& out) {
  std::map<std::string, Step> steps;
  std::istringstream in(out);
  Step* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@@step ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name;
      Step s;
      f >> name >> s.rc;
      current = &(steps[name] = s);
    } else if (current) {
      current->out += line + "\n";
    }
  }
  return steps;
}

// What one sandbox did: its steps, and what brig wrote down about it.
struct Sandbox {
  RunOutput run;
  std::map<std::string, Step> steps;
  std::string audit_text;
  std::vector<v1::AuditEvent> audit;
  v1::RunResult result;

  std::vector<v1::DnsQuery> Queries(const std::string& name) const {
    std::vector<v1::DnsQuery> out;
    for (const auto& e : audit) {
      if (e.has_dns_query() && e.dns_query().name() == name) out.push_back(e.dns_query());
    }
    return out;
  }
  std::vector<v1::Connection> Connections() const {
    std::vector<v1::Connection> out;
    for (const auto& e : audit) {
      if (e.has_connection()) out.push_back(e.connection());
    }
    return out;
  }
  // The pool address brig's resolver answered NAME's A query with ("" if none).
  std::string AnswerFor(const std::string& name) const {
    for (const auto& q : Queries(name)) {
      if (q.qtype() == "A" && !q.answer().empty()) return q.answer();
    }
    return "";
  }
  // Every connection event, one a line, for failure messages.
  std::string ConnectionText() const {
    std::string s;
    for (const auto& c : Connections()) s += "  " + c.ShortDebugString() + "\n";
    return s;
  }
};

// Matchers over the servers' notes: a line exactly, a line that contains `needle`.
bool Has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}
bool AnyContains(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return Contains(Lower(l), Lower(needle)); });
}

// Each test runs twice: brig as root, and brig as an ordinary user (issue 31: the same
// resolver, proxy, floor and audit, served from inside the sandbox's own namespace).
class Egress : public HostTest, public AsRootOrUser {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = MakeUser(); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"/usr/bin/curl", "/usr/bin/openssl", "/usr/bin/git",
                             "/usr/bin/busybox", "/usr/bin/getent", "/usr/bin/python3"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << "no " << tool;
    }
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({"allowed.test", "*.allowed.test", "other.test", "other2.test",
                                    "denied.test", "evil-allowed.test", "xn--bcher-kva.test",
                                    "xn--caf-dma.test", "metadata.test"}),
              "");
    auto& dns = world_.Dns();
    for (const char* name :
         {"allowed.test", "other.test", "other2.test", "denied.test", "evil-allowed.test",
          "allowed.test.evil.test", "xn--bcher-kva.test", "xn--caf-dma.test"}) {
      dns.SetA(name, {kWebHost});
    }
    dns.SetCname("www.allowed.test", "allowed.test");
    dns.SetA("private.allowed.test", {kPrivate});
    dns.SetA("metadata.test", {kMetadata});
    ws_.Write("ca.crt", ReadFileOrEmpty(world_.CaPem()));
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
      EXPECT_EQ(UserProcesses(), "") << "a process of the user outlived its run";
    }
    HostTest::TearDown();
  }

  // brig ARGS in the world, as root or as the user.
  RunOutput Brig(const std::vector<std::string>& args) { return world_.Brig(args, As()); }

  // Runs `steps` (name, shell command) in one sandbox of `profile` in the world, with the
  // fake internet's DNS server as the resolver's upstream.
  Sandbox RunSteps(const std::vector<std::pair<std::string, std::string>>& steps,
                   const std::vector<std::string>& extra = {},
                   const std::string& profile = Profile("egress")) {
    std::string script = kStepScript;
    for (const auto& [name, cmd] : steps) script += "step " + name + " " + Quote(cmd) + "\n";
    ScratchDir out;
    GiveToUser(out.path());
    std::string audit = out.path() + "/audit.jsonl", result = out.path() + "/result.json";
    std::vector<std::string> args = {"run", "--profile", profile, "--workspace", ws_.path()};
    args.insert(args.end(), {"--dns-upstream", kDnsHost, "--audit-log", audit, "--result", result});
    args.insert(args.end(), {"--env", "HOME=/tmp", "--env", "GIT_SSL_CAINFO=/workspace/ca.crt"});
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    Sandbox sb;
    sb.run = Brig(args);
    EXPECT_EQ(sb.run.exit_code, 0) << sb.run.err << sb.run.out;
    sb.steps = ParseSteps(sb.run.out);
    for (const auto& [name, cmd] : steps) {
      EXPECT_EQ(sb.steps.count(name), 1u) << "step " << name << " did not run:\n" << sb.run.out;
    }
    sb.audit_text = ReadFileOrEmpty(audit);
    std::istringstream in(sb.audit_text);
    for (std::string line; std::getline(in, line);) {
      v1::AuditEvent e;
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e).ok()) << line;
      sb.audit.push_back(e);
    }
    std::string json = ReadFileOrEmpty(result);
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &sb.result).ok()) << json;
    return sb;
  }

  // The upstream's log of questions.
  std::vector<std::string> Upstream() { return world_.Dns().Queries(); }
  // Whether the upstream was asked anything about `name` (or a name containing it).
  bool UpstreamAsked(const std::string& name) { return AnyContains(Upstream(), name); }

  TestWorld world_;
  ScratchDir ws_;
};

// A step that a refusal must end: the client failed, and what ended it was brig's answer
// (NXDOMAIN or REFUSED, a reset, a TLS alert, an HTTP error), not a timer of the client's
// own. Each client here says so when its timer ends it: curl exits 28, timeout(1) 124
// (getent, openssl, nc and nslookup run under it), busybox nslookup prints "timed out".
#define EXPECT_REFUSED(sb, name)                                                           \
  do {                                                                                     \
    const Step& s_ = (sb).steps[name];                                                     \
    EXPECT_NE(s_.rc, 0) << (name) << " was not refused:\n" << s_.out;                      \
    EXPECT_NE(s_.rc, 28) << (name) << " timed out instead of being refused:\n" << s_.out;  \
    EXPECT_NE(s_.rc, 124) << (name) << " timed out instead of being refused:\n" << s_.out; \
    EXPECT_EQ(Lower(s_.out).find("timed out"), std::string::npos)                          \
        << (name) << " timed out instead of being refused:\n"                              \
        << s_.out;                                                                         \
  } while (0)

#define EXPECT_STEP_OK(sb, name)                                                              \
  do {                                                                                        \
    const Step& s_ = (sb).steps[name];                                                        \
    EXPECT_EQ(s_.rc, 0) << (name) << " failed:\n" << s_.out << "audit:\n" << (sb).audit_text; \
  } while (0)

// The fixture's own fake internet, asked from the world directly (no brig): the DNS server
// answers and writes down what it is asked, the web servers serve the test CA's
// certificates and the git repository, and none of it reaches the world's catch-all
// servers on the same ports. The tests below stand on this.
TEST_P(Egress, TheFakeInternetAnswersTheWorld) {
  auto ns = [&](const std::string& name) {
    return world_.InWorld({"busybox", "nslookup", "-type=a", name, kDnsHost});
  };
  auto a = ns("allowed.test");
  EXPECT_TRUE(Contains(a.out, std::string("Address: ") + kWebHost)) << a.out << a.err;
  auto cname = ns("WWW.Allowed.Test");
  EXPECT_TRUE(Contains(cname.out, "canonical name = allowed.test")) << cname.out << cname.err;
  EXPECT_TRUE(Contains(cname.out, std::string("Address: ") + kWebHost)) << cname.out;
  auto nx = ns("nosuch.test");
  EXPECT_TRUE(Contains(nx.out + nx.err, "NXDOMAIN")) << nx.out << nx.err;
  // Over TCP too (busybox cannot: a few lines of python).
  auto tcp = world_.InWorld(
      {"/usr/bin/python3", "-c",
       "import socket, struct\n"
       "q = bytes.fromhex('abcd01000001000000000000') + b'\\x07allowed\\x04test\\x00' + "
       "struct.pack('>HH', 1, 1)\n"
       "s = socket.create_connection(('198.51.100.53', 53), timeout=60)\n"
       "s.sendall(struct.pack('>H', len(q)) + q)\n"
       "r = s.recv(4096)[2:]\n"
       "print(r[3] & 15, r[7], '.'.join(str(b) for b in r[-4:]))\n"});
  EXPECT_EQ(tcp.out, std::string("0 1 ") + kWebHost + "\n") << tcp.err;
  std::vector<std::string> want = {"udp A allowed.test", "udp A WWW.Allowed.Test",
                                   "udp A nosuch.test", "tcp A allowed.test"};
  EXPECT_EQ(Upstream(), want);

  std::string ca = world_.CaPem();
  auto https = world_.InWorld({"curl", "-sS", "-m", "5", "--cacert", ca, "--resolve",
                               std::string("allowed.test:443:") + kWebHost,
                               "https://allowed.test/hello.txt"});
  EXPECT_EQ(https.exit_code, 0) << https.err;
  EXPECT_EQ(https.out, kHello);
  auto http = world_.InWorld({"curl", "-sS", "-m", "5", "-H", "Host: other.test",
                              std::string("http://") + kWebHost + "/hello.txt"});
  EXPECT_EQ(http.out, kHello) << http.err;
  auto wrong =
      world_.InWorld({"curl", "-sS", "-m", "5", "--cacert", ca, "--resolve",
                      std::string("other.test:443:") + kWrongHost, "https://other.test/hello.txt"});
  EXPECT_EQ(wrong.out, kHello) << wrong.err;
  ScratchDir clone;
  auto git = world_.InWorld({"env", "GIT_SSL_CAINFO=" + ca, "git", "-c",
                             std::string("http.curloptResolve=allowed.test:443:") + kWebHost,
                             "clone", "-q", "https://allowed.test/repo.git", clone.path() + "/r"});
  EXPECT_EQ(git.exit_code, 0) << git.err;
  EXPECT_EQ(ReadFileOrEmpty(clone.path() + "/r/README"), "a repository of the fake internet\n");

  auto log = world_.WebLog();
  for (const std::string& line :
       {std::string("sni https ") + kWebHost + ":443 allowed.test",
        std::string("request https ") + kWebHost + ":443 host=allowed.test path=/hello.txt",
        std::string("request http ") + kWebHost + ":80 host=other.test path=/hello.txt",
        std::string("sni https ") + kWrongHost + ":443 other.test",
        std::string("request https ") + kWebHost +
            ":443 host=allowed.test path=/repo.git/info/refs?service=git-upload-pack"}) {
    EXPECT_TRUE(Has(log, line)) << line << "\n" << Lines(log);
  }
  EXPECT_EQ(Lines(world_.AllHits()), "")
      << "the catch-all servers took the fake internet's traffic";
}

TEST_P(Egress, AnAllowedHostWorksEndToEndWithItsOwnCertificate) {
  auto sb = RunSteps({
      {"resolve", "getent hosts allowed.test"},
      {"curl", "curl -sS -m 60 --cacert /workspace/ca.crt https://allowed.test/hello.txt"},
      {"cname", "curl -sS -m 60 --cacert /workspace/ca.crt https://www.allowed.test/hello.txt"},
      {"s_client",
       "timeout 60 openssl s_client -connect allowed.test:443 -servername allowed.test "
       "-verify_return_error -verify_hostname allowed.test -CAfile /workspace/ca.crt"},
      // Without the test CA the chain is untrusted: what the client sees is the server's own
      // certificate, not one brig made.
      {"untrusted", "curl -sS -m 60 https://allowed.test/hello.txt"},
      {"git",
       "timeout 300 git clone -q https://allowed.test/repo.git /tmp/repo && cat /tmp/repo/README"},
  });
  EXPECT_STEP_OK(sb, "resolve");
  std::string answer = sb.steps["resolve"].out.substr(0, sb.steps["resolve"].out.find(' '));
  EXPECT_TRUE(InPool(answer)) << sb.steps["resolve"].out;
  EXPECT_STEP_OK(sb, "curl");
  EXPECT_EQ(sb.steps["curl"].out, std::string(kHello) + "\n");
  EXPECT_STEP_OK(sb, "cname");
  EXPECT_EQ(sb.steps["cname"].out, std::string(kHello) + "\n");
  EXPECT_STEP_OK(sb, "s_client");
  EXPECT_TRUE(Contains(sb.steps["s_client"].out, "issuer=CN = brig test CA"))
      << sb.steps["s_client"].out;
  EXPECT_TRUE(Contains(sb.steps["s_client"].out, "Verify return code: 0 (ok)"))
      << sb.steps["s_client"].out;
  EXPECT_EQ(sb.steps["untrusted"].rc, 60) << sb.steps["untrusted"].out;
  EXPECT_STEP_OK(sb, "git");
  EXPECT_EQ(sb.steps["git"].out, "a repository of the fake internet\n\n");

  // At the servers: the upstream was asked, and every request reached .20 with its SNI.
  EXPECT_TRUE(UpstreamAsked("allowed.test")) << Lines(Upstream());
  auto log = world_.WebLog();
  const std::string at = std::string(kWebHost) + ":443";
  for (const std::string& line :
       {"sni https " + at + " allowed.test", "sni https " + at + " www.allowed.test",
        "request https " + at + " host=allowed.test path=/hello.txt",
        "request https " + at + " host=www.allowed.test path=/hello.txt",
        "request https " + at + " host=allowed.test path=/repo.git/HEAD"}) {
    EXPECT_TRUE(Has(log, line)) << line << "\n" << Lines(log);
  }
  EXPECT_FALSE(AnyContains(log, kWrongHost)) << Lines(log);
  EXPECT_EQ(Lines(world_.AllHits()), "");

  // In the audit: each connection went to the dialed name's real, checked address.
  auto conns = sb.Connections();
  EXPECT_GE(conns.size(), 5u) << sb.ConnectionText();
  for (const auto& c : conns) {
    EXPECT_TRUE(c.allowed()) << c.ShortDebugString();
    EXPECT_EQ(c.reason(), "allowlisted") << c.ShortDebugString();
    EXPECT_EQ(c.address(), kWebHost) << c.ShortDebugString();
    EXPECT_EQ(c.port(), 443u) << c.ShortDebugString();
    EXPECT_EQ(c.protocol(), "tls") << c.ShortDebugString();
    EXPECT_TRUE(InPool(c.dialed())) << c.ShortDebugString();
    EXPECT_GT(c.bytes_down(), 0u) << c.ShortDebugString();
  }
}

TEST_P(Egress, ADeniedNameGetsNxdomainAndNeverReachesTheUpstream) {
  auto sb = RunSteps({
      {"allowed", "getent hosts allowed.test"},
      {"getent", "getent hosts denied.test"},
      {"nslookup", "timeout 60 busybox nslookup denied.test"},
      {"curl", "curl -sS -m 60 https://denied.test/"},
  });
  EXPECT_STEP_OK(sb, "allowed");
  for (const char* step : {"getent", "nslookup", "curl"}) EXPECT_REFUSED(sb, step);
  EXPECT_TRUE(Contains(sb.steps["nslookup"].out, "NXDOMAIN")) << sb.steps["nslookup"].out;
  EXPECT_EQ(sb.steps["curl"].rc, 6) << sb.steps["curl"].out;  // could not resolve

  // The upstream heard of the allowed name, and never of the denied one.
  EXPECT_TRUE(UpstreamAsked("allowed.test")) << Lines(Upstream());
  EXPECT_FALSE(UpstreamAsked("denied.test")) << Lines(Upstream());
  EXPECT_FALSE(AnyContains(world_.WebLog(), "denied.test")) << Lines(world_.WebLog());
  auto qs = sb.Queries("denied.test");
  EXPECT_FALSE(qs.empty()) << sb.audit_text;
  for (const auto& q : qs) {
    EXPECT_FALSE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.reason(), "not_allowlisted") << q.ShortDebugString();
    EXPECT_EQ(q.rcode(), "NXDOMAIN") << q.ShortDebugString();
    EXPECT_EQ(q.answer(), "") << q.ShortDebugString();
    EXPECT_EQ(q.addresses_size(), 0) << q.ShortDebugString();
  }
  EXPECT_TRUE(sb.Connections().empty()) << sb.ConnectionText();
}

TEST_P(Egress, AnAllowedNameWithAPrivateAddressIsRefused) {
  auto sb = RunSteps({
      {"getent", "getent hosts private.allowed.test"},
      {"curl", "curl -sS -m 60 --cacert /workspace/ca.crt https://private.allowed.test/"},
      {"http", "curl -sS -m 60 http://private.allowed.test/"},
  });
  for (const char* step : {"getent", "curl", "http"}) EXPECT_REFUSED(sb, step);
  // brig asked (that is how it learnt the address), then refused what it learnt.
  EXPECT_TRUE(UpstreamAsked("private.allowed.test")) << Lines(Upstream());
  auto qs = sb.Queries("private.allowed.test");
  bool floor = false;
  for (const auto& q : qs) {
    EXPECT_EQ(q.answer(), "") << q.ShortDebugString();
    if (q.qtype() != "A") continue;
    floor = true;
    EXPECT_FALSE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.reason(), "floor") << q.ShortDebugString();
    EXPECT_EQ(q.rcode(), "REFUSED") << q.ShortDebugString();
  }
  EXPECT_TRUE(floor) << "no A query for private.allowed.test in the audit:\n" << sb.audit_text;
  for (const auto& c : sb.Connections()) {
    EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
    EXPECT_NE(c.address(), kPrivate) << c.ShortDebugString();
  }
  EXPECT_EQ(Lines(world_.WebLog()), "");
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

TEST_P(Egress, AnAllowedSniSentToAnotherAddressIsRefused) {
  const std::string s_client =
      "timeout 60 openssl s_client -CAfile /workspace/ca.crt -verify_return_error ";
  auto sb = RunSteps({
      {"resolve", "addr allowed.test && addr other.test"},
      // Straight to the wrong server's address, with an allowed SNI.
      {"wrong", s_client + "-connect 198.51.100.21:443 -servername allowed.test"},
      {"wrong_curl",
       "curl -sS -m 60 --cacert /workspace/ca.crt --resolve "
       "allowed.test:443:198.51.100.21 https://allowed.test/hello.txt"},
      // Domain fronting: the address the sandbox got for other.test, the SNI of allowed.test.
      {"fronting", s_client + "-connect $(addr other.test):443 -servername allowed.test"},
      {"fronting_curl",
       "curl -sS -m 60 --cacert /workspace/ca.crt --resolve "
       "allowed.test:443:$(addr other.test) https://allowed.test/hello.txt"},
      // The same address with its own name works: the refusals above are about the names.
      {"own", s_client + "-connect $(addr other.test):443 -servername other.test"},
  });
  EXPECT_STEP_OK(sb, "resolve");
  for (const char* step : {"wrong", "wrong_curl", "fronting", "fronting_curl"}) {
    EXPECT_REFUSED(sb, step);
  }
  EXPECT_STEP_OK(sb, "own");

  auto log = world_.WebLog();
  EXPECT_FALSE(AnyContains(log, kWrongHost)) << "the wrong server got traffic:\n" << Lines(log);
  EXPECT_FALSE(AnyContains(log, " allowed.test")) << "allowed.test's SNI reached a server:\n"
                                                  << Lines(log);
  EXPECT_TRUE(AnyContains(log, "sni https 198.51.100.20:443 other.test")) << Lines(log);

  std::string other = sb.AnswerFor("other.test");
  ASSERT_TRUE(InPool(other)) << sb.audit_text;
  int wrong = 0, fronting = 0;
  for (const auto& c : sb.Connections()) {
    if (c.dialed() == kWrongHost) {
      ++wrong;
      EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
      EXPECT_EQ(c.reason(), "not_from_resolver") << c.ShortDebugString();
      EXPECT_EQ(c.address(), "") << c.ShortDebugString();
    } else if (c.dialed() == other && c.name() == "allowed.test") {
      ++fronting;
      EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
      EXPECT_EQ(c.reason(), "name_mismatch") << c.ShortDebugString();
      EXPECT_EQ(c.address(), "") << c.ShortDebugString();
    }
  }
  EXPECT_EQ(wrong, 2) << sb.ConnectionText();
  EXPECT_EQ(fronting, 2) << sb.ConnectionText();
}

TEST_P(Egress, MissingSniIsRefused) {
  auto sb = RunSteps({
      {"s_client", "timeout 60 openssl s_client -connect $(addr allowed.test):443 -noservername"},
      // curl sends no SNI for an address.
      {"curl", "curl -sS -m 60 -k https://$(addr allowed.test)/hello.txt"},
  });
  for (const char* step : {"s_client", "curl"}) EXPECT_REFUSED(sb, step);
  auto conns = sb.Connections();
  EXPECT_EQ(conns.size(), 2u) << sb.ConnectionText();
  for (const auto& c : conns) {
    EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
    EXPECT_EQ(c.reason(), "no_sni") << c.ShortDebugString();
  }
  EXPECT_EQ(Lines(world_.WebLog()), "");
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

// A ClientHello for an allowed name that also carries an encrypted_client_hello extension
// (what ECH, or Chrome's GREASE of it, sends): the name in the clear may not be the one the
// client asks for, so brig refuses it. The hello is built by hand: no client of the host's
// speaks ECH. Prints the first three bytes that come back, in hex.
constexpr char kEchHello[] = R"py(import os, socket, struct, sys
def ext(t, data):
    return struct.pack(">HH", t, len(data)) + data
name = b"allowed.test"
sni = struct.pack(">BH", 0, len(name)) + name
exts = ext(0, struct.pack(">H", len(sni)) + sni)
exts += ext(0x002b, b"\x02\x03\x04")
exts += ext(0xfe0d, b"\x00\x00\x01\x00\x01\x2a\x00\x20" + os.urandom(32) + b"\x00\x10" + os.urandom(16))
body = struct.pack(">H", 0x0303) + os.urandom(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
body += struct.pack(">H", len(exts)) + exts
hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
s = socket.create_connection((sys.argv[1], 443), timeout=60)
s.sendall(b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs)
print(s.recv(7).hex()[:14])
)py";

TEST_P(Egress, EchIsRefusedEvenForAnAllowedName) {
  ws_.Write("ech.py", kEchHello);
  auto sb = RunSteps({{"ech", "python3 /workspace/ech.py $(addr allowed.test)"}});
  EXPECT_STEP_OK(sb, "ech");
  // An alert record: type 21, version 3.x, length 2, fatal (2), access_denied (49).
  EXPECT_EQ(sb.steps["ech"].out.substr(0, 14), "15030300020231") << sb.steps["ech"].out;
  auto conns = sb.Connections();
  ASSERT_EQ(conns.size(), 1u) << sb.ConnectionText();
  EXPECT_FALSE(conns[0].allowed());
  EXPECT_EQ(conns[0].reason(), "ech") << conns[0].ShortDebugString();
  EXPECT_EQ(conns[0].name(), "allowed.test");
  EXPECT_EQ(Lines(world_.WebLog()), "");
}

TEST_P(Egress, NonTlsBytesOnPort443AreRefused) {
  auto sb = RunSteps({
      {"http", "curl -sS -m 60 http://allowed.test:443/hello.txt"},
      {"garbage",
       "printf 'hello there\\r\\n\\r\\n' | timeout 60 busybox nc $(addr allowed.test) 443 "
       ">/tmp/got; echo nc $?; od -c /tmp/got | head -n 3"},
  });
  EXPECT_REFUSED(sb, "http");
  // brig closed the connection: nc saw its end, not timeout's.
  EXPECT_EQ(sb.steps["garbage"].out.rfind("nc 0\n", 0), 0u) << sb.steps["garbage"].out;
  auto conns = sb.Connections();
  EXPECT_EQ(conns.size(), 2u) << sb.ConnectionText();
  for (const auto& c : conns) {
    EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
    EXPECT_TRUE(c.reason() == "not_tls" || c.reason() == "malformed") << c.ShortDebugString();
  }
  EXPECT_EQ(Lines(world_.WebLog()), "");
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

TEST_P(Egress, PlainHttpWithAnAllowedAndADeniedHost) {
  const std::string code = "curl -sS -m 60 -o /dev/null -w '%{http_code}' ";
  auto sb = RunSteps({
      {"allowed", "curl -sS -m 60 http://allowed.test/hello.txt"},
      {"denied", code + "-H 'Host: denied.test' http://allowed.test/hello.txt"},
      {"literal", code + "http://198.51.100.20/hello.txt"},
  });
  EXPECT_STEP_OK(sb, "allowed");
  EXPECT_EQ(sb.steps["allowed"].out, std::string(kHello) + "\n");
  for (const char* step : {"denied", "literal"}) {
    EXPECT_EQ(sb.steps[step].out, "403\n") << step;
  }
  std::vector<std::string> want = {
      std::string("accept http ") + kWebHost + ":80 from=" + kWorldAddr,
      std::string("request http ") + kWebHost + ":80 host=allowed.test path=/hello.txt"};
  EXPECT_EQ(world_.WebLog(), want);

  auto conns = sb.Connections();
  ASSERT_EQ(conns.size(), 3u) << sb.ConnectionText();
  EXPECT_TRUE(conns[0].allowed()) << conns[0].ShortDebugString();
  EXPECT_EQ(conns[0].protocol(), "http");
  EXPECT_EQ(conns[0].name(), "allowed.test");
  EXPECT_EQ(conns[0].port(), 80u);
  EXPECT_FALSE(conns[1].allowed()) << conns[1].ShortDebugString();
  EXPECT_EQ(conns[1].name(), "denied.test") << conns[1].ShortDebugString();
  EXPECT_FALSE(conns[2].allowed()) << conns[2].ShortDebugString();
  EXPECT_EQ(conns[2].reason(), "ip_literal") << conns[2].ShortDebugString();
}

// A client of the sandbox's own on port 80: sends a file's bytes as they are, half-closes,
// and prints whatever comes back until the other side closes.
constexpr char kRawHttp[] = R"py(import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=8)
s.sendall(open(sys.argv[2], "rb").read())
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
sys.stdout.write(got.decode("latin-1"))
)py";

constexpr char kRecorderHost[] = "198.51.100.22";

// Request smuggling (issue 14, item 3): a request whose head has both Content-Length and
// Transfer-Encoding carries a second request for a denied name in what one reader takes for
// its body and another for the next request. The proxy refuses the first head with a 400,
// and nothing, smuggled or not, reaches the upstream.
TEST_P(Egress, AClTeSmuggledRequestNeverReachesTheUpstream) {
  RecordingServer* rec = world_.Record(kRecorderHost, 80);
  ASSERT_NE(rec, nullptr);
  world_.Dns().SetA("rec.allowed.test", {kRecorderHost});
  ws_.Write("raw.py", kRawHttp);
  ws_.Write("smuggle.http",
            "POST /first HTTP/1.1\r\nHost: rec.allowed.test\r\nContent-Length: 50\r\n"
            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            "GET /smuggled HTTP/1.1\r\nHost: denied.test\r\n\r\n");
  auto sb = RunSteps({{"smuggle", "python3 /workspace/raw.py rec.allowed.test "
                                  "/workspace/smuggle.http"}});
  EXPECT_STEP_OK(sb, "smuggle");
  EXPECT_EQ(sb.steps["smuggle"].out.rfind("HTTP/1.1 400 ", 0), 0u) << sb.steps["smuggle"].out;
  EXPECT_EQ(Lines(rec->Received()), "") << "the upstream received this";
  auto conns = sb.Connections();
  ASSERT_EQ(conns.size(), 1u) << sb.ConnectionText();
  EXPECT_FALSE(conns[0].allowed()) << conns[0].ShortDebugString();
  EXPECT_EQ(conns[0].reason(), "malformed") << conns[0].ShortDebugString();
}

// Virtual-host confusion (issue 14, item 3): a connection admitted for rec.allowed.test
// carries a second request for denied.test. The first is answered; the second gets a 400
// and the connection closes; the upstream never sees the second.
TEST_P(Egress, ASecondRequestForAnotherHostOnAKeptAliveConnectionIsRefused) {
  RecordingServer* rec = world_.Record(kRecorderHost, 80);
  ASSERT_NE(rec, nullptr);
  world_.Dns().SetA("rec.allowed.test", {kRecorderHost});
  ws_.Write("raw.py", kRawHttp);
  ws_.Write("two.http",
            "GET /first HTTP/1.1\r\nHost: rec.allowed.test\r\n\r\n"
            "GET /second HTTP/1.1\r\nHost: denied.test\r\n\r\n");
  auto sb = RunSteps({{"two", "python3 /workspace/raw.py rec.allowed.test /workspace/two.http"}});
  EXPECT_STEP_OK(sb, "two");
  const std::string& out = sb.steps["two"].out;
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  size_t refused = out.find("recorded\nHTTP/1.1 400 ");
  EXPECT_NE(refused, std::string::npos) << out;
  EXPECT_TRUE(Contains(out, "denied.test")) << out;
  std::vector<std::string> got = rec->Received();
  ASSERT_EQ(got.size(), 1u) << Lines(got);
  EXPECT_EQ(got[0], "GET /first HTTP/1.1\r\nHost: rec.allowed.test\r\n\r\n");
}

TEST_P(Egress, ATunnellingAttemptReachesNoUpstream) {
  // 50 questions, each a 60-character random label under a denied apex.
  std::mt19937 rng(std::random_device{}());
  const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string names;
  for (int i = 0; i < 50; ++i) {
    std::string label;
    for (int j = 0; j < 60; ++j) label += alphabet[rng() % 36];
    names += " " + label + ".tunnel.test";
  }
  auto sb = RunSteps({
      {"allowed", "getent hosts allowed.test"},
      {"tunnel", "n=0; nx=0; for name in" + names +
                     "; do timeout 60 busybox nslookup -type=a $name >/tmp/ns 2>&1 && "
                     "n=$((n + 1)); grep -q NXDOMAIN /tmp/ns && nx=$((nx + 1)); done; "
                     "echo answered $n nxdomain $nx"},
  });
  EXPECT_STEP_OK(sb, "allowed");
  // Every question got its NXDOMAIN at once, but those the rate limit dropped.
  EXPECT_EQ(sb.steps["tunnel"].out,
            "answered 0 nxdomain " + std::to_string(50 - static_cast<long>(sb.result.network().rate_limited())) +
                "\n\n");
  EXPECT_TRUE(UpstreamAsked("allowed.test")) << Lines(Upstream());
  EXPECT_FALSE(UpstreamAsked("tunnel.test")) << Lines(Upstream());
  int denied = 0;
  for (const auto& e : sb.audit) {
    if (!e.has_dns_query() || !Contains(e.dns_query().name(), "tunnel.test")) continue;
    ++denied;
    EXPECT_FALSE(e.dns_query().allowed()) << e.dns_query().ShortDebugString();
    EXPECT_EQ(e.dns_query().answer(), "") << e.dns_query().ShortDebugString();
  }
  EXPECT_GE(denied + static_cast<int>(sb.result.network().rate_limited()), 50) << sb.audit_text;
}

TEST_P(Egress, AnIpv6LiteralIsRefusedAtOnce) {
  auto sb = RunSteps({
      {"literal", "curl -sS -m 60 -g 'https://[2001:db8::1]/'"},
      {"six", "curl -6 -sS -m 60 --cacert /workspace/ca.crt https://allowed.test/hello.txt"},
      // A v4-mapped address is IPv4 on the wire: it meets the proxy, whose Host is the literal.
      {"mapped",
       "curl -sS -m 60 -o /dev/null -w '%{http_code}' -g "
       "'http://[::ffff:198.51.100.20]/hello.txt'"},
  });
  for (const char* step : {"literal", "six"}) EXPECT_REFUSED(sb, step);
  EXPECT_EQ(sb.steps["mapped"].out, "403\n");
  // An allowed name has no IPv6 address for the sandbox: NOERROR, and no answer.
  auto qs = sb.Queries("allowed.test");
  bool aaaa = false;
  for (const auto& q : qs) {
    if (q.qtype() != "AAAA") continue;
    aaaa = true;
    EXPECT_EQ(q.rcode(), "NOERROR") << q.ShortDebugString();
    EXPECT_EQ(q.answer(), "") << q.ShortDebugString();
  }
  EXPECT_TRUE(aaaa) << sb.audit_text;
  EXPECT_EQ(Lines(world_.WebLog()), "");
  EXPECT_EQ(Lines(world_.AllHits()), "");
}

TEST_P(Egress, TheMetadataAddressIsRefusedEvenInOpen) {
  const std::string code = "curl -sS -m 60 -o /dev/null -w '%{http_code}' ";
  auto sb = RunSteps(
      {
          // Posture open reaches a name no list names...
          {"open", "curl -sS -m 60 --cacert /workspace/ca.crt https://denied.test/hello.txt"},
          // ...but not the metadata address, by name or by number.
          {"getent", "getent hosts metadata.test"},
          {"name", "curl -sS -m 60 http://metadata.test/latest/meta-data/"},
          {"number", code + "http://169.254.169.254/latest/meta-data/"},
          {"host", code + "-H 'Host: metadata.test' http://169.254.169.254/latest/meta-data/"},
          {"tls", "curl -sS -m 60 -k https://169.254.169.254/"},
      },
      {}, Profile("egress-open"));
  EXPECT_STEP_OK(sb, "open");
  EXPECT_EQ(sb.steps["open"].out, std::string(kHello) + "\n");
  for (const char* step : {"getent", "name", "tls"}) EXPECT_REFUSED(sb, step);
  for (const char* step : {"number", "host"}) {
    EXPECT_EQ(sb.steps[step].out, "403\n") << step;
  }
  bool floor = false;
  for (const auto& q : sb.Queries("metadata.test")) {
    EXPECT_EQ(q.answer(), "") << q.ShortDebugString();
    if (q.qtype() != "A") continue;
    floor = true;
    EXPECT_FALSE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.reason(), "floor") << q.ShortDebugString();
  }
  EXPECT_TRUE(floor) << sb.audit_text;
  for (const auto& c : sb.Connections()) {
    EXPECT_NE(c.address(), kMetadata) << c.ShortDebugString();
    if (c.name() != "denied.test") {
      EXPECT_FALSE(c.allowed()) << c.ShortDebugString();
    }
  }
  auto log = world_.WebLog();
  EXPECT_FALSE(AnyContains(log, "metadata")) << Lines(log);
  EXPECT_TRUE(AnyContains(log, "host=denied.test path=/hello.txt")) << Lines(log);
  EXPECT_EQ(Lines(world_.AllHits()), "");

  // Nor can a profile except it: a network that holds it is refused before anything runs.
  ScratchDir dir;
  std::string profile = ReadFileOrEmpty(Profile("egress-open"));
  const std::string field = "allow_addresses: \"198.51.100.0/24\"";
  ASSERT_NE(profile.find(field), std::string::npos) << profile;
  profile.replace(profile.find(field), field.size(), "allow_addresses: \"169.254.0.0/16\"");
  auto r = Brig({"run", "--profile", dir.Write("metadata.textproto", profile), "--", "true"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(Contains(r.err, "169.254.0.0/16")) << r.err;
}

TEST_P(Egress, TrickyNamesAgainstTheList) {
  const std::string curl = "curl -sS -m 60 --cacert /workspace/ca.crt ";
  auto sb = RunSteps(
      {
          {"upper", "getent hosts ALLOWED.TEST && " + curl + "https://ALLOWED.TEST/hello.txt"},
          {"dot", "getent hosts allowed.test. && " + curl + "https://allowed.test./hello.txt"},
          {"listed_punycode",
           "getent hosts xn--bcher-kva.test && " + curl + "https://xn--bcher-kva.test/hello.txt"},
          {"evil_prefix", "getent hosts evil-allowed.test"},
          {"evil_suffix", "getent hosts allowed.test.evil.test"},
          {"other_punycode", "getent hosts xn--caf-dma.test"},
          {"evil_prefix_ns", "timeout 60 busybox nslookup evil-allowed.test"},
          {"evil_suffix_ns", "timeout 60 busybox nslookup allowed.test.evil.test"},
          {"other_punycode_ns", "timeout 60 busybox nslookup xn--caf-dma.test"},
      },
      {"--allow-host", "xn--bcher-kva.test"});
  for (const char* step : {"upper", "dot", "listed_punycode"}) {
    EXPECT_STEP_OK(sb, step);
    EXPECT_TRUE(Contains(sb.steps[step].out, kHello)) << step << ":\n" << sb.steps[step].out;
  }
  for (const char* step : {"evil_prefix", "evil_suffix", "other_punycode", "evil_prefix_ns",
                           "evil_suffix_ns", "other_punycode_ns"}) {
    EXPECT_REFUSED(sb, step);
  }
  for (const char* step : {"evil_prefix_ns", "evil_suffix_ns", "other_punycode_ns"}) {
    EXPECT_TRUE(Contains(sb.steps[step].out, "NXDOMAIN")) << step << ":\n" << sb.steps[step].out;
  }
  for (const char* name : {"evil-allowed.test", "allowed.test.evil.test", "xn--caf-dma.test"}) {
    EXPECT_FALSE(UpstreamAsked(name)) << name << "\n" << Lines(Upstream());
    EXPECT_FALSE(sb.Queries(name).empty()) << name << " is not in the audit:\n" << sb.audit_text;
    for (const auto& q : sb.Queries(name)) {
      EXPECT_EQ(q.reason(), "not_allowlisted") << q.ShortDebugString();
      EXPECT_EQ(q.rcode(), "NXDOMAIN") << q.ShortDebugString();
    }
  }
  EXPECT_TRUE(UpstreamAsked("xn--bcher-kva.test")) << Lines(Upstream());
  // The audit names them normalised: lower case, no trailing dot.
  EXPECT_FALSE(sb.Queries("allowed.test").empty()) << sb.audit_text;
  for (const auto& e : sb.audit) {
    if (!e.has_dns_query()) continue;
    const std::string& n = e.dns_query().name();
    EXPECT_EQ(n, Lower(n)) << e.dns_query().ShortDebugString();
    EXPECT_NE(n.back(), '.') << e.dns_query().ShortDebugString();
  }
  auto log = world_.WebLog();
  EXPECT_TRUE(AnyContains(log, "host=xn--bcher-kva.test path=/hello.txt")) << Lines(log);
  for (const char* name : {"evil-allowed.test", "evil.test", "xn--caf-dma.test"}) {
    EXPECT_FALSE(AnyContains(log, name)) << name << "\n" << Lines(log);
  }
}

TEST_P(Egress, AllowHostAddsAHostForOneRun) {
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"getent", "getent hosts other2.test"},
      {"curl", "curl -sS -m 60 --cacert /workspace/ca.crt https://other2.test/hello.txt"},
  };
  auto with = RunSteps(steps, {"--allow-host", "other2.test"});
  EXPECT_STEP_OK(with, "getent");
  EXPECT_STEP_OK(with, "curl");
  EXPECT_EQ(with.steps["curl"].out, std::string(kHello) + "\n");
  EXPECT_TRUE(UpstreamAsked("other2.test")) << Lines(Upstream());
  EXPECT_TRUE(AnyContains(world_.WebLog(), "host=other2.test path=/hello.txt"));

  world_.Dns().Clear();
  world_.ClearWebLog();
  auto without = RunSteps(steps);
  EXPECT_REFUSED(without, "getent");
  EXPECT_REFUSED(without, "curl");
  EXPECT_FALSE(UpstreamAsked("other2.test")) << Lines(Upstream());
  EXPECT_EQ(Lines(world_.WebLog()), "");
  for (const auto& q : without.Queries("other2.test")) {
    EXPECT_EQ(q.reason(), "not_allowlisted") << q.ShortDebugString();
  }

  // Only a list can grow: posture open has none, and the flag is refused there.
  auto open = Brig(
      {"run", "--profile", Profile("egress-open"), "--allow-host", "other2.test", "--", "true"});
  EXPECT_EQ(open.exit_code, 125) << open.err;
  EXPECT_TRUE(Contains(open.err, "--allow-host")) << open.err;
}

// Inside a sandbox: one A question over TCP to the sandbox's nameserver (busybox cannot),
// printed as "RCODE ANCOUNT ADDRESS" (the last answer's address, "-" if none).
constexpr char kTcpQuery[] = R"py(import socket, struct, sys
q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in sys.argv[1].split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.create_connection(("10.213.0.1", 53), timeout=60)
s.sendall(struct.pack(">H", len(q)) + q)
r = b""
while len(r) < 2 or len(r) < 2 + struct.unpack(">H", r[:2])[0]:
    chunk = s.recv(4096)
    if not chunk:
        break
    r += chunk
r = r[2:]
ancount = struct.unpack(">H", r[6:8])[0]
print(r[3] & 15, ancount, ".".join(str(b) for b in r[-4:]) if ancount else "-")
)py";

TEST_P(Egress, TheResolverAnswersOverTcpToo) {
  ws_.Write("tcpquery.py", kTcpQuery);
  auto sb = RunSteps({
      {"allowed", "python3 /workspace/tcpquery.py allowed.test"},
      {"denied", "python3 /workspace/tcpquery.py denied.test"},
  });
  EXPECT_STEP_OK(sb, "allowed");
  std::istringstream allowed(sb.steps["allowed"].out);
  int rcode = -1, count = -1;
  std::string answer;
  allowed >> rcode >> count >> answer;
  EXPECT_EQ(rcode, 0) << sb.steps["allowed"].out;
  EXPECT_EQ(count, 1) << sb.steps["allowed"].out;
  EXPECT_TRUE(InPool(answer)) << sb.steps["allowed"].out;
  EXPECT_EQ(sb.steps["denied"].out, "3 0 -\n\n");  // NXDOMAIN
  EXPECT_TRUE(UpstreamAsked("allowed.test")) << Lines(Upstream());
  EXPECT_FALSE(UpstreamAsked("denied.test")) << Lines(Upstream());
  for (const char* name : {"allowed.test", "denied.test"}) {
    auto qs = sb.Queries(name);
    ASSERT_EQ(qs.size(), 1u) << sb.audit_text;
    EXPECT_EQ(qs[0].transport(), "tcp") << qs[0].ShortDebugString();
  }
  EXPECT_EQ(sb.Queries("allowed.test")[0].answer(), answer);
}

// A flood of questions for allowed names (each a new subdomain, so none is cached): brig
// drops what exceeds its rate (100 a second after a burst of 200), so neither the upstream
// nor the audit sees more than that, and the result counts the drops.
constexpr char kFlood[] = R"py(import os, socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
start = time.monotonic()
for i in range(1000):
    label = os.urandom(8).hex()
    q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0)
    q += bytes([16]) + label.encode() + bytes([7]) + b"allowed" + bytes([4]) + b"test\0"
    q += struct.pack(">HH", 1, 1)
    s.sendto(q, ("10.213.0.1", 53))
print(int((time.monotonic() - start) * 1000))
time.sleep(1)
)py";

TEST_P(Egress, AQueryFloodReachesTheUpstreamOnlyAtTheRateLimit) {
  ws_.Write("flood.py", kFlood);
  auto sb = RunSteps({{"flood", "python3 /workspace/flood.py"}});
  EXPECT_STEP_OK(sb, "flood");
  double sent_s = std::atoi(sb.steps["flood"].out.c_str()) / 1000.0;
  size_t upstream = 0;
  for (const auto& q : Upstream()) upstream += q.find(".allowed.test") != std::string::npos;
  // The burst, the rate over the time the flood took plus the second after it, and slack
  // for retransmissions of unanswered questions.
  double bound = 200 + 100 * (sent_s + 1.5) + 50;
  EXPECT_LE(static_cast<double>(upstream), bound) << "flood took " << sent_s << " s";
  EXPECT_GE(upstream, 100u) << "the burst goes through";
  // Some of the flood overflows the listener's socket before brig reads it; of what brig
  // reads, what is past the rate is dropped and counted.
  EXPECT_GT(sb.result.network().rate_limited(), 0u)
      << "queries " << sb.result.network().queries();
  EXPECT_LE(sb.result.network().queries(), bound);
  EXPECT_NE(sb.audit_text.find("\"rate_limited\""), std::string::npos);
}

// An answer too big for UDP comes truncated; brig asks the upstream again over TCP and the
// sandbox, which asked over UDP, gets its answer and reaches the host.
TEST_P(Egress, ATruncatedUpstreamAnswerIsAskedAgainOverTcp) {
  world_.Dns().SetA("big.allowed.test", {kWebHost});
  world_.Dns().SetTruncatedOverUdp("big.allowed.test");
  auto sb = RunSteps({
      {"fetch", "curl -sS -m 60 --cacert /workspace/ca.crt https://big.allowed.test/hello.txt"},
  });
  EXPECT_STEP_OK(sb, "fetch");
  EXPECT_EQ(sb.steps["fetch"].out, std::string(kHello) + "\n");
  std::vector<std::string> asked;
  for (const auto& q : Upstream()) {
    if (q.find("big.allowed.test") != std::string::npos) asked.push_back(q);
  }
  EXPECT_EQ(asked, (std::vector<std::string>{"udp A big.allowed.test", "tcp A big.allowed.test"}))
      << Lines(Upstream());
  int a_queries = 0;
  for (const auto& q : sb.Queries("big.allowed.test")) {
    if (q.qtype() != "A") continue;
    ++a_queries;
    EXPECT_EQ(q.transport(), "udp") << "the sandbox's own question";
    EXPECT_EQ(q.rcode(), "NOERROR") << q.ShortDebugString();
    EXPECT_TRUE(InPool(q.answer())) << q.ShortDebugString();
  }
  EXPECT_GE(a_queries, 1) << sb.audit_text;
}

// DNS rebinding, the hole brig closes (issue 6): the sandbox resolves an allowed name while
// it points at a public address, the name then moves to a private one, and the sandbox
// connects to the address it was given. brig connects to the address it checked and does
// not ask the upstream again (which would now say 10.1.2.3).
TEST_P(Egress, ANameThatRebindsToAPrivateAddressStillGoesToTheCheckedOne) {
  world_.Dns().SetA("rebind.allowed.test", {kWebHost});
  Sandbox sb;
  std::thread run([&] {
    sb = RunSteps({
        {"resolve", "addr rebind.allowed.test | tee /tmp/a"},
        {"wait", "while [ ! -e /workspace/go ]; do sleep 0.05; done"},
        {"connect",
         "curl -sS -m 60 --cacert /workspace/ca.crt --resolve "
         "rebind.allowed.test:443:$(cat /tmp/a) https://rebind.allowed.test/hello.txt"},
    });
  });
  // Once the upstream has answered, the name moves.
  Eventually([&] { return UpstreamAsked("rebind.allowed.test"); });
  world_.Dns().SetA("rebind.allowed.test", {kPrivate});
  size_t asked = Upstream().size();
  ws_.Write("go", "");
  run.join();

  EXPECT_STEP_OK(sb, "resolve");
  EXPECT_TRUE(InPool(sb.steps["resolve"].out.substr(0, sb.steps["resolve"].out.find('\n'))))
      << sb.steps["resolve"].out;
  EXPECT_STEP_OK(sb, "connect");
  EXPECT_EQ(sb.steps["connect"].out, std::string(kHello) + "\n");
  EXPECT_TRUE(AnyContains(world_.WebLog(), "host=rebind.allowed.test path=/hello.txt"))
      << Lines(world_.WebLog());
  auto conns = sb.Connections();
  ASSERT_EQ(conns.size(), 1u) << sb.ConnectionText();
  EXPECT_TRUE(conns[0].allowed()) << conns[0].ShortDebugString();
  EXPECT_EQ(conns[0].address(), kWebHost) << conns[0].ShortDebugString();
  auto all = Upstream();
  std::vector<std::string> after(all.begin() + static_cast<long>(asked), all.end());
  EXPECT_FALSE(AnyContains(after, "rebind.allowed.test")) << "brig asked again after the answer:\n"
                                                          << Lines(after);
}

TEST_P(Egress, TheAuditAndTheResultDescribeEveryQueryAndConnection) {
  auto sb = RunSteps({
      {"resolve", "getent ahostsv4 allowed.test"},
      {"https", "curl -sS -m 60 --cacert /workspace/ca.crt https://allowed.test/hello.txt"},
      {"http", "curl -sS -m 60 http://allowed.test/hello.txt"},
      {"denied", "getent ahostsv4 denied.test"},
  });
  EXPECT_STEP_OK(sb, "https");
  EXPECT_STEP_OK(sb, "http");
  EXPECT_REFUSED(sb, "denied");

  std::string id = sb.result.sandbox_id();
  EXPECT_FALSE(id.empty());
  int queries = 0;
  std::map<std::string, int> queries_of;
  for (const auto& e : sb.audit) {
    EXPECT_EQ(e.sandbox_id(), id) << e.ShortDebugString();
    if (!e.has_dns_query()) continue;
    const auto& q = e.dns_query();
    ++queries;
    ++queries_of[q.name()];
    EXPECT_EQ(q.transport(), "udp") << q.ShortDebugString();
    EXPECT_FALSE(q.rcode().empty()) << q.ShortDebugString();
  }
  const std::string answer = sb.AnswerFor("allowed.test");
  EXPECT_TRUE(InPool(answer)) << sb.audit_text;
  for (const auto& q : sb.Queries("allowed.test")) {
    EXPECT_TRUE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.rcode(), "NOERROR") << q.ShortDebugString();
    if (q.qtype() != "A") {
      // AAAA: the sandbox has no IPv6, so no answer.
      EXPECT_EQ(q.reason(), "qtype") << q.ShortDebugString();
      EXPECT_EQ(q.answer(), "") << q.ShortDebugString();
      continue;
    }
    EXPECT_EQ(q.reason(), "allowlisted") << q.ShortDebugString();
    EXPECT_EQ(q.answer(), answer) << "one name, one address: " << q.ShortDebugString();
    ASSERT_EQ(q.addresses_size(), 1) << q.ShortDebugString();
    EXPECT_EQ(q.addresses(0), kWebHost) << q.ShortDebugString();
  }
  ASSERT_FALSE(sb.Queries("denied.test").empty()) << sb.audit_text;
  for (const auto& q : sb.Queries("denied.test")) {
    EXPECT_FALSE(q.allowed()) << q.ShortDebugString();
    EXPECT_EQ(q.reason(), "not_allowlisted") << q.ShortDebugString();
    EXPECT_EQ(q.rcode(), "NXDOMAIN") << q.ShortDebugString();
  }

  auto conns = sb.Connections();
  ASSERT_EQ(conns.size(), 2u) << sb.ConnectionText();
  uint64_t up = 0, down = 0;
  for (const auto& c : conns) {
    EXPECT_TRUE(c.allowed()) << c.ShortDebugString();
    EXPECT_EQ(c.reason(), "allowlisted") << c.ShortDebugString();
    EXPECT_EQ(c.name(), "allowed.test") << c.ShortDebugString();
    EXPECT_EQ(c.dialed(), answer) << c.ShortDebugString();
    EXPECT_EQ(c.address(), kWebHost) << c.ShortDebugString();
    EXPECT_GT(c.bytes_up(), 0u) << c.ShortDebugString();
    EXPECT_GT(c.bytes_down(), sizeof kHello) << c.ShortDebugString();
    up += c.bytes_up();
    down += c.bytes_down();
  }
  EXPECT_EQ(conns[0].protocol(), "tls");
  EXPECT_EQ(conns[0].port(), 443u);
  EXPECT_EQ(conns[1].protocol(), "http");
  EXPECT_EQ(conns[1].port(), 80u);

  const auto& net = sb.result.network();
  EXPECT_EQ(static_cast<int>(net.queries()), queries);
  EXPECT_EQ(net.connections(), 2u);
  std::map<std::string, v1::HostTraffic> hosts;
  for (const auto& h : net.hosts()) hosts[h.name()] = h;
  ASSERT_EQ(hosts.size(), 2u) << net.ShortDebugString();
  const auto& allowed = hosts["allowed.test"];
  EXPECT_EQ(static_cast<int>(allowed.queries()), queries_of["allowed.test"]);
  EXPECT_EQ(allowed.connections(), 2u);
  EXPECT_EQ(allowed.denied(), 0u);
  EXPECT_EQ(allowed.bytes_up(), up);
  EXPECT_EQ(allowed.bytes_down(), down);
  const auto& denied = hosts["denied.test"];
  EXPECT_EQ(static_cast<int>(denied.queries()), queries_of["denied.test"]);
  EXPECT_EQ(static_cast<int>(denied.denied()), queries_of["denied.test"]);
  EXPECT_EQ(denied.connections(), 0u);
  EXPECT_EQ(net.hosts(0).name(), "allowed.test") << "hosts are sorted by name";
}

BRIG_AS_ROOT_AND_AS_A_USER(Egress);

}  // namespace
}  // namespace brig::testing
