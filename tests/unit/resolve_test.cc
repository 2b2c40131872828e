// config::Resolve: a profile and a run's overrides into the plan, without the host. Every
// path here names nothing on this machine, and the policy directory does not exist: what
// Resolve returns must not depend on either.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "config/limits.h"
#include "config/probe.h"
#include "config/profile.h"
#include "config/resolve.h"
#include "testlib/testlib.h"

// After the schema's header, whose enums have names libseccomp's macros take.
#include <seccomp.h>

namespace brig::config {
namespace {

constexpr char kNowhere[] = "/nonexistent/brig-resolve-test";

// A profile as ParseProfile gives it (validated, defaults not filled in).
v1::Profile Profile(const std::string& workspace, const std::string& posture,
                    const std::string& more = "") {
  std::string text = "isolation: ISOLATION_SANDBOX\nfilesystem { workspace: " + workspace +
                     " }\nnetwork { posture: " + posture + " }\n" +
                     "security { seccomp_policy: \"default\" }\n" + more;
  auto p = ParseProfile(text, "p");
  EXPECT_TRUE(p) << p.error().Render();
  return p ? *p : v1::Profile();
}

v1::Profile Unconfined() {
  auto p = ParseProfile("isolation: ISOLATION_NONE\n", "none");
  EXPECT_TRUE(p) << p.error().Render();
  return *p;
}

Overrides AnyRun() {
  Overrides run;
  run.id = "brig-0123456789ab";
  run.profile = "p";
  run.policy_dir = std::string(kNowhere) + "/policies";
  run.argv = {"true"};
  return run;
}

// The one line an error renders as, or "" when there was none.
template <typename T>
std::string Refusal(const Result<T>& r) {
  return r ? "" : r.error().Render();
}

TEST(Resolve, KeepsPathsAsGivenAndTouchesNothing) {
  Overrides run = AnyRun();
  run.workspace = std::string(kNowhere) + "/ws";
  run.rootfs = std::string(kNowhere) + "/root";
  run.layers = {std::string(kNowhere) + "/layer"};
  run.copy_dir = std::string(kNowhere) + "/scratch";
  run.export_changes = std::string(kNowhere) + "/out///";
  run.result_path = std::string(kNowhere) + "/r.json";
  auto sb = Resolve(Profile("WORKSPACE_COPY", "POSTURE_NONE"), run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->id, run.id);
  EXPECT_EQ(sb->fs.scratch_name, run.id);
  EXPECT_EQ(sb->fs.workspace, run.workspace);
  EXPECT_EQ(sb->fs.rootfs, run.rootfs);
  EXPECT_EQ(sb->fs.layers, run.layers);
  EXPECT_EQ(sb->fs.copy_dir, run.copy_dir);
  EXPECT_EQ(sb->fs.export_changes, std::string(kNowhere) + "/out") << "trailing slashes go";
  EXPECT_EQ(sb->result_path, run.result_path);
  EXPECT_EQ(sb->seccomp_policy, run.policy_dir + "/seccomp/default.textproto");
  EXPECT_EQ(sb->seccomp_policy_name, "default");
  EXPECT_EQ(sb->host_uid, kOverflowHostId) << "the workspace's owner is the probe's to find";
  EXPECT_TRUE(sb->cgroup_plan.parent.empty()) << "the cgroups are the probe's to find";
}

// Pure means no system call but memory: in a child whose seccomp filter kills it on any
// other, Resolve of a run that names every path, a broker with a header from the
// environment and an allowlist posture without a nameserver still returns its plan.
TEST(Resolve, MakesNoSystemCallButForMemory) {
  auto p = Profile("WORKSPACE_COPY protected_paths: \".git/hooks\" hidden_paths: \".env*\"",
                   "POSTURE_ALLOWLIST allow_hosts: \"allowed.test\"",
                   "brokers { name: \"m\" port: 8080 to: \"http://model.test\" "
                   "headers { name: \"x-api-key\" from: \"env:HOME\" } }\n");
  Overrides run = AnyRun();
  run.workspace = std::string(kNowhere) + "/ws";
  run.rootfs = std::string(kNowhere) + "/root";
  run.layers = {std::string(kNowhere) + "/layer"};
  run.copy_dir = std::string(kNowhere) + "/scratch";
  run.export_changes = std::string(kNowhere) + "/out";
  run.result_path = std::string(kNowhere) + "/r.json";
  run.audit_path = std::string(kNowhere) + "/a.jsonl";
  run.passed_env = {"HOME=/root"};
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    for (int call : {SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
                     SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(exit_group)}) {
      if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ALLOW, call, 0) < 0) _exit(2);
    }
    if (seccomp_load(ctx) < 0) _exit(3);
    auto sb = Resolve(p, run);
    _exit(sb && sb->fs.workspace == run.workspace ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status)
                                 << " (SIGSYS: a system call other than memory's)";
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

TEST(Resolve, ARelativePolicyPathIsBesideTheProfile) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE");
  p.mutable_security()->set_seccomp_policy("../seccomp/mine.textproto");
  Overrides run = AnyRun();
  run.profile = std::string(kNowhere) + "/profiles/p.textproto";
  auto sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->seccomp_policy, std::string(kNowhere) + "/profiles/../seccomp/mine.textproto");
}

