// security/caps: the one path by which brig init and an OCI process take their
// credentials. What config.json makes of them is pure; taking them is tried in a forked
// child (as root: the ids change and the capability sets need it), whose /proc/self/status
// says what it holds.
#include "security/caps.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "oci/process.h"
#include "oci/spec.h"

namespace brig::security {
namespace {

constexpr uint64_t Bit(int cap) { return uint64_t{1} << cap; }

TEST(Credentials, OfAnOciProcessAreItsUserCapabilitiesRlimitsAndNoNewPrivileges) {
  auto p = oci::ParseProcess(R"({"args": ["sh"], "cwd": "/",
      "user": {"uid": 1000, "gid": 1001, "additionalGids": [2000, 3000], "umask": 18},
      "capabilities": {"bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
        "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"], "inheritable": ["CAP_KILL"],
        "ambient": ["CAP_KILL"]},
      "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 654}],
      "noNewPrivileges": true})",
                             "process.json");
  ASSERT_TRUE(p) << p.error().Render();
  auto c = oci::CredentialsOf(*p);
  ASSERT_TRUE(c) << c.error().Render();
  EXPECT_EQ(c->uid, 1000u);
  EXPECT_EQ(c->gid, 1001u);
  EXPECT_EQ(c->groups, (std::vector<gid_t>{2000, 3000}));
  EXPECT_EQ(c->caps.bounding, Bit(CAP_KILL) | Bit(CAP_NET_BIND_SERVICE));
  EXPECT_EQ(c->caps.effective, Bit(CAP_KILL));
  EXPECT_EQ(c->caps.permitted, Bit(CAP_KILL));
  EXPECT_EQ(c->caps.inheritable, Bit(CAP_KILL));
  EXPECT_EQ(c->caps.ambient, Bit(CAP_KILL));
  ASSERT_EQ(c->rlimits.size(), 1u);
  EXPECT_EQ(c->rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(c->rlimits[0].soft, 321u);
  EXPECT_EQ(c->rlimits[0].hard, 654u);
  EXPECT_EQ(c->rlimits[0].name, "RLIMIT_NOFILE");
  EXPECT_TRUE(c->no_new_privs);
  EXPECT_EQ(c->prefix, "process.");
}

TEST(Credentials, AnOciProcessWithoutCapabilitiesOrUserIsRootWithEverySetEmpty) {
  auto p = oci::ParseProcess(R"({"args": ["sh"], "cwd": "/"})", "process.json");
  ASSERT_TRUE(p) << p.error().Render();
  auto c = oci::CredentialsOf(*p);
  ASSERT_TRUE(c) << c.error().Render();
  EXPECT_EQ(c->uid, 0u);
  EXPECT_EQ(c->gid, 0u);
  EXPECT_TRUE(c->groups.empty());
  const CapSets& s = c->caps;
  EXPECT_EQ(s.bounding | s.effective | s.permitted | s.inheritable | s.ambient, 0u);
  EXPECT_TRUE(c->rlimits.empty());
  EXPECT_FALSE(c->no_new_privs);
}

TEST(Credentials, ASandboxsRlimitsAreEntriesWithSoftAsHard) {
  auto list =
      RlimitList({.nofile = 4096, .nproc = 512, .core = 0, .msgqueue = 8192, .sigpending = 64});
  std::map<int, std::pair<uint64_t, std::string>> got;
  for (const Rlimit& r : list) {
    EXPECT_EQ(r.soft, r.hard) << r.name;
    got[r.resource] = {r.hard, r.name};
  }
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(got[RLIMIT_NOFILE], std::make_pair(uint64_t{4096}, std::string("nofile")));
  EXPECT_EQ(got[RLIMIT_NPROC], std::make_pair(uint64_t{512}, std::string("nproc")));
  EXPECT_EQ(got[RLIMIT_CORE], std::make_pair(uint64_t{0}, std::string("core")));
  EXPECT_EQ(got[RLIMIT_MSGQUEUE], std::make_pair(uint64_t{8192}, std::string("msgqueue")));
  EXPECT_EQ(got[RLIMIT_SIGPENDING], std::make_pair(uint64_t{64}, std::string("sigpending")));
}

// ---- taken, in a forked child

