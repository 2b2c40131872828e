// Resource limits through cgroups (design.md, Cgroups), by attack: a fork bomb, a memory
// bomb, a CPU hog, a daemon that escapes its process group. On a hybrid host (the
// development machines) this covers the v1 path for memory, pids and cpu; in the vm tier
// (tools/vmtest) the same tests cover pure cgroup v2. No test writes to a group it did not
// create: the hierarchies the host manages are only ever read, and controllers are hidden
// from brig by unmounting them in a private mount namespace that only the test's brig sees.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

#include "proto/brig.pb.h"
#include "host/host_fixture.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

class Cgroups : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    struct statfs fs;
    if (statfs("/sys/fs/cgroup", &fs) < 0) GTEST_SKIP() << "no /sys/fs/cgroup";
  }

  v1::RunResult Result(const std::string& path) {
    v1::RunResult res;
    std::string json = ReadFileOrEmpty(path);
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
    return res;
  }

  ScratchDir out_;
  std::string result_ = out_.path() + "/result.json";
};

bool PureV2() {
  struct statfs fs;
  return statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool MountedV1(const std::string& name) {
  struct statfs fs;
  return statfs(("/sys/fs/cgroup/" + name).c_str(), &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC;
}

// Runs brig in a private mount namespace in which the cgroup mounts `hide` are unmounted:
// the host's mounts are untouched, only this brig cannot see those hierarchies.
RunOutput RunBrigWithout(const std::vector<std::string>& hide,
                         const std::vector<std::string>& args) {
  std::string script;
  for (const auto& m : hide) script += "umount " + m + " && ";
  script += "exec \"$0\" \"$@\"";
  std::vector<std::string> cmd = {"unshare", "--mount", "--propagation", "private",
                                  "sh", "-c", script, BrigBinary()};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunCommand(cmd);
}

TEST_F(Cgroups, ForkBombStopsAtPidsMaxAndTheHostStaysResponsive) {
  // The timeout bounds the run where the bomb slows everything (the vm tier emulates
  // its CPUs); the sandbox ends either way, through its cgroup.
  pid_t pid = SpawnBrig({"run", "--pids", "64", "--timeout", "20s", "--result", result_, "--",
                         "sh", "-c", "b() { b | b & }; b; sleep 2; echo survived"},
                        out_.path());
  // The host can still start a process while the bomb is at its ceiling (the sandbox's
  // shells say so: they cannot fork).
  EXPECT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(out_.path() + "/stderr").find("Cannot fork") != std::string::npos;
  })) << "the fork bomb never reached --pids";
  auto host = RunCommand({"true"});
  EXPECT_EQ(host.exit_code, 0) << "the host could not start a process under the fork bomb";
  // The workload's own status: 0 if `sleep 2` could fork again in time, 2 if not, 124 if
  // the bomb held out until the timeout. brig itself must not have failed.
  int code = WaitExit(pid);
  EXPECT_TRUE(code == 0 || code == 2 || code == 124)
      << code << ": " << ReadFileOrEmpty(out_.path() + "/stderr").substr(0, 300);
  if (code == 0) {
    EXPECT_EQ(ReadFileOrEmpty(out_.path() + "/stdout"), "survived\n");
  }
  auto res = Result(result_);
  EXPECT_LE(res.usage().peak_pids(), 64u);
  EXPECT_GE(res.usage().peak_pids(), 32u) << "the bomb never reached the limit";
  // The limit leaves its mark (issue 32, item 7): the forks it refused, and a line.
  EXPECT_GT(res.usage().pids_limit_hits(), 0u);
  EXPECT_NE(ReadFileOrEmpty(out_.path() + "/stderr")
                .find("brig: the sandbox reached its task limit (--pids, limits.pids) and "),
            std::string::npos);
}

TEST_F(Cgroups, MemoryBombIsOomKilled) {
  auto r = Sh("x=$(head -c 512M /dev/zero | tr '\\0' a); echo survived",
              {"--memory", "64M", "--timeout", "60s", "--result", result_});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("out of memory"), std::string::npos) << r.err;
  auto res = Result(result_);
  EXPECT_EQ(res.error_code(), "oom_killed");
  EXPECT_EQ(res.signal(), SIGKILL);
  EXPECT_GT(res.usage().peak_memory_bytes(), 32 << 20);
  EXPECT_LE(res.usage().peak_memory_bytes(), 64 << 20);
}

TEST_F(Cgroups, OneOomKillEndsTheWholeSandbox) {
  // The hog is a child; its parent would go on sleeping if only the hog were killed.
  auto r = Sh("(x=$(head -c 512M /dev/zero | tr '\\0' a)) ; sleep 30; echo survived",
              {"--memory", "64M", "--timeout", "60s", "--result", result_});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Result(result_).error_code(), "oom_killed");
}