TEST(Resolve, NetworkFlagsNeedAPostureWithAnInterface) {
  for (const char* posture : {"POSTURE_NONE", "POSTURE_BROKER_ONLY"}) {
    Overrides subnet = AnyRun(), allow = AnyRun(), upstream = AnyRun();
    subnet.subnet = *net::ParseSubnet("10.99.0.0/16");
    allow.allow_hosts = {"example.test"};
    upstream.dns_upstream = *egress::ParseUpstream("192.0.2.53");
    auto p = Profile("WORKSPACE_RO", posture);
    EXPECT_EQ(Refusal(Resolve(p, subnet)),
              "--subnet: profile 'p' gives the sandbox no network interface");
    EXPECT_EQ(Refusal(Resolve(p, allow)),
              "--allow-host: profile 'p' gives the sandbox no network interface");
    EXPECT_EQ(Refusal(Resolve(p, upstream)),
              "--dns-upstream: profile 'p' gives the sandbox no network interface");
  }
}

TEST(Resolve, AllowlistPostureTakesTheRunsHostsAndNameserver) {
  Overrides run = AnyRun();
  run.allow_hosts = {"*.extra.test:443"};
  run.dns_upstream = *egress::ParseUpstream("192.0.2.53:5353");
  auto sb =
      Resolve(Profile("WORKSPACE_RO", "POSTURE_ALLOWLIST allow_hosts: \"allowed.test\""), run);
  ASSERT_TRUE(sb) << sb.error().Render();
  ASSERT_TRUE(sb->network);
  EXPECT_EQ(sb->network->Gateway().Str(), "10.213.0.1") << "the default subnet";
  EXPECT_EQ(sb->fs.resolver, "10.213.0.1");
  EXPECT_TRUE(sb->egress.allowlist.Allows("www.allowed.test", 80));
  EXPECT_TRUE(sb->egress.allowlist.Allows("a.extra.test", 443));
  ASSERT_EQ(sb->egress.upstreams.size(), 1u);
  EXPECT_EQ(sb->egress.upstreams[0].Str(), "192.0.2.53:5353");
  // Without --dns-upstream the host's nameservers are the probe's to read.
  sb = Resolve(Profile("WORKSPACE_RO", "POSTURE_ALLOWLIST"), AnyRun());
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->egress.upstreams.empty());
  // No interface, no resolver to name in /etc/resolv.conf.
  EXPECT_EQ(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), AnyRun())->fs.resolver, "");
}

TEST(Resolve, AllowHostWithPostureOpenIsRefused) {
  Overrides run = AnyRun();
  run.allow_hosts = {"x.test"};
  auto r = Resolve(Profile("WORKSPACE_RO", "POSTURE_OPEN"), run);
  EXPECT_EQ(Refusal(r),
            "--allow-host 'x.test': profile 'p' has posture open, which has no "
            "allowlist");
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
}