// What `step` returns in a child of its own: its error rendered, or "ok" and the lines of
// /proc/self/status that say its credentials (Uid, Gid, Groups, Cap*, NoNewPrivs) as
// "Name=value" with the value's whitespace made single spaces, and its RLIMIT_NOFILE.
std::string InChild(const std::function<Status()>& step) {
  int p[2];
  if (pipe(p) < 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string out;
    if (auto s = step(); !s) {
      out = "error: " + s.error().Render();
    } else {
      std::ifstream in("/proc/self/status");
      std::ostringstream o;
      o << "ok\n";
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("Cap", 0) && line.rfind("Uid", 0) && line.rfind("Gid", 0) &&
            line.rfind("Groups", 0) && line.rfind("NoNewPrivs", 0)) {
          continue;
        }
        std::istringstream fields(line.substr(line.find(':') + 1));
        std::string v, joined;
        while (fields >> v) joined += (joined.empty() ? "" : " ") + v;
        o << line.substr(0, line.find(':')) << "=" << joined << "\n";
      }
      struct rlimit rl;
      getrlimit(RLIMIT_NOFILE, &rl);
      o << "nofile=" << rl.rlim_cur << "/" << rl.rlim_max << "\n";
      out = o.str();
    }
    (void)!write(p[1], out.data(), out.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

bool Has(const std::string& out, const std::string& line) {
  return out.find("\n" + line + "\n") != std::string::npos;
}

std::string Hex(uint64_t mask) {
  char buf[32];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(mask));
  return buf;
}

class CredentialsTaken : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root, to change ids and capability sets";
  }
};

// Each step's place matters: the bounding set after the ids would need CAP_SETPCAP, which
// a uid other than 0 no longer has effective; the ambient set before them would be cleared
// by the uid change; the capabilities asked survive that change only under keepcaps.
TEST_F(CredentialsTaken, AnOciProcessAsUid1000HoldsWhatItAsked) {
  Credentials c;
  c.uid = 1000;
  c.gid = 1001;
  c.groups = {2000, 3000};
  c.caps.bounding = Bit(CAP_CHOWN) | Bit(CAP_KILL) | Bit(CAP_SETUID) | Bit(CAP_NET_BIND_SERVICE);
  c.caps.effective = c.caps.permitted = c.caps.inheritable = c.caps.ambient =
      Bit(CAP_KILL) | Bit(CAP_NET_BIND_SERVICE);
  c.rlimits = {{RLIMIT_NOFILE, 321, 654, "RLIMIT_NOFILE"}};
  c.no_new_privs = true;
  c.prefix = "process.";
  std::string out = InChild([&] { return ApplyCredentials(c); });
  ASSERT_EQ(out.rfind("ok\n", 0), 0u) << out;
  EXPECT_TRUE(Has(out, "Uid=1000 1000 1000 1000")) << out;
  EXPECT_TRUE(Has(out, "Gid=1001 1001 1001 1001")) << out;
  EXPECT_TRUE(Has(out, "Groups=2000 3000")) << out;
  EXPECT_TRUE(Has(out, "CapBnd=" + Hex(c.caps.bounding))) << out;
  for (const char* set : {"CapEff", "CapPrm", "CapInh", "CapAmb"}) {
    EXPECT_TRUE(Has(out, std::string(set) + "=" + Hex(c.caps.ambient))) << out;
  }
  EXPECT_TRUE(Has(out, "NoNewPrivs=1")) << out;
  EXPECT_TRUE(Has(out, "nofile=321/654")) << out;
}

TEST_F(CredentialsTaken, EverySetEmptyLeavesNoCapabilityAnywhere) {
  Credentials c;
  c.uid = c.gid = 1000;
  c.no_new_privs = true;
  std::string out = InChild([&] { return ApplyCredentials(c); });
  ASSERT_EQ(out.rfind("ok\n", 0), 0u) << out;
  for (const char* set : {"CapBnd", "CapEff", "CapPrm", "CapInh", "CapAmb"}) {
    EXPECT_TRUE(Has(out, std::string(set) + "=" + Hex(0))) << out;
  }
  EXPECT_TRUE(Has(out, "Groups=")) << out;
  EXPECT_TRUE(Has(out, "NoNewPrivs=1")) << out;
}

