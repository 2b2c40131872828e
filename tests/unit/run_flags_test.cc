// `brig run` flag parsing and the exit-code mapping of the output contract.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/profile.h"
#include "testlib/testlib.h"

namespace brig::cli {
namespace {

Result<RunRequest> Parse(std::vector<std::string> args) { return ParseRunArgs(args); }

TEST(RunFlags, ParsesOptionsAndCommand) {
  auto r = Parse({"--workspace", "/w", "--workspace-mode=rw", "--tmp-size", "64M", "--timeout",
                  "5s", "--env", "A=1", "--pass-env", "TERM", "--rlimit", "nofile=10", "--",
                  "sh", "-c", "echo hi"});
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->workspace, "/w");
  EXPECT_EQ(r->workspace_mode, fs::WorkspaceMode::kReadWrite);
  EXPECT_EQ(r->tmp_size, 64u << 20);
  EXPECT_EQ(r->timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(r->rlimit_nofile, 10u);
  EXPECT_EQ(r->set_env, std::vector<std::string>{"A=1"});
  EXPECT_EQ(r->pass_env, std::vector<std::string>{"TERM"});
  EXPECT_EQ(r->argv, (std::vector<std::string>{"sh", "-c", "echo hi"}));
}

// A Docker or bubblewrap flag brig does not take is refused naming brig's way to the same
// end (issue 32, item 6); an option no tool has gets the plain refusal.
TEST(RunFlags, DockerAndBwrapFlagsNameTheBrigWay) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"-it", "true"}, "-t, --tty"},
           {{"-e", "A=1", "true"}, "--env K=V"},
           {{"-v", "/a:/b", "true"}, "--ro-bind SRC DST"},
           {{"--network", "none", "true"}, "network.posture"},
           {{"--network=host", "true"}, "network.posture"},
           {{"--rm", "true"}, "leaves nothing behind"},
           {{"--user", "1000", "true"}, "uid and gid 1000"},
           {{"--bind", "/a", "/b", "true"}, "brig-profile(5) MOUNTS"},
           {{"--unshare-all", "true"}, "every namespace new"},
       }) {
    auto r = Parse(c.args);
    ASSERT_FALSE(r) << c.args[0];
    EXPECT_NE(r.error().Render().find("unknown option; "), std::string::npos) << r.error().Render();
    EXPECT_NE(r.error().Render().find(c.says), std::string::npos) << r.error().Render();
  }
  auto plain = Parse({"--frobnicate", "true"});
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().Render(),
            "brig run '--frobnicate': unknown option (see brig run --help)");
}