TEST(Resolve, TheWorkspaceModeIsRestatedOrNarrowedNeverWidened) {
  struct Case {
    const char* profile;
    fs::WorkspaceMode asked;
    std::string refusal;  // "" when allowed
    fs::WorkspaceMode got;
  } cases[] = {
      {"WORKSPACE_RO", fs::WorkspaceMode::kReadOnly, "", fs::WorkspaceMode::kReadOnly},
      {"WORKSPACE_RO", fs::WorkspaceMode::kReadWrite,
       "--workspace-mode 'rw': profile 'p' fixes filesystem.workspace = WORKSPACE_RO; name "
       "another profile"},
      {"WORKSPACE_RO", fs::WorkspaceMode::kCopy,
       "--workspace-mode 'copy': profile 'p' fixes filesystem.workspace = WORKSPACE_RO; name "
       "another profile"},
      {"WORKSPACE_COPY", fs::WorkspaceMode::kReadWrite,
       "--workspace-mode 'rw': profile 'p' fixes filesystem.workspace = WORKSPACE_COPY; name "
       "another profile"},
      {"WORKSPACE_RW", fs::WorkspaceMode::kCopy, "", fs::WorkspaceMode::kCopy},
      {"WORKSPACE_RW", fs::WorkspaceMode::kReadOnly,
       "--workspace-mode 'ro': profile 'p' fixes filesystem.workspace = WORKSPACE_RW; name "
       "another profile"},
  };
  for (const auto& c : cases) {
    Overrides run = AnyRun();
    run.workspace_mode = c.asked;
    auto sb = Resolve(Profile(c.profile, "POSTURE_NONE"), run);
    EXPECT_EQ(Refusal(sb), c.refusal) << c.profile;
    if (sb) {
      EXPECT_EQ(sb->fs.workspace_mode, c.got) << c.profile;
    } else {
      EXPECT_EQ(sb.error().kind, ErrorKind::kPolicy) << c.profile;
    }
  }
}

TEST(Resolve, ProtectedPathsAreNormalisedAndOnlyForAWritableWorkspace) {
  const std::string paths = "protected_paths: \"./.git//hooks/\" protected_paths: \".envrc\"";
  auto rw = Resolve(Profile("WORKSPACE_RW " + paths, "POSTURE_NONE"), AnyRun());
  ASSERT_TRUE(rw) << rw.error().Render();
  EXPECT_EQ(rw->fs.protected_paths, (std::vector<std::string>{".git/hooks", ".envrc"}));
  auto ro = Resolve(Profile("WORKSPACE_RO " + paths, "POSTURE_NONE"), AnyRun());
  ASSERT_TRUE(ro) << ro.error().Render();
  EXPECT_TRUE(ro->fs.protected_paths.empty());
}

TEST(Resolve, CopyFlagsNeedACopyWorkspace) {
  for (const char* access : {"WORKSPACE_RO", "WORKSPACE_RW", "WORKSPACE_COPY"}) {
    bool copy = std::string(access) == "WORKSPACE_COPY";
    Overrides disk = AnyRun(), dir = AnyRun(), out = AnyRun();
    disk.disk_size = 8u << 20;
    dir.copy_dir = kNowhere;
    out.export_changes = kNowhere;
    auto p = Profile(access, "POSTURE_NONE");
    // Without a workspace even a copy profile has nothing to copy.
    EXPECT_EQ(Refusal(Resolve(p, disk)),
              "--disk-size: needs a copy workspace (--workspace with a profile or "
              "--workspace-mode that makes one): a read-only one takes no changes, and a "
              "read-write one, the host's own directory, cannot be capped");
    EXPECT_EQ(Refusal(Resolve(p, dir)),
              std::string("--copy-dir '") + kNowhere +
                  "': needs a copy workspace (--workspace with a profile or --workspace-mode "
                  "that makes one)");
    EXPECT_EQ(Refusal(Resolve(p, out)),
              std::string("--export-changes '") + kNowhere +
                  "': needs a copy workspace (--workspace with a profile or --workspace-mode "
                  "of copy)");
    for (Overrides* run : {&disk, &dir, &out}) {
      run->workspace = std::string(kNowhere) + "/ws";
      EXPECT_EQ(Resolve(p, *run).has_value(), copy) << access << ": " << Refusal(Resolve(p, *run));
    }
  }
}