// As brig init becomes the sandbox user: every capability it holds kept, none dropped from
// the bounding set.
TEST_F(CredentialsTaken, TheCapabilitiesHeldAreKeptAcrossAUidChange) {
  std::string own = InChild([] { return Status(); });
  std::map<std::string, std::string> held;
  std::istringstream lines(own);
  for (std::string line; std::getline(lines, line);) {
    if (size_t eq = line.find('='); eq != std::string::npos) {
      held[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  Credentials c;
  c.uid = c.gid = 1000;
  c.caps.bounding = kEveryCapability;
  c.caps.effective = c.caps.permitted = std::stoull(held["CapPrm"], nullptr, 16);
  std::string out = InChild([&] { return ApplyCredentials(c); });
  ASSERT_EQ(out.rfind("ok\n", 0), 0u) << out;
  EXPECT_TRUE(Has(out, "Uid=1000 1000 1000 1000")) << out;
  EXPECT_TRUE(Has(out, "CapBnd=" + held["CapBnd"])) << out;
  EXPECT_TRUE(Has(out, "CapPrm=" + held["CapPrm"])) << out;
  EXPECT_TRUE(Has(out, "CapEff=" + held["CapPrm"])) << out;
  EXPECT_TRUE(Has(out, "CapAmb=" + Hex(0))) << out;
}

// Docker's and podman's default set for a root container holds CAP_SETPCAP, which
// libcap-ng 0.8.3's capng_change_id would drop whatever was asked.
TEST_F(CredentialsTaken, ARootProcessKeepsCapSetpcapWhenAsked) {
  Credentials c;
  c.caps.bounding = c.caps.effective = c.caps.permitted = Bit(CAP_SETPCAP) | Bit(CAP_KILL);
  std::string out = InChild([&] { return ApplyCredentials(c); });
  ASSERT_EQ(out.rfind("ok\n", 0), 0u) << out;
  EXPECT_TRUE(Has(out, "Uid=0 0 0 0")) << out;
  for (const char* set : {"CapBnd", "CapEff", "CapPrm"}) {
    EXPECT_TRUE(Has(out, std::string(set) + "=" + Hex(c.caps.permitted))) << out;
  }
}

// The kernel raises an ambient capability only where it is permitted and inheritable; one
// that is not is left out, as runc leaves it (runc's own spec asks for such), never an
// error and never more privilege.
TEST_F(CredentialsTaken, AnAmbientCapabilityTheKernelWouldRefuseIsLeftOut) {
  Credentials c;
  c.uid = c.gid = 1000;
  c.caps.bounding = c.caps.effective = c.caps.permitted = c.caps.inheritable = Bit(CAP_KILL);
  c.caps.ambient = Bit(CAP_KILL) | Bit(CAP_NET_BIND_SERVICE);  // not inheritable nor permitted
  c.prefix = "process.";
  std::string out = InChild([&] { return ApplyCredentials(c); });
  ASSERT_EQ(out.rfind("ok\n", 0), 0u) << out;
  EXPECT_TRUE(Has(out, "CapAmb=" + Hex(Bit(CAP_KILL)))) << out;
}

// Where setgroups(2) is denied: the child maps root to itself in a user namespace of its
// own, as an unprivileged process may, with setgroups denied first.
Status InUserNamespaceDenyingSetgroups(const std::vector<gid_t>& held) {
  if (setgroups(held.size(), held.data()) < 0) return SysError("setgroups", "held");
  if (unshare(CLONE_NEWUSER) < 0) return SysError("unshare", "user namespace");
  for (const auto& [file, text] :
       {std::pair{"/proc/self/setgroups", "deny"}, std::pair{"/proc/self/uid_map", "0 0 1"},
        std::pair{"/proc/self/gid_map", "0 0 1"}}) {
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == static_cast<ssize_t>(strlen(text));
    if (fd >= 0) close(fd);
    if (!ok) return SysError("write", file);
  }
  return {};
}

TEST_F(CredentialsTaken, SetgroupsDeniedPassesOnlyWhenNoGroupIsAskedNorHeld) {
  Credentials none;
  none.prefix = "process.";
  std::string out = InChild([&]() -> Status {
    BRIG_TRY(InUserNamespaceDenyingSetgroups({}));
    return ApplyCredentials(none);
  });
  EXPECT_EQ(out.rfind("ok\n", 0), 0u) << out;

  Credentials asked = none;
  asked.groups = {0};
  EXPECT_EQ(InChild([&]() -> Status {
              BRIG_TRY(InUserNamespaceDenyingSetgroups({}));
              return ApplyCredentials(asked);
            }),
            "error: setgroups 'process.user.additionalGids': Operation not permitted");

  // The groups it holds (the host's, from its parent) would stay its own.
  EXPECT_EQ(InChild([&]() -> Status {
              BRIG_TRY(InUserNamespaceDenyingSetgroups({4242}));
              return ApplyCredentials(none);
            }),
            "error: setgroups 'process.user.additionalGids': Operation not permitted");
}

}  // namespace
}  // namespace brig::security
