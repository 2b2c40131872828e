// Lifetime of a sandbox: timeout, signals, the supervisor's death, bad input, residue.
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "host/host_fixture.h"
#include "proto/brig.pb.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

class Lifecycle : public HostTest {};

TEST_F(Lifecycle, TimeoutKillsDetachedDaemons) {
  auto r = RunBrig(
      {"run", "--wait-all", "--timeout", "2s", "--", "setsid", "sh", "-c", "sleep 1237 &"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_GE(r.elapsed, 2000ms);
  // Not a measure of speed (tools/bench has those): a bound that only a teardown that hangs
  // reaches, on however loaded a machine.
  EXPECT_LE(r.elapsed, 32s) << "the timeout did not end the run";
  EXPECT_TRUE(FindProcesses("sleep 1237").empty()) << "the daemon outlived its sandbox";
}

v1::RunResult ReadResult(const std::string& path) {
  v1::RunResult res;
  std::string json = ReadFileOrEmpty(path);
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
  return res;
}

// As with Docker and bwrap: the command's exit ends the phase with the command's status,
// and what it left running is killed and counted.
TEST_F(Lifecycle, ThePhaseEndsWithItsCommand) {
  ScratchDir out;
  const std::string result = out.path() + "/result.json";
  const std::string marker = "sleep " + std::to_string(4000000 + getpid());
  auto r = RunBrig({"run", "--timeout", "20s", "--result", result, "--", "sh", "-c",
                    marker + " & exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  v1::RunResult res = ReadResult(result);
  EXPECT_EQ(res.exit_code(), 3);
  EXPECT_EQ(res.error_code(), "");
  EXPECT_EQ(res.left_killed(), 1u);
  EXPECT_TRUE(FindProcesses(marker).empty()) << "what the command left outlived the phase";
}

// A daemon in a session of its own, its parent gone, is still in the sandbox's pid
// namespace: it ends with the phase.
TEST_F(Lifecycle, ADoubleForkedDaemonDoesNotOutliveThePhase) {
  ScratchDir out;
  const std::string result = out.path() + "/result.json";
  const std::string marker = "sleep " + std::to_string(5000000 + getpid());
  auto r = RunBrig({"run", "--timeout", "20s", "--result", result, "--", "sh", "-c",
                    "(setsid sh -c '" + marker + " & echo > /tmp/up; wait' &); "
                    "while [ ! -e /tmp/up ]; do sleep 0.01; done"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The daemon's shell and its sleep (the shell, waiting for the sleep as the SIGKILL
  // reaches both, may reap it first: brig-run(1), left_killed).
  EXPECT_GE(ReadResult(result).left_killed(), 1u);
  EXPECT_TRUE(FindProcesses(marker).empty()) << "a double-forked daemon outlived the phase";
}

// --wait-all: the phase lasts until every process has exited. The background child
// learns its parent is gone (it is init's now), then waits to be told to finish.
TEST_F(Lifecycle, WaitAllWaitsForEveryProcess) {
  ScratchDir ws, out;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ws.Write("bg.sh",
           "#!/bin/sh\n"
           "trap 'echo finished > /workspace/done; exit 0' TERM\n"
           "while [ \"$(cut -d' ' -f4 /proc/$$/stat)\" != 1 ]; do sleep 0.01; done\n"
           "echo > /workspace/orphaned\n"
           "while :; do sleep 0.05; done\n",
           0755);
  const std::string result = out.path() + "/result.json";
  pid_t pid = SpawnBrig({"run", "--wait-all", "--workspace", ws.path(), "--profile", RwProfile(),
                         "--result", result, "--", "sh", "-c", "./bg.sh & exit 5"},
                        out.path());
  ASSERT_TRUE(Eventually([&] { return access((ws.path() + "/orphaned").c_str(), F_OK) == 0; }));
  siginfo_t si = {};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT), 0);
  EXPECT_EQ(si.si_pid, 0) << "the phase ended with the command";
  EXPECT_NE(access((ws.path() + "/done").c_str(), F_OK), 0);
  // brig relays SIGTERM to every process left once the command is gone.
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 5);
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/done"), "finished\n");
  EXPECT_EQ(ReadResult(result).left_killed(), 0u);
  auto none = RunBrig({"run", "--profile", "none", "--wait-all", "--", "true"});
  EXPECT_EQ(none.exit_code, 125);
  EXPECT_NE(none.err.find("--wait-all: profile 'none' has no brig init"), std::string::npos)
      << none.err;
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

// A SIGTERM that comes while brig is still setting up (here at its first log line, long
// before the sandbox's signalfd exists) ends the run as a later one does: the workload
// gets it, brig exits 143 and writes --result. It used to kill brig outright, without a
// result (18 of 60 tries).
TEST_F(Lifecycle, AnEarlySignalStillEndsTheRunWithAResult) {
  ScratchDir d;
  const std::string result = d.path() + "/result.json";
  pid_t pid = SpawnBrig({"--debug", "run", "--result", result, "--", "sleep", "1236"}, d.path());
  ASSERT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(d.path() + "/stderr").find(": run\"") != std::string::npos;
  }));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 128 + SIGTERM);
  std::string r = ReadFileOrEmpty(result);
  EXPECT_NE(r.find("\"exit_code\":143,\"signal\":15"), std::string::npos) << "no result: " << r;
  EXPECT_TRUE(FindProcesses("sleep 1236").empty());
}

// A caller may leave SIGCHLD ignored (bash's `trap '' CHLD`), and brig inherits that: the
// kernel then reaps brig's children itself and never signals their end, and brig init
// waited for its workload until the timeout (without one, for ever), then failed with
// "waitid: No child processes".
TEST_F(Lifecycle, ACallerIgnoringSigchldStillGetsTheWorkloadsStatus) {
  auto r =
      RunCommand({"bash", "-c", "trap '' CHLD; exec \"$0\" run --timeout 60s -- sh -c 'exit 3'",
                  BrigBinary()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// The kill at the grace period's end is brig's doing, and the result and stderr say so
// (issue 32, item 7): error_code killed, the signal passed on.
TEST_F(Lifecycle, GracePeriodThenKill) {
  ScratchDir d;
  auto start = std::chrono::steady_clock::now();
  std::string result = d.path() + "/result.json";
  pid_t pid = SpawnBrig({"run", "--grace", "1s", "--result", result, "--", "sh", "-c",
                         "trap '' TERM; echo ready; sleep 1238"},
                        d.path());
  ASSERT_TRUE(Eventually([&] { return !ReadFileOrEmpty(d.path() + "/stdout").empty(); }));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 128 + SIGTERM);
  std::string json = ReadFileOrEmpty(result);
  EXPECT_NE(json.find("\"signal\":15,\"error_code\":\"killed\""), std::string::npos) << json;
  EXPECT_NE(ReadFileOrEmpty(d.path() + "/stderr")
                .find("brig: brig passed SIGTERM on to the sandbox and killed it when the grace "
                      "period (--grace) ended"),
            std::string::npos);
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