TEST(Resolve, ACopysCapIsTheRunsThenTheProfilesThenEightGUnderACopyDir) {
  auto capped = Profile("WORKSPACE_COPY", "POSTURE_NONE", "limits { disk: \"16M\" }\n");
  auto uncapped = Profile("WORKSPACE_COPY", "POSTURE_NONE");
  Overrides run = AnyRun();
  run.workspace = std::string(kNowhere) + "/ws";
  EXPECT_EQ(Resolve(capped, run)->fs.disk_size, 16u << 20);
  EXPECT_EQ(Resolve(uncapped, run)->fs.disk_size, 0u) << "a tmpfs of tmp_size holds it";
  run.copy_dir = kNowhere;
  EXPECT_EQ(Resolve(uncapped, run)->fs.disk_size, kCopyDirDisk);
  EXPECT_EQ(Resolve(capped, run)->fs.disk_size, 16u << 20);
  run.disk_size = 2u << 20;
  EXPECT_EQ(Resolve(capped, run)->fs.disk_size, 2u << 20);
}

TEST(Resolve, IsolationNoneTakesNoMountsAndNoBrokers) {
  const auto none = Unconfined();
  std::vector<Overrides> runs(8, AnyRun());
  runs[0].rootfs = kNowhere;
  runs[1].layers = {kNowhere};
  runs[2].workspace_mode = fs::WorkspaceMode::kReadOnly;
  runs[3].export_changes = kNowhere;
  runs[4].copy_dir = kNowhere;
  runs[5].disk_size = 8u << 20;
  runs[7].ro_binds = {{kNowhere, "/opt/x"}};
  for (auto& run : runs) run.profile = "none";
  for (size_t i : {0, 1, 2, 3, 4, 5, 7}) {
    EXPECT_EQ(Refusal(Resolve(none, runs[i])),
              "profile 'none': ISOLATION_NONE has no root or workspace mounts: --rootfs, "
              "--layer, --workspace-mode, --copy-dir, --disk-size, --export-changes and "
              "--ro-bind do not apply")
        << i;
  }
  runs[6].brokers.emplace_back("m=port=8080,to=tcp:127.0.0.1:1",
                               *broker::ParseSpec("m=port=8080,to=tcp:127.0.0.1:1"));
  EXPECT_EQ(Refusal(Resolve(none, runs[6])),
            "--broker 'm=port=8080,to=tcp:127.0.0.1:1': profile 'none' has no sandbox "
            "(ISOLATION_NONE) to broker into");
  Overrides plain = AnyRun();
  plain.workspace = kNowhere;
  auto sb = Resolve(none, plain);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->isolated);
  EXPECT_EQ(sb->fs.workspace, kNowhere) << "the unconfined command runs there";
}

TEST(Resolve, ALayerNeedsARootfs) {
  Overrides run = AnyRun();
  run.layers = {kNowhere};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), run)),
            std::string("--layer '") + kNowhere + "': needs a --rootfs to stack on");
}

TEST(Resolve, AProfileWithoutIsolationIsRefusedNotRunUnconfined) {
  auto r = Resolve(v1::Profile(), AnyRun());
  EXPECT_EQ(Refusal(r), "p 'isolation': must be ISOLATION_SANDBOX or ISOLATION_NONE");
}

TEST(Resolve, SwapNeedsAMemoryLimit) {
  Overrides run = AnyRun();
  run.swap = 1u << 30;
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE");
  EXPECT_EQ(Refusal(Resolve(p, run)),
            "--swap: needs a memory limit (--memory, or the profile's limits.memory)");
  auto with_memory = Profile("WORKSPACE_RO", "POSTURE_NONE", "limits { memory: \"1G\" }\n");
  auto sb = Resolve(with_memory, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->limits.swap, 1u << 30);
  run.memory = 512u << 20;
  sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->limits.memory, 512u << 20);
}