// The quota of the sandbox's cpu group as a fraction of a CPU (v2 cpu.max, or v1
// cpu.cfs_quota_us over cpu.cfs_period_us); 0 if there is none.
double CpuQuota(const std::string& group) {
  std::istringstream max(ReadFileOrEmpty(group + "/cpu.max"));
  double quota = 0, period = 0;
  if (max >> quota >> period && period > 0) return quota / period;
  quota = atof(ReadFileOrEmpty(group + "/cpu.cfs_quota_us").c_str());
  period = atof(ReadFileOrEmpty(group + "/cpu.cfs_period_us").c_str());
  return quota > 0 && period > 0 ? quota / period : 0;
}

TEST_F(Cgroups, HalfACpuIsAboutHalf) {
  // A correctness check, not a benchmark: the group holds the quota asked for, and the
  // spinning workload used no more than it. How much less depends on what else the
  // machine runs, so there is no lower bound on its share.
  pid_t pid = SpawnBrig({"run", "--cpus", "0.5", "--timeout", "4s", "--result", result_, "--",
                         "sh", "-c", "while :; do :; done"},
                        out_.path());
  double quota = 0;
  EXPECT_TRUE(Eventually([&] {
    for (const auto& g : BrigCgroups()) {
      if (IsOwnDescendant(atoi(ReadFileOrEmpty(g + "/cgroup.procs").c_str()))) {
        quota = std::max(quota, CpuQuota(g));
      }
    }
    return quota > 0;
  })) << "no cpu quota on the sandbox's groups";
  EXPECT_DOUBLE_EQ(quota, 0.5);
  EXPECT_EQ(WaitExit(pid), 124);
  auto res = Result(result_);
  double share = static_cast<double>(res.usage().cpu_time_ms()) / res.duration_ms();
  EXPECT_GT(res.usage().cpu_time_ms(), 0u);
  EXPECT_LT(share, 0.6) << res.usage().cpu_time_ms() << " ms of cpu in " << res.duration_ms();
}

TEST_F(Cgroups, TimeoutKillsThroughTheCgroup) {
  // Profile none has no pid namespace: a daemon in a session of its own escapes the
  // workload's process group, and only the cgroup still holds it.
  auto r = RunBrig({"run", "--profile", "none", "--timeout", "1s", "--", "sh", "-c",
                    "setsid sh -c 'sleep 2461 & sleep 2462' & sleep 2463"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(Eventually([] { return FindProcesses("sleep 2461").empty(); }))
      << "an escaped daemon outlived the timeout";
  EXPECT_TRUE(FindProcesses("sleep 2462").empty());
}

TEST_F(Cgroups, WithoutCgroupV2TheFreezerMakesTheKill) {
  if (PureV2()) GTEST_SKIP() << "pure cgroup v2 host: cgroup.kill is the only path";
  if (!MountedV1("freezer")) GTEST_SKIP() << "no v1 freezer hierarchy";
  std::vector<std::string> hide = {"/sys/fs/cgroup/unified"};
  auto check = RunBrigWithout(hide, {"check"});
  EXPECT_NE(check.out.find("freezer"), std::string::npos) << check.out;
  auto r = RunBrigWithout(
      hide, {"run", "--profile", "none", "--timeout", "1s", "--", "sh", "-c",
             "setsid sh -c 'while :; do sleep 2471 & sleep 0.01; done' & sleep 2473"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(Eventually([] { return FindProcesses("sleep 2471").empty(); }))
      << "a forking daemon outlived the freeze";
}

TEST_F(Cgroups, NoCgroupRemainsAfterAnyEnding) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"normal exit", {"run", "--memory", "64M", "--pids", "64", "--", "true"}},
      {"timeout", {"run", "--pids", "64", "--timeout", "500ms", "--", "sleep", "10"}},
      {"oom", {"run", "--memory", "32M", "--", "sh", "-c", "x=$(head -c 256M /dev/zero | tr '\\0' a)"}},
      {"not found", {"run", "--memory", "64M", "--", "no-such-command-anywhere"}},
      // init alone fills pids.max: the workload cannot be forked, after the groups exist.
      {"setup failure after the groups exist", {"run", "--pids", "1", "--", "true"}},
      {"invalid limit", {"run", "--cpus", "0.001", "--", "true"}},
  };
  const std::vector<int> codes = {0, 124, 137, 127, 125, 125};
  auto before = TakeResidue().cgroups;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto r = RunBrig(runs[i].second);
    EXPECT_EQ(r.exit_code, codes[i]) << runs[i].first << ": " << r.err;
    EXPECT_EQ(TakeResidue().cgroups, before) << runs[i].first << " left a cgroup";
  }
}