TEST(RunFlags, CommandWithoutDashDash) {
  auto r = Parse({"--timeout", "1m", "true", "--not-a-brig-flag"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->argv, (std::vector<std::string>{"true", "--not-a-brig-flag"}));
}

char* kNoEnv[] = {nullptr};

Result<config::Sandbox> Resolve(std::vector<std::string> args) {
  args.insert(args.begin(), {"--policy-dir", BRIG_SOURCE_POLICY_DIR});
  auto r = Parse(args);
  if (!r) return std::move(r).error();
  return PlanRun(*r, kNoEnv);
}

TEST(RunFlags, DefaultsAreSafe) {
  auto r = Parse({"true"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->profile, "untrusted-code-read");
  auto sb = Resolve({"true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->isolated);
  EXPECT_EQ(sb->fs.workspace_mode, fs::WorkspaceMode::kReadOnly);
  EXPECT_EQ(sb->timeout, std::chrono::minutes(30));
  EXPECT_EQ(sb->rlimits.core, 0u);
  EXPECT_NE(sb->seccomp_policy.find("/seccomp/default.textproto"), std::string::npos);
}

TEST(RunFlags, WaitAllIsAskedForAndNeedsBrigInit) {
  auto sb = Resolve({"true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->wait_all) << "the phase ends with its command unless asked";
  auto all = Resolve({"--wait-all", "true"});
  ASSERT_TRUE(all) << all.error().Render();
  EXPECT_TRUE(all->wait_all);
  auto none = Resolve({"--wait-all", "--profile", "none", "true"});
  ASSERT_FALSE(none);
  EXPECT_EQ(ExitCode(none.error().kind), 125);
  EXPECT_EQ(none.error().Render(), "--wait-all: profile 'none' has no brig init (ISOLATION_NONE) "
                                   "to wait for what the command leaves running");
}

TEST(Profiles, RunOptionsChangeOnlyLimits) {
  auto sb = Resolve({"--timeout", "5s", "--tmp-size", "64M", "--rlimit", "nofile=100", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->timeout, std::chrono::seconds(5));
  EXPECT_EQ(sb->fs.tmp_size, 64u << 20);
  EXPECT_EQ(sb->rlimits.nofile, 100u);
  EXPECT_EQ(sb->rlimits.nproc, 4096u);  // the profile's, untouched
  EXPECT_FALSE(sb->output_limit) << "no output bound unless one is asked for";
  auto bounded = Resolve({"--output-limit", "10M", "true"});
  ASSERT_TRUE(bounded) << bounded.error().Render();
  EXPECT_EQ(bounded->output_limit, 10u << 20);
  EXPECT_FALSE(sb->egress_budget) << "no egress budget unless one is asked for";
  auto budget = Resolve({"--egress-budget", "64K", "true"});
  ASSERT_TRUE(budget) << budget.error().Render();
  EXPECT_EQ(budget->egress_budget, 64u << 10);
}

TEST(Profiles, APostureCannotBeWidenedFromTheCommandLine) {
  auto rw = Resolve({"--workspace-mode", "rw", "true"});
  ASSERT_FALSE(rw);
  EXPECT_EQ(rw.error().kind, ErrorKind::kPolicy);
  EXPECT_EQ(ExitCode(rw.error().kind), 125);
  EXPECT_EQ(rw.error().Render(),
            "--workspace-mode 'rw': profile 'untrusted-code-read' fixes filesystem.workspace = "
            "WORKSPACE_RO; name another profile");
  // Restating the profile's own value is fine.
  EXPECT_TRUE(Resolve({"--workspace-mode", "ro", "true"}));
}

// A profile of posture allowlist or open, in a scratch directory; the test world's
// addresses as floor exceptions.
std::string EgressProfile(const brig::testing::ScratchDir& dir, const char* posture,
                          const std::string& extra = "") {
  return dir.Write("egress.textproto",
                   std::string("description: \"unit\"\nisolation: ISOLATION_SANDBOX\n"
                               "filesystem { workspace: WORKSPACE_RO }\n"
                               "network { posture: ") + posture + extra + " }\n"
                       "security { seccomp_policy: \"default\" }\n");
}

TEST(Profiles, AllowHostAddsToTheProfilesListForOneRun) {
  brig::testing::ScratchDir dir;
  std::string p = EgressProfile(dir, "POSTURE_ALLOWLIST",
                                " allow_hosts: \"allowed.test\" allow_addresses: \"198.51.100.0/24\"");
  auto sb = Resolve({"--profile", p, "--allow-host", "*.extra.test:443", "--dns-upstream",
                     "198.51.100.53:5353", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  ASSERT_TRUE(sb->network);
  EXPECT_FALSE(sb->egress.open);
  EXPECT_TRUE(sb->egress.allowlist.Allows("www.allowed.test", 80));
  EXPECT_TRUE(sb->egress.allowlist.Allows("a.extra.test", 443));
  EXPECT_FALSE(sb->egress.allowlist.Allows("a.extra.test", 80));
  EXPECT_FALSE(sb->egress.allowlist.Allows("extra.test", 443));
  EXPECT_EQ(sb->egress.floor.Refuses(*egress::ParseAddress("198.51.100.10")), "");
  EXPECT_NE(sb->egress.floor.Refuses(*egress::ParseAddress("10.0.0.1")), "");
  ASSERT_EQ(sb->egress.upstreams.size(), 1u);
  EXPECT_EQ(sb->egress.upstreams[0].Str(), "198.51.100.53:5353");
  // Without the flag the name is not on the list.
  sb = Resolve({"--profile", p, "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->egress.allowlist.Allows("a.extra.test", 443));
}

// --deny: the run's word wins over the profile's network.on_deny, which is continue
// unless set; a value but stop or continue is refused.
TEST(Profiles, DenyComesFromTheRunThenTheProfile) {
  brig::testing::ScratchDir dir;
  std::string go = EgressProfile(dir, "POSTURE_OPEN");
  auto sb = Resolve({"--profile", go, "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->deny_stop);
  sb = Resolve({"--profile", go, "--dns-upstream", "198.51.100.53", "--deny=stop", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->deny_stop);
  brig::testing::ScratchDir dir2;
  std::string stop = EgressProfile(dir2, "POSTURE_OPEN", " on_deny: ON_DENY_STOP");
  sb = Resolve({"--profile", stop, "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->deny_stop);
  sb =
      Resolve({"--profile", stop, "--dns-upstream", "198.51.100.53", "--deny", "continue", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->deny_stop);
  auto bad = Parse({"--deny", "exit", "true"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Render(), "--deny 'exit': expected stop or continue");
}

TEST(Profiles, EgressFlagsNeedAPostureThatHasThem) {
  brig::testing::ScratchDir dir;
  std::string open = EgressProfile(dir, "POSTURE_OPEN");
  auto r = Resolve({"--profile", open, "--allow-host", "x.test", "true"});
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCode(r.error().kind), 125);
  EXPECT_NE(r.error().Render().find("has posture open, which has no allowlist"), std::string::npos)
      << r.error().Render();
  auto sb = Resolve({"--profile", open, "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->egress.open);
  for (const char* flag : {"--allow-host", "--dns-upstream"}) {
    auto none = Resolve({flag, flag == std::string("--allow-host") ? "x.test" : "198.51.100.53", "true"});
    ASSERT_FALSE(none) << flag;
    EXPECT_EQ(none.error().Render(),
              std::string(flag) + ": profile 'untrusted-code-read' gives the sandbox no network interface");
  }
}

TEST(Profiles, AFloorExceptionNeverCoversMetadata) {
  brig::testing::ScratchDir dir;
  auto r = Resolve({"--profile", EgressProfile(dir, "POSTURE_OPEN", " allow_addresses: \"169.254.0.0/16\""),
                    "true"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().Render().find("'network.allow_addresses': '169.254.0.0/16': holds the cloud "
                                    "metadata address 169.254.169.254"),
            std::string::npos)
      << r.error().Render();
  r = Resolve({"--profile", EgressProfile(dir, "POSTURE_NONE", " allow_addresses: \"192.0.2.1\""), "true"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().Render().find("network.allow_addresses"), std::string::npos) << r.error().Render();
}

TEST(Profiles, ACopyMayNarrowAReadWriteWorkspaceButWidenNothing) {
  brig::testing::ScratchDir dir;
  std::string rw = BRIG_SOURCE_POLICY_DIR "/../tests/host/profiles/workspace-rw.textproto";
  std::string ws = dir.path() + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(chown(ws.c_str(), 1234, 1234), 0);
  auto sb = Resolve({"--profile", rw, "--workspace", ws, "--workspace-mode", "copy",
                     "--export-changes", dir.path() + "/out", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->fs.workspace_mode, fs::WorkspaceMode::kCopy);
  EXPECT_EQ(sb->fs.export_changes, dir.path() + "/out");
  // From read-only, a copy would let the sandbox write where the profile says it cannot.
  auto ro = Resolve({"--workspace", ws, "--workspace-mode", "copy", "true"});
  ASSERT_FALSE(ro);
  EXPECT_EQ(ro.error().Render(), "--workspace-mode 'copy': profile 'untrusted-code-read' fixes "
                                 "filesystem.workspace = WORKSPACE_RO; name another profile");
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const Bad bad[] = {
      {{"--profile", rw, "--workspace", ws, "--export-changes", dir.path() + "/out", "true"},
       "needs a copy workspace"},
      {{"--profile", rw, "--workspace-mode", "copy", "--export-changes", dir.path() + "/out", "true"},
       "needs a copy workspace"},
      {{"--profile", rw, "--workspace", ws, "--workspace-mode", "copy", "--export-changes", ws, "true"},
       "already exists"},
      {{"--profile", rw, "--workspace", ws, "--workspace-mode", "copy", "--export-changes",
        ws + "/out", "true"},
       "inside the workspace"},
      {{"--profile", rw, "--workspace", ws, "--workspace-mode", "copy", "--export-changes",
        dir.path() + "/no/such/out", "true"},
       "--export-changes"},
  };
  for (const auto& b : bad) {
    auto r = Resolve(b.args);
    ASSERT_FALSE(r) << b.message;
    EXPECT_NE(r.error().Render().find(b.message), std::string::npos) << r.error().Render();
    EXPECT_EQ(ExitCode(r.error().kind), 125);
  }
}

// --disk-size caps a copy's changes, and only a copy's: a tmpfs of it without --copy-dir,
// the profile's limits.disk unless the run sets its own. Without a copy it is refused.
TEST(Profiles, ADiskCapNeedsACopyWorkspace) {
  brig::testing::ScratchDir dir;
  std::string rw = BRIG_SOURCE_POLICY_DIR "/../tests/host/profiles/workspace-rw.textproto";
  std::string ws = dir.path() + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(chown(ws.c_str(), 1234, 1234), 0);
  auto sb = Resolve({"--profile", rw, "--workspace", ws, "--workspace-mode", "copy",
                     "--disk-size", "64M", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->fs.disk_size, 64u << 20);
  EXPECT_EQ(Resolve({"--profile", rw, "--workspace", ws, "--workspace-mode", "copy", "true"})
                ->fs.disk_size,
            0u);
  dir.Write("capped.textproto",
            "isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_COPY }\n"
            "network { posture: POSTURE_NONE }\nsecurity { seccomp_policy: \"default\" }\n"
            "limits { disk: \"16M\" }\n");
  std::string capped = dir.path() + "/capped.textproto";
  EXPECT_EQ(Resolve({"--profile", capped, "--workspace", ws, "true"})->fs.disk_size, 16u << 20);
  EXPECT_EQ(Resolve({"--profile", capped, "--workspace", ws, "--disk-size", "2M", "true"})
                ->fs.disk_size,
            2u << 20);
  EXPECT_EQ(Resolve({"--profile", capped, "true"})->fs.disk_size, 0u) << "no workspace, no copy";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--profile", rw, "--workspace", ws, "--disk-size", "8M", "true"},
           {"--workspace", ws, "--disk-size", "8M", "true"},
           {"--profile", rw, "--workspace-mode", "copy", "--disk-size", "8M", "true"}}) {
    auto r = Resolve(args);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().Render().rfind("--disk-size: needs a copy workspace", 0), 0u)
        << r.error().Render();
    EXPECT_EQ(ExitCode(r.error().kind), 125);
  }
  auto none = Resolve({"--profile", "none", "--disk-size", "8M", "true"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("--disk-size"), std::string::npos);
}

TEST(Profiles, UnknownProfileNamesTheKnownOnes) {
  auto r = Resolve({"--profile", "no-such-profile", "true"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().Render().find("profile 'no-such-profile': unknown"), std::string::npos)
      << r.error().Render();
  EXPECT_NE(r.error().Render().find("untrusted-code-read"), std::string::npos);
}

// What the shipped writable profiles hold read-only: git's, husky's and brig's own, and
// what editors and agents run or trust later on the host.
const std::vector<std::string> kShippedProtected = {
    ".git/hooks", ".git/config", ".gitmodules", ".husky", ".brig",
    ".vscode",    ".idea",       ".claude",     ".mcp.json", ".envrc"};

TEST(Profiles, UntrustedCodeWriteIsACopyWithItsProtectedPaths) {
  brig::testing::ScratchDir dir;
  ASSERT_EQ(chown(dir.path().c_str(), 1234, 1234), 0);
  auto sb = Resolve({"--profile", "untrusted-code-write", "--workspace", dir.path(),
                     "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->fs.workspace_mode, fs::WorkspaceMode::kCopy);
  EXPECT_EQ(sb->fs.protected_paths, kShippedProtected);
  EXPECT_TRUE(sb->network);
}

TEST(Profiles, TrustedCodeWriteIsReadWriteWithItsProtectedPaths) {
  brig::testing::ScratchDir dir;
  ASSERT_EQ(chown(dir.path().c_str(), 1234, 1234), 0);
  auto sb = Resolve({"--profile", "trusted-code-write", "--workspace", dir.path(),
                     "--dns-upstream", "198.51.100.53", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->fs.workspace_mode, fs::WorkspaceMode::kReadWrite);
  EXPECT_EQ(sb->fs.protected_paths, kShippedProtected);
}

TEST(Profiles, NoneIsExplicitAndUnconfined) {
  auto sb = Resolve({"--profile", "none", "true"});
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->isolated);
  EXPECT_FALSE(Resolve({"--profile", "none", "--workspace-mode", "ro", "true"}));
}

TEST(Profiles, ShippedProfilesAllParse) {
  auto names = config::ListPolicyNames(BRIG_SOURCE_POLICY_DIR, "profiles");
  EXPECT_EQ(names, (std::vector<std::string>{"none", "trusted-code-write", "untrusted-code-read",
                                             "untrusted-code-write"}));
  for (const auto& n : names) {
    auto p = config::LoadProfile(BRIG_SOURCE_POLICY_DIR, n);
    EXPECT_TRUE(p) << n << ": " << p.error().Render();
  }
}

TEST(Profiles, MalformedProfilesNameFileLineColumn) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"isolation: ISOLATION_SANDBOX\nbogus: 1\n", "p:2:"},
      {"isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_NOPE }\n", "p:2:"},
      {"isolation: ISOLATION_SANDBOX\nnetwork { posture: POSTURE_NONE }\n",
       "p 'filesystem.workspace': must be set"},
      {"isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RO }\n"
       "network { posture: POSTURE_NONE }\n",
       "p 'security.seccomp_policy': must name a policy"},
      {"isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RW "
       "protected_paths: \"../etc\" }\n",
       "p:2:38 'filesystem.protected_paths': '../etc' leaves the workspace"},
      {"isolation: ISOLATION_NONE\nlimits { timeout: \"soon\" }\n", "p:2:10 'limits.timeout'"},
      {"isolation: ISOLATION_NONE\nlimits { memory: \"0\" }\n", "p:2:10 'limits.memory'"},
      {"isolation: ISOLATION_NONE\nlimits { swap: \"1G\" }\n", "p:2:10 'limits.swap': needs"},
      {"isolation: ISOLATION_NONE\nlimits { memory: \"1G\" swap: \"x\" }\n", "p:2:23 'limits.swap'"},
      {"isolation: ISOLATION_NONE\nlimits { cpus: \"0.001\" }\n", "p:2:10 'limits.cpus'"},
      {"isolation: ISOLATION_NONE\nlimits { pids: 0 }\n", "p:2:10 'limits.pids'"},
      {"isolation: ISOLATION_NONE\nlimits { user_counts { namespaces: 0 } }\n",
       "p:2:24 'limits.user_counts.namespaces': must be from 1 to 2147483647"},
      {"isolation: ISOLATION_NONE\nlimits { user_counts { inotify_watches: 2147483648 } }\n",
       "p:2:24 'limits.user_counts.inotify_watches'"},
      {"isolation: ISOLATION_NONE\nlimits { optional_limits: LIMIT_UNSPECIFIED }\n",
       "p:2:10 'limits.optional_limits'"},
      {"isolation: ISOLATION_NONE\nlimits { optional_limits: LIMIT_NOPE }\n", "p:2:"},
      {"isolation: ISOLATION_NONE\nlimits { disk: \"512K\" }\n",
       "p:2:10 'limits.disk': must be at least 1M"},
      {"isolation: ISOLATION_NONE\nlimits { disk: \"1G\" }\n",
       "p:2:10 'limits.disk': ISOLATION_NONE has no copy workspace to cap"},
      {"isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RW }\n"
       "network { posture: POSTURE_NONE }\nsecurity { seccomp_policy: \"default\" }\n"
       "limits { disk: \"1G\" }\n",
       "p:5:10 'limits.disk': only a copy workspace (WORKSPACE_COPY) can be capped"},
      {"isolation: ISOLATION_NONE\nnetwork { posture: POSTURE_OPEN }\n", "p:1:1 'isolation'"},
      {"isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RO }\n"
       "network { posture: POSTURE_ALLOWLIST allow_hosts: \"example.com\" "
       "allow_hosts: \"foo..example.net\" }\nsecurity { seccomp_policy: \"default\" }\n",
       "p:3:65 'network.allow_hosts': 'foo..example.net': "},
      {"", "p 'isolation'"},
  };
  for (const auto& c : cases) {
    auto p = config::ParseProfile(c.text, "p");
    ASSERT_FALSE(p) << c.text;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(p.error().Render().rfind(c.message, 0), 0u) << p.error().Render();
  }
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(RunFlags, BadInputNamesTheProblem) {
  const BadCase cases[] = {
      {{"--bogus", "true"}, "brig run '--bogus': unknown option"},
      {{"--timeout", "5x", "true"}, "--timeout '5x': unknown unit 'x'"},
      {{"--tmp-size", "lots", "true"}, "--tmp-size 'lots'"},
      {{"--output-limit", "0", "true"}, "--output-limit '0': must be at least 1 byte"},
      {{"--egress-budget", "0", "true"}, "--egress-budget '0': must be at least 1 byte"},
      {{"--workspace-mode", "wx", "true"}, "--workspace-mode 'wx': expected ro, rw or copy"},
      {{"--env", "NOEQUALS", "true"}, "--env 'NOEQUALS'"},
      {{"--rlimit", "stack=1", "true"}, "unknown limit 'stack'"},
      {{"--memory", "lots", "true"}, "--memory 'lots'"},
      {{"--memory", "5M", "true"}, "--memory '5M': must be at least 6M"},
      {{"--swap", "-1", "true"}, "--swap '-1'"},
      {{"--pids", "0", "true"}, "--pids '0'"},
      {{"--pids", "unlimited", "true"}, "--pids 'unlimited'"},
      {{"--pids", "4194305", "true"}, "--pids '4194305': expected a number from 1 to 4194304"},
      {{"--cpus", "0.001", "true"}, "--cpus '0.001': must be at least 0.01"},
      {{"--disk-size", "512K", "true"}, "--disk-size '512K': must be at least 1M"},
      {{"--disk-size", "lots", "true"}, "--disk-size 'lots'"},
      {{"--cgroup-parent", "relative", "true"}, "--cgroup-parent 'relative'"},
      {{"--cgroup-parent", "/a/../b", "true"}, "--cgroup-parent '/a/../b'"},
      {{"--allow-host", "evil.test/x", "true"}, "--allow-host: allowlist entry 'evil.test/x'"},
      {{"--allow-host", "*", "true"}, "--allow-host: allowlist entry '*'"},
      {{"--allow-host", "10.0.0.1", "true"}, "--allow-host: allowlist entry '10.0.0.1'"},
      {{"--dns-upstream", "resolver.test", "true"}, "--dns-upstream 'resolver.test'"},
      {{"--dns-upstream", "10.0.0.1:0", "true"}, "--dns-upstream '10.0.0.1:0'"},
      {{"--timeout"}, "--timeout: needs a value"},
      {{"--"}, "no command given"},
      {{}, "no command given"},
      {{"--", ""}, "no command given"},
      {{"--help=yes"}, "takes no value"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.args);
    ASSERT_FALSE(r) << c.message;
    EXPECT_NE(r.error().Render().find(c.message), std::string::npos)
        << "got: " << r.error().Render();
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(ExitCode(r.error().kind), 125);
  }
}

TEST(RunFlags, EnvironmentIsBuiltFromNothing) {
  auto r = Parse({"--pass-env", "BRIG_T_SET", "--pass-env", "BRIG_T_UNSET", "--env",
                  "LANG=fr_FR.UTF-8", "true"});
  ASSERT_TRUE(r);
  std::string secret = "BRIG_T_SECRET=hunter2", set = "BRIG_T_SET=yes";
  char* host_env[] = {secret.data(), set.data(), nullptr};
  r->policy_dir = std::string(BRIG_SOURCE_POLICY_DIR);
  auto sb = PlanRun(*r, host_env);
  ASSERT_TRUE(sb) << sb.error().Render();
  const auto& env = sb->env;
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has("BRIG_T_SET=yes"));
  EXPECT_TRUE(has("LANG=fr_FR.UTF-8"));
  EXPECT_TRUE(has("HOME=/tmp"));
  for (const auto& kv : env) {
    EXPECT_EQ(kv.find("SECRET"), std::string::npos) << kv;
    EXPECT_EQ(kv.find("UNSET"), std::string::npos) << kv;
  }
  EXPECT_EQ(sb->id.rfind("brig-", 0), 0u);
}

TEST(ExitCodes, FollowTheOutputContract) {
  EXPECT_EQ(ExitCode(ErrorKind::kNotFound), 127);
  EXPECT_EQ(ExitCode(ErrorKind::kNotExecutable), 126);
  EXPECT_EQ(ExitCode(ErrorKind::kSetup), 125);
  EXPECT_EQ(ExitCode(ErrorKind::kPolicy), 125);
  EXPECT_EQ(CodesFor(ErrorKind::kNotFound).error_code, "not_found");
  EXPECT_EQ(CodesFor(ErrorKind::kNotExecutable).error_code, "not_executable");
  EXPECT_EQ(CodesFor(ErrorKind::kPolicy).error_code, "policy_denied");
  EXPECT_EQ(CodesFor(ErrorKind::kBadInput).error_code, "setup_failed");
  EXPECT_EQ(CodesFor(ErrorKind::kInternal).error_code, "internal");
}

TEST(RunFlags, ChdirStaysInTheWorkspace) {
  EXPECT_EQ(*Parse({"--chdir", "/workspace/a//b/", "true"})->chdir, "a/b");
  EXPECT_EQ(*Parse({"--chdir", "./a", "true"})->chdir, "a");
  EXPECT_EQ(*Parse({"--chdir", "/workspace", "true"})->chdir, "");
  EXPECT_EQ(Parse({"--chdir", "/etc", "true"}).error().Render(),
            "--chdir '/etc': not inside the workspace (/workspace or a path under it)");
  EXPECT_FALSE(Parse({"--chdir", "/workspacex", "true"}));
  EXPECT_EQ(Parse({"--chdir", "a/../..", "true"}).error().Render(),
            "--chdir 'a/../..': '..' may lead out of the workspace");
}

TEST(RunFlags, NameIsAContainerName) {
  EXPECT_EQ(Parse({"--name", "task-7", "true"})->name, "task-7");
  EXPECT_EQ(Parse({"--name", "a/b", "true"}).error().Render(),
            "--name 'a/b': expected [A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  EXPECT_FALSE(Parse({"--name", std::string(65, 'a'), "true"}));
}

TEST(RunFlags, MountNamesOnlyASource) {
  auto r = Parse({"--mount", "data=/srv/d", "--mount=cache=/x", "true"});
  ASSERT_TRUE(r) << r.error().Render();
  ASSERT_EQ(r->mounts.size(), 2u);
  EXPECT_EQ(r->mounts[0], std::make_pair(std::string("data"), std::string("/srv/d")));
  EXPECT_FALSE(Parse({"--mount", "data", "true"}));
  EXPECT_FALSE(Parse({"--mount", "data=", "true"}));
  EXPECT_FALSE(Parse({"--mount", "../x=/y", "true"}));
  EXPECT_EQ(Parse({"--mount", "d=/a", "--mount", "d=/b", "true"}).error().Render(),
            "--mount 'd=/b': mount 'd' given twice");
}

TEST(RunFlags, EnvFilesAreKeptForThePlan) {
  auto r = Parse({"--env-file", "a.env", "--env-file=b.env", "true"});
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->env_files, (std::vector<std::string>{"a.env", "b.env"}));
}

}  // namespace
}  // namespace brig::cli