TEST(Resolve, TheRunsLimitsWinOverTheProfiles) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE",
                   "limits { timeout: \"5m\" tmp_size: \"64M\" memory: \"1G\" pids: 100 "
                   "cpus: \"2\" rlimit_nofile: 100 output_limit: \"1M\" egress_bytes: \"3M\" }\n");
  auto sb = Resolve(p, AnyRun());
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->timeout, std::chrono::minutes(5));
  EXPECT_EQ(sb->grace, std::chrono::seconds(10)) << "the default";
  EXPECT_EQ(sb->fs.tmp_size, 64u << 20);
  EXPECT_EQ(sb->limits.memory, 1u << 30);
  EXPECT_EQ(sb->limits.swap, 0u) << "none beyond memory unless asked for";
  EXPECT_EQ(sb->limits.pids, 100u);
  EXPECT_EQ(sb->limits.cpu_milli, 2000u);
  EXPECT_EQ(sb->rlimits.nofile, 100u);
  EXPECT_EQ(sb->rlimits.nproc, 4096u) << "the default";
  EXPECT_EQ(sb->output_limit, 1u << 20);
  EXPECT_EQ(sb->egress_budget, 3u << 20);
  Overrides run = AnyRun();
  run.timeout = std::chrono::seconds(7);
  run.grace = std::chrono::seconds(1);
  run.tmp_size = 32u << 20;
  run.memory = 2u << 30;
  run.pids = 50;
  run.cpu_milli = 500;
  run.rlimit_nofile = 10;
  run.rlimit_core = 1u << 20;
  run.output_limit = 2u << 20;
  run.egress_budget = 4u << 20;
  sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->timeout, std::chrono::seconds(7));
  EXPECT_EQ(sb->grace, std::chrono::seconds(1));
  EXPECT_EQ(sb->fs.tmp_size, 32u << 20);
  EXPECT_EQ(sb->limits.memory, 2u << 30);
  EXPECT_EQ(sb->limits.pids, 50u);
  EXPECT_EQ(sb->limits.cpu_milli, 500u);
  EXPECT_EQ(sb->rlimits.nofile, 10u);
  EXPECT_EQ(sb->rlimits.core, 1u << 20);
  EXPECT_EQ(sb->output_limit, 2u << 20);
  EXPECT_EQ(sb->egress_budget, 4u << 20);
}

// --memory none, --pids none, --cpus none: the profile's limit is not wanted (brig without
// root has no cgroup to hold it). A swap limit without memory is still refused.
TEST(Resolve, TheRunCanSayAProfilesLimitIsNotWanted) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE",
                   "limits { memory: \"1G\" swap: \"1G\" pids: 100 cpus: \"2\" }\n");
  Overrides run = AnyRun();
  run.no_memory = run.no_pids = run.no_cpu = true;
  auto sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_FALSE(sb->limits.memory);
  EXPECT_FALSE(sb->limits.swap);
  EXPECT_FALSE(sb->limits.pids);
  EXPECT_FALSE(sb->limits.cpu_milli);
  run.swap = 1u << 30;
  EXPECT_EQ(Refusal(Resolve(p, run)),
            "--swap: needs a memory limit (--memory, or the profile's limits.memory)");
}

TEST(Resolve, ALimitTheRunAsksForIsNeverOptional) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE",
                   "limits { memory: \"1G\" pids: 100 cpus: \"1\" optional_limits: LIMIT_MEMORY "
                   "optional_limits: LIMIT_PIDS optional_limits: LIMIT_CPUS }\n");
  auto sb = Resolve(p, AnyRun());
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_TRUE(sb->limits.memory_optional);
  EXPECT_TRUE(sb->limits.pids_optional);
  EXPECT_TRUE(sb->limits.cpu_optional);
  Overrides memory = AnyRun(), swap = AnyRun(), pids = AnyRun(), cpus = AnyRun();
  memory.memory = 2u << 30;
  swap.swap = 1u << 30;
  pids.pids = 10;
  cpus.cpu_milli = 100;
  EXPECT_FALSE(Resolve(p, memory)->limits.memory_optional);
  EXPECT_FALSE(Resolve(p, swap)->limits.memory_optional);
  EXPECT_TRUE(Resolve(p, swap)->limits.pids_optional);
  EXPECT_FALSE(Resolve(p, pids)->limits.pids_optional);
  EXPECT_TRUE(Resolve(p, pids)->limits.cpu_optional);
  EXPECT_FALSE(Resolve(p, cpus)->limits.cpu_optional);
  EXPECT_TRUE(Resolve(p, cpus)->limits.memory_optional);
}

