// Lifetime of a sandbox: timeout, signals, the supervisor's death, bad input, residue.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

class Lifecycle : public HostTest {};

TEST_F(Lifecycle, TimeoutKillsDetachedDaemons) {
  auto r = RunBrig({"run", "--timeout", "2s", "--", "setsid", "sh", "-c", "sleep 1237 &"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_GE(r.elapsed, 2000ms);
  // Not a measure of speed (tools/bench has those): a bound that only a teardown that hangs
  // reaches, on however loaded a machine.
  EXPECT_LE(r.elapsed, 32s) << "the timeout did not end the run";
  EXPECT_TRUE(FindProcesses("sleep 1237").empty()) << "the daemon outlived its sandbox";
}

TEST_F(Lifecycle, SignalIsForwardedToTheWorkload) {
  ScratchDir d;
  pid_t pid = SpawnBrig({"run", "--", "sh", "-c",
                         "trap 'echo got-term; exit 7' TERM; echo ready; "
                         "while :; do sleep 0.05; done"},
                        d.path());
  ASSERT_TRUE(Eventually([&] { return !ReadFileOrEmpty(d.path() + "/stdout").empty(); }));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 7);
  EXPECT_EQ(ReadFileOrEmpty(d.path() + "/stdout"), "ready\ngot-term\n");
}

TEST_F(Lifecycle, GracePeriodThenKill) {
  ScratchDir d;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = SpawnBrig({"run", "--grace", "1s", "--", "sh", "-c",
                         "trap '' TERM; echo ready; sleep 1238"},
                        d.path());
  ASSERT_TRUE(Eventually([&] { return !ReadFileOrEmpty(d.path() + "/stdout").empty(); }));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 128 + SIGTERM);
  // A bound that only a brig that never kills reaches (see Timeout above).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 31s);
  EXPECT_TRUE(FindProcesses("sleep 1238").empty());
}

TEST_F(Lifecycle, SandboxDiesWithItsSupervisor) {
  ScratchDir d;
  std::string secs = std::to_string(1000000 + getpid());
  std::string marker = "sleep " + secs;
  pid_t pid = SpawnBrig({"run", "--", "sh", "-c", "setsid " + marker + " & " + marker}, d.path());
  ASSERT_TRUE(Eventually([&] { return FindProcesses(marker).size() == 2; }));
  size_t running = FindProcesses(marker).size();
  kill(pid, SIGKILL);
  WaitExit(pid);
  ASSERT_EQ(running, 2u);
  SettleUntilGone(marker);
  EXPECT_TRUE(FindProcesses(marker).empty()) << "the workload outlived a SIGKILLed brig";
  SettleUntilGone("brig-init");
  // What brig could not remove itself, brig gc does (the fixture checks that nothing
  // is left).
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
}

TEST_F(Lifecycle, BadInputStartsNothing) {
  ScratchDir ws, other;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string file = other.Write("a-file", "x");
  std::vector<std::string> base = {"run", "--workspace", ws.path(), "--profile", RwProfile()};
  const std::vector<std::vector<std::string>> bad = {
      {"--no-such-flag"},
      {"--workspace", other.path() + "/missing"},
      {"--workspace", file},
      {"--rootfs", file},
      {"--rootfs", other.path() + "/missing"},
      {"--timeout", "soon"},
      {"--timeout", "0s"},
      {"--tmp-size", "huge"},
      {"--rlimit", "nofile=many"},
      {"--env", "=x"},
  };
  for (const auto& extra : bad) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "touch", "/workspace/ran"});
    auto r = RunBrig(args);
    std::string what = extra[0] + (extra.size() > 1 ? " " + extra[1] : "");
    EXPECT_EQ(r.exit_code, 125) << what;
    EXPECT_TRUE(r.out.empty()) << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("brig: ", 0), 0u) << r.err;
    EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0) << what << " ran the command";
  }
  auto empty = RunBrig({"run", "--"});
  EXPECT_EQ(empty.exit_code, 125);
  EXPECT_NE(empty.err.find("no command"), std::string::npos);
  EXPECT_EQ(RunBrig({"frobnicate"}).exit_code, 125);
}

TEST_F(Lifecycle, UnloadableSeccompPolicyRunsNothing) {
  ScratchDir ws, policies;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ASSERT_EQ(mkdir((policies.path() + "/seccomp").c_str(), 0755), 0);
  policies.Write("seccomp/default.textproto", "default_action: SCMP_ACT_ERRNO\nsyscalls {\n");
  auto r = RunBrig({"run", "--policy-dir", policies.path(), "--workspace", ws.path(),
                    "--profile", RwProfile(), "--", "touch", "/workspace/ran"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("default.textproto:3:"), std::string::npos) << r.err;
  EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0);

  policies.Write("seccomp/default.textproto",
                 "default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"nonsense\" "
                 "action: SCMP_ACT_ALLOW }\n");
  auto u = RunBrig({"run", "--policy-dir", policies.path(), "--profile", RwProfile(), "--", "true"});
  EXPECT_EQ(u.exit_code, 125);
  EXPECT_NE(u.err.find("nonsense"), std::string::npos) << u.err;
}

TEST_F(Lifecycle, ManyRunsLeaveNothing) {
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(RunBrig({"run", "--", "true"}).exit_code, 0);
    EXPECT_EQ(RunBrig({"run", "--", "false"}).exit_code, 1);
    EXPECT_EQ(RunBrig({"run", "--", "no-such-command-anywhere"}).exit_code, 127);
  }
  EXPECT_EQ(RunBrig({"run", "--timeout", "300ms", "--", "sleep", "5"}).exit_code, 124);
}

}  // namespace
}  // namespace brig::testing