TEST_F(Cgroups, MissingControllerRefusesTheRunNamingIt) {
  std::vector<std::string> hide;
  std::string parent_dir;
  std::vector<std::string> extra;
  if (PureV2()) {
    // A parent of the test's own that delegates memory and cpu but not pids.
    parent_dir = "/sys/fs/cgroup/bt-nopids-" + std::to_string(getpid());
    ASSERT_EQ(mkdir(parent_dir.c_str(), 0755), 0);
    int fd = open((parent_dir + "/cgroup.subtree_control").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "+memory +cpu", 12), 12);
    close(fd);
    extra = {"--cgroup-parent", parent_dir.substr(strlen("/sys/fs/cgroup"))};
  } else if (MountedV1("pids")) {
    hide = {"/sys/fs/cgroup/pids"};
  } else {
    GTEST_SKIP() << "pids is neither pure v2 nor a v1 hierarchy here";
  }
  ScratchDir ws;
  ws.Write("marker", "");
  auto args = [&](std::vector<std::string> a) {
    a.insert(a.begin() + 1, extra.begin(), extra.end());
    return a;
  };
  auto check = RunBrigWithout(hide, args({"check"}));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("pids        missing"), std::string::npos) << check.out;

  auto r = RunBrigWithout(hide, args({"run", "--pids", "10", "--", "echo", "ran"}));
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.out, "") << "the command ran without its pids limit";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("pids controller"), std::string::npos) << r.err;

  // A profile that marks the limit optional runs without it.
  auto ok = RunBrigWithout(
      hide, args({"run", "--profile", SourceRoot() + "/tests/host/profiles/pids-optional.textproto",
                  "--", "echo", "ran"}));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "ran\n");
  // Unless the run asks for that limit itself.
  auto asked = RunBrigWithout(
      hide, args({"run", "--profile", SourceRoot() + "/tests/host/profiles/pids-optional.textproto",
                  "--pids", "5", "--", "echo", "ran"}));
  EXPECT_EQ(asked.exit_code, 125);
  EXPECT_EQ(asked.out, "");
  EXPECT_NE(asked.err.find("pids controller"), std::string::npos) << asked.err;
  if (!parent_dir.empty()) {
    // The parent is the test's: a sandbox under it writes to no group it did not make (an
    // OCI container would have enabled pids there, as runc does).
    EXPECT_EQ(ReadFileOrEmpty(parent_dir + "/cgroup.subtree_control"), "cpu memory\n");
    EXPECT_EQ(rmdir(parent_dir.c_str()), 0);
  }
}

TEST_F(Cgroups, CheckNamesThePathOfEachController) {
  auto r = RunBrig({"check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* c : {"memory", "pids", "cpu"}) {
    std::string want = PureV2() || !MountedV1(c) ? "v2" : "v1";
    std::string line = std::string(c) + std::string(12 - strlen(c), ' ') + want;
    EXPECT_NE(r.out.find(line), std::string::npos) << "want '" << line << "' in\n" << r.out;
  }
}

TEST_F(Cgroups, TheSandboxSeesOnlyItsOwnGroup) {
  auto r = Sh("cat /proc/self/cgroup", {"--memory", "64M", "--pids", "64"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.substr(line.rfind(':')), ":/") << "the host's cgroup path shows: " << line;
  }
}

TEST_F(Cgroups, AnUnconfinedWorkloadDiesWithBrig) {
  std::string marker = "sleep " + std::to_string(3000000 + getpid());
  pid_t pid = SpawnBrig({"run", "--profile", "none", "--", "sh", "-c", marker}, out_.path());
  ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }));
  kill(pid, SIGKILL);
  WaitExit(pid);
  // The shell died with brig; its child is what brig gc's cgroup.kill (or the v1
  // freezer) is for.
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_TRUE(Eventually([&] { return FindProcesses(marker).empty(); }))
      << "the workload outlived brig and brig gc";
}

TEST_F(Cgroups, GcRemovesTheGroupsOfAKilledBrig) {
  std::string marker = "sleep " + std::to_string(2000000 + getpid());
  auto before = TakeResidue().records;
  pid_t pid = SpawnBrig({"run", "--memory", "64M", "--", "sh", "-c", marker}, out_.path());
  ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }));
  std::string id;
  for (const auto& r : TakeResidue().records) {
    if (std::find(before.begin(), before.end(), r) == before.end()) id = r;
  }
  ASSERT_FALSE(id.empty()) << "no record for the running sandbox";
  auto live = RunBrig({"gc"});
  EXPECT_EQ(live.exit_code, 0);
  EXPECT_EQ(live.out.find(id), std::string::npos) << "gc touched a live sandbox: " << live.out;
  kill(pid, SIGKILL);
  WaitExit(pid);
  // The sandbox dies with brig, and the record's lock (shared with brig init) with it.
  SettleUntilGone("brig-init");
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed cgroup "), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("/" + id + "\n"), std::string::npos) << gc.out;
  EXPECT_EQ(RunBrig({"gc"}).out, "") << "a second gc found more";
}

}  // namespace
}  // namespace brig::testing