// The defaults are written once (config/limits.cc): a profile that says nothing resolves
// to them, the same whether or not they were filled in first (as `brig policy show`
// prints them), and the filled-in profile says the same values.
TEST(Resolve, DefaultsLiveInOnePlace) {
  auto bare = Profile("WORKSPACE_RO", "POSTURE_NONE");
  v1::Profile filled = bare;
  FillDefaults(filled);
  EXPECT_EQ(filled.limits().timeout(), "30m");
  EXPECT_EQ(filled.limits().tmp_size(), "1G");
  EXPECT_EQ(filled.limits().rlimit_nofile(), 4096u);
  EXPECT_EQ(filled.limits().user_counts().namespaces(), 64u);
  for (const v1::Profile* p : {&bare, &filled}) {
    auto sb = Resolve(*p, AnyRun());
    ASSERT_TRUE(sb) << sb.error().Render();
    EXPECT_EQ(sb->timeout, std::chrono::minutes(30));
    EXPECT_EQ(sb->grace, std::chrono::seconds(10));
    EXPECT_EQ(sb->fs.tmp_size, 1u << 30);
    EXPECT_FALSE(sb->output_limit);
    EXPECT_EQ(sb->rlimits.nofile, 4096u);
    EXPECT_EQ(sb->rlimits.nproc, 4096u);
    EXPECT_EQ(sb->rlimits.core, 0u);
    EXPECT_EQ(sb->rlimits.msgqueue, 65536u);
    EXPECT_EQ(sb->rlimits.sigpending, 1024u);
    EXPECT_EQ(sb->user_counts.inotify_instances, 32u);
    EXPECT_EQ(sb->user_counts.inotify_watches, 4096u);
    EXPECT_EQ(sb->user_counts.fanotify_groups, 8u);
    EXPECT_EQ(sb->user_counts.fanotify_marks, 4096u);
    EXPECT_EQ(sb->user_counts.namespaces, 64u);
    EXPECT_FALSE(sb->limits.memory);
    EXPECT_FALSE(sb->limits.pids);
    EXPECT_FALSE(sb->limits.cpu_milli);
  }
  // Without isolation there is no /tmp of brig's to size, so none is filled in.
  v1::Profile none = Unconfined();
  FillDefaults(none);
  EXPECT_EQ(none.limits().tmp_size(), "");
  EXPECT_EQ(none.limits().timeout(), "30m");
}

TEST(Resolve, ProfileValuesOverTheDefaultsAreKept) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_NONE",
                   "limits { rlimit_core: 0 rlimit_nproc: 7 user_counts { namespaces: 3 } }\n");
  FillDefaults(p);
  EXPECT_EQ(p.limits().rlimit_nproc(), 7u);
  EXPECT_EQ(p.limits().user_counts().namespaces(), 3u);
  EXPECT_EQ(p.limits().user_counts().inotify_watches(), 4096u);
  auto l = ParseLimits(p.limits(), "p");
  ASSERT_TRUE(l) << l.error().Render();
  EXPECT_EQ(l->rlimits.nproc, 7u);
  EXPECT_EQ(l->user_counts.namespaces, 3u);
}

TEST(Resolve, BrokersAreCheckedTogetherAndNothingOfTheHostIsRead) {
  auto p = Profile("WORKSPACE_RO", "POSTURE_BROKER_ONLY",
                   "brokers { name: \"model\" port: 8080 to: \"http://model.test\" "
                   "headers { name: \"x-api-key\" from: \"env:BRIG_RESOLVE_TEST_KEY\" } }\n");
  Overrides run = AnyRun();
  const std::string spec = "extra=port=8081,to=tcp:127.0.0.1:1";
  run.brokers.emplace_back(spec, *broker::ParseSpec(spec));
  run.attempt = 3;
  auto sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  ASSERT_EQ(sb->brokers.size(), 2u);
  EXPECT_EQ(sb->brokers[0].name, "model");
  ASSERT_EQ(sb->brokers[0].headers.size(), 1u);
  EXPECT_EQ(sb->brokers[0].headers[0].value, "") << "header values are the probe's to read";
  EXPECT_TRUE(sb->brokers[0].addresses.empty()) << "targets are the probe's to find";
  EXPECT_EQ(sb->broker_specs, (std::vector<std::string>{"", spec}));
  EXPECT_EQ(sb->attempt, 3u);
  const std::string clash = "c=port=8080,to=tcp:127.0.0.1:1";
  run.brokers.emplace_back(clash, *broker::ParseSpec(clash));
  auto r = Resolve(p, run);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Render().rfind("--broker '" + clash + "': ", 0), 0u) << r.error().Render();
  EXPECT_NE(r.error().Render().find("8080 is taken by another broker"), std::string::npos);
}

TEST(Resolve, TheEnvironmentIsBuiltFromWhatTheRunGives) {
  Overrides run = AnyRun();
  run.passed_env = {"TERM=xterm", "LANG=de_DE.UTF-8"};
  run.set_env = {"LANG=fr_FR.UTF-8", "CI=1"};
  auto sb = Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->env, (std::vector<std::string>{
                         "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                         "HOME=/tmp", "LANG=fr_FR.UTF-8", "TERM=xterm", "CI=1"}));
}

// The probe completes what Resolve left as given: the workspace canonical and its owner the
// ids' host side, the header value read from the environment it is handed (never brig's
// own here), the cgroup layout found and the limits fitted to it.
TEST(ProbeHost, CompletesTheResolvedPlanFromTheHost) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the workspace an owner";
  brig::testing::ScratchDir dir;
  std::string ws = dir.path() + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(chown(ws.c_str(), 1234, 1235), 0);
  auto p = Profile("WORKSPACE_RO", "POSTURE_BROKER_ONLY",
                   "brokers { name: \"m\" port: 8080 to: \"tcp:127.0.0.1:1\" mode: BROKER_HTTP "
                   "headers { name: \"x-api-key\" from: \"env:BRIG_PROBE_TEST_KEY\" } }\n");
  Overrides run = AnyRun();
  run.policy_dir = BRIG_SOURCE_POLICY_DIR;
  run.workspace = ws + "/./";
  auto sb = Resolve(p, run);
  ASSERT_TRUE(sb) << sb.error().Render();
  std::string key = "BRIG_PROBE_TEST_KEY=k1";
  char* env[] = {key.data(), nullptr};
  auto probed = ProbeHost(*sb, env);
  ASSERT_TRUE(probed) << probed.error().Render();
  EXPECT_EQ(sb->fs.workspace, ws);
  EXPECT_EQ(sb->host_uid, 1234u);
  EXPECT_EQ(sb->host_gid, 1235u);
  ASSERT_EQ(sb->brokers.size(), 1u);
  EXPECT_EQ(sb->brokers[0].headers[0].value, "k1");
  EXPECT_FALSE(sb->brokers[0].addresses.empty());
  EXPECT_TRUE(sb->cgroup_layout.v2 || sb->cgroup_layout.v1_freezer);
  // A profile's broker whose header has no value names the profile and the broker.
  char* none[] = {nullptr};
  auto unset = Resolve(p, run);
  ASSERT_TRUE(unset) << unset.error().Render();
  auto refused = ProbeHost(*unset, none);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().Render(),
            "profile 'p': broker m: header x-api-key: $BRIG_PROBE_TEST_KEY is not set");
}

constexpr char kMounts[] =
    "mounts { name: \"data\" target: \"/data\" source: MOUNT_PER_RUN }\n"
    "mounts { name: \"opt\" target: \"/srv/opt\" source: MOUNT_PER_RUN optional: true }\n"
    "mounts { name: \"npm\" target: \"/cache/npm\" writable: true source: MOUNT_CACHE }\n";

TEST(Resolve, NamedMountsTakeOnlyTheirSourcesFromTheRun) {
  Overrides run = AnyRun();
  run.mounts = {{"data", "/srv/d"}};
  auto sb = Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run);
  ASSERT_TRUE(sb) << sb.error().Render();
  ASSERT_EQ(sb->fs.mounts.size(), 2u);  // the optional one is skipped
  EXPECT_EQ(sb->fs.mounts[0].source, "/srv/d");
  EXPECT_FALSE(sb->fs.mounts[0].writable);
  EXPECT_TRUE(sb->fs.mounts[1].cache);
  EXPECT_EQ(sb->fs.mounts[1].target, "/cache/npm");
}

TEST(Resolve, RefusesAMountTheProfileDoesNotDeclare) {
  Overrides run = AnyRun();
  run.mounts = {{"data", "/srv/d"}, {"home", "/home"}};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run)),
            "--mount 'home=/home': profile 'p' declares no mount 'home' (it declares: data, "
            "opt, npm); a read-only one is --ro-bind /home DST, a writable one the profile's "
            "(brig-profile(5), MOUNTS): mounts { name: \"home\" target: \"/mnt/home\" "
            "writable: true source: MOUNT_PER_RUN }");
  run.mounts = {{"x", "/y"}};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), run))
                .rfind("--mount 'x=/y': profile 'p' declares no mount 'x' (it declares none); ", 0),
            0u);
  run.mounts = {{"data", "/srv/d"}, {"npm", "/tmp/evil"}};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run)),
            "--mount 'npm=/tmp/evil': 'npm' is a cache brig keeps; it takes no path");
  run.mounts = {};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run)),
            "profile 'p': mount 'data' needs a source: --mount data=PATH");
  run.mounts = {{"data", "/srv/d"}};
  const std::string spec = "api=unix=/data/api.sock,to=tcp:127.0.0.1:1";
  run.brokers.emplace_back(spec, *broker::ParseSpec(spec));
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run)),
            "broker api '/data/api.sock': its socket is in mount 'data' (/data)");
  // A --ro-bind is held to the same: a broker's socket is never in it.
  run.brokers.clear();
  const std::string other = "api=unix=/opt/agent/api.sock,to=tcp:127.0.0.1:1";
  run.brokers.emplace_back(other, *broker::ParseSpec(other));
  run.ro_binds = {{"/srv/agent", "/opt/agent"}};
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE", kMounts), run)),
            "broker api '/opt/agent/api.sock': its socket is in a --ro-bind (/opt/agent)");
}

TEST(Profile, RefusesMountTargetsThatOverlapBrigsOwn) {
  auto bad = [](const std::string& mount) {
    auto p = ParseProfile(
        "isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RO }\n"
        "network { posture: POSTURE_NONE }\nsecurity { seccomp_policy: \"d\" }\n"
        "mounts { " +
            mount + " }\n",
        "p");
    return p ? std::string() : p.error().Render();
  };
  EXPECT_EQ(bad("name: \"a\" target: \"/data\" source: MOUNT_PER_RUN"), "");
  for (const char* t : {"/workspace/x", "/", "/proc", "/dev/shm", "/tmp/x", "/usr/local", "/etc",
                        "/data/../proc", "data", "/data/"}) {
    EXPECT_NE(bad(std::string("name: \"a\" target: \"") + t + "\" source: MOUNT_PER_RUN"), "") << t;
  }
  EXPECT_EQ(bad("name: \"a\" target: \"/workspace/x\" source: MOUNT_PER_RUN"),
            "p:5:20 'mounts.target': mount 'a': '/workspace/x' overlaps /workspace, which brig "
            "provides itself");
  EXPECT_NE(bad("name: \"a/b\" target: \"/data\" source: MOUNT_PER_RUN"), "");
  EXPECT_NE(bad("name: \"a\" target: \"/data\""), "");  // no source
  EXPECT_NE(bad("name: \"a\" target: \"/data\" source: MOUNT_CACHE optional: true"), "");
  EXPECT_FALSE(
      ParseProfile("isolation: ISOLATION_NONE\n"
                   "mounts { name: \"a\" target: \"/data\" source: MOUNT_PER_RUN }\n",
                   "p"));
}

TEST(Resolve, ChdirNeedsAWorkspace) {
  Overrides run = AnyRun();
  run.chdir = "src";
  EXPECT_EQ(Refusal(Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), run)),
            "--chdir 'src': needs a --workspace to be inside");
  run.workspace = "/nonexistent/ws";
  auto sb = Resolve(Profile("WORKSPACE_RO", "POSTURE_NONE"), run);
  ASSERT_TRUE(sb) << sb.error().Render();
  EXPECT_EQ(sb->workdir, "/workspace/src");
}

}  // namespace
}  // namespace brig::config
