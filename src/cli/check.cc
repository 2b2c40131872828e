// `brig check`: a preflight. What this host offers brig's sandboxes: the path each cgroup
// controller takes (design.md, Cgroups), each kernel feature a shipped profile needs,
// probed for real in throwaway namespaces (cli/preflight.h), and which profiles can run
// here. Writes to no cgroup and leaves nothing behind.
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "cgroup/cgroup.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/preflight.h"
#include "config/overrides.h"
#include "config/profile.h"
#include "util/dirs.h"
#include "util/files.h"

namespace brig::cli {
namespace {

struct CheckRequest {
  std::string cgroup_parent, policy_dir;
  bool help = false;
};

struct Flag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(CheckRequest&, const std::string&);
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--cgroup-parent", "PATH", "check for groups under PATH, as brig run --cgroup-parent",
       [](CheckRequest& r, const std::string& v) -> Status {
         BRIG_TRY(cgroup::CheckParent(v));
         r.cgroup_parent = v;
         return {};
       }},
      {"--policy-dir", "DIR", "check the profiles of DIR, not the installed ones",
       [](CheckRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--policy-dir", v, "empty path");
         r.policy_dir = v;
         return {};
       }},
      {"--help", nullptr, "show this help",
       [](CheckRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

std::string Usage() {
  std::ostringstream out;
  out << "Usage: brig check [OPTIONS]\n\n"
         "A preflight. Print, for each cgroup controller brig limits (memory, pids, cpu),\n"
         "the path it takes on this host: v2, v1 (a hybrid host's v1 hierarchy) or missing,\n"
         "with the directory its sandbox groups go under; then how brig kills a sandbox;\n"
         "then each kernel feature the profiles need, probed in throwaway namespaces, as\n"
         "\"NAME ok|missing WHY\"; then, measured, how long a run with a network interface\n"
         "waits at its end for the kernel (\"exit wait\"); then, for each profile, whether it\n"
         "can run here.\n"
         "Run by an ordinary user, it says what that user can have: subordinate ids, AppArmor's\n"
         "hold on user namespaces, a delegated cgroup, the sealed network (brig-check(1)).\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: 0 if the default profile (" << config::kDefaultProfile
      << ") can run here,\n1 if it cannot, 125 on bad input.\n";
  return out.str();
}

const std::optional<cgroup::Hierarchy>& V1For(const cgroup::Layout& l, cgroup::Controller c) {
  switch (c) {
    case cgroup::Controller::kMemory: return l.v1_memory;
    case cgroup::Controller::kPids: return l.v1_pids;
    case cgroup::Controller::kCpu: break;
  }
  return l.v1_cpu;
}

// The cgroup lines: where each controller's groups go and how a sandbox is killed.
void PrintCgroups(const cgroup::Layout& layout, const cgroup::Plan& plan,
                  const std::string& parent) {
  printf("cgroup v2   %s\n", layout.v2 ? layout.v2->mount.c_str() : "not mounted");
  printf("parent      %s\n", parent.empty() ? "brig's own group" : parent.c_str());
  for (cgroup::Controller c : cgroup::kControllers) {
    cgroup::Path p = plan.For(c);
    std::string where = "-";
    if (p == cgroup::Path::kV2) where = cgroup::ParentDir(*layout.v2, parent);
    if (p == cgroup::Path::kV1) where = cgroup::ParentDir(*V1For(layout, c), parent);
    printf("%-11s %-8s %s\n", std::string(cgroup::Name(c)).c_str(),
           std::string(cgroup::Name(p)).c_str(), where.c_str());
  }
  std::optional<bool> v2_kill;
  if (layout.v2) v2_kill = cgroup::ProbeCgroupKill(*layout.v2, parent);
  std::string fallback = layout.v1_freezer ? "freeze, SIGKILL, thaw (v1 freezer)"
                                           : "SIGKILL to brig init (no cgroup to kill through)";
  std::string kill = v2_kill.value_or(false) ? "cgroup.kill (v2)" : fallback;
  // No v2 group to look in yet: the sandbox's own group will say.
  if (layout.v2 && !v2_kill) kill = "cgroup.kill (v2) if its group has it, else " + fallback;
  printf("kill        %s\n", kill.c_str());
}

// Without root: the group brig would make its sandboxes' groups in, if it is delegated to
// this user, and what each controller gets there.
void PrintDelegated(const cgroup::Layout& layout, const std::optional<cgroup::Plan>& plan,
                    const std::string& why) {
  printf("cgroup v2   %s\n", layout.v2 ? layout.v2->mount.c_str() : "not mounted");
  printf("delegated   %s\n", plan ? plan->parent.c_str() : ("no: " + why).c_str());
  for (cgroup::Controller c : cgroup::kControllers) {
    bool v2 = plan && plan->For(c) == cgroup::Path::kV2;
    printf("%-11s %-8s %s\n", std::string(cgroup::Name(c)).c_str(), v2 ? "v2" : "missing",
           v2 ? cgroup::ParentDir(*layout.v2, plan->parent).c_str() : "-");
  }
  printf("kill        %s\n", plan
                                 ? "cgroup.kill (v2) if its group has it, else SIGKILL to brig init"
                                 : "SIGKILL to brig init (no cgroup to kill through)");
}

// The seccomp policy the default profile names, which the seccomp probe loads.
std::string DefaultSeccompFile(const std::string& dir) {
  auto profile = config::LoadProfile(dir, config::kDefaultProfile);
  std::string name = profile ? profile->security().seccomp_policy() : "default";
  auto profile_path = config::PolicyPath(dir, "profiles", config::kDefaultProfile);
  auto path = config::SeccompPolicyPath(dir, profile_path ? *profile_path : "", name);
  return path ? *path : dir + "/seccomp/default.textproto";
}

void PrintFeatures(const std::vector<Feature>& features) {
  for (const Feature& f : features) {
    printf("%-19s %-8s %s\n", f.name.c_str(), f.result ? "ok" : "missing", f.why.c_str());
    if (!f.result) printf("%-19s %-8s %s\n", "", "", f.result.error().Render().c_str());
  }
}

// What a run with an interface waits for at its end, measured. Where the kernel cannot
// expire elements early, brig deletes them and waits for a grace period; the host setting
// that shortens it is kernel.rcu_expedited, which makes every grace period of the host
// expedited, at the cost of an interrupt to each CPU for each: brig does not set it.
void PrintNftExitWait(const std::vector<Feature>& features) {
  for (const Feature& f : features) {
    if (f.name == "nftables" && !f.result) return;
  }
  auto wait = MeasureNftExitWait();
  if (!wait) {
    printf("%-19s %-8s %s\n", "exit wait", "unknown", wait.error().Render().c_str());
    return;
  }
  auto expedited = util::ReadFile("/sys/kernel/rcu_expedited");
  bool on = expedited && !expedited->empty() && (*expedited)[0] == '1';
  char figure[32];
  snprintf(figure, sizeof figure, "%.1f ms", wait->ms);
  std::string why = "what removing its nftables elements adds to a run with an interface";
  if (wait->removal == net::Removal::kExpire) {
    why += ": they are expired, not deleted, and no RCU grace period is waited for";
  } else {
    why +=
        ": the kernel's deleting them, an RCU grace period it waits for (this kernel "
        "cannot expire them early";
    why += on ? "; expedited, as /sys/kernel/rcu_expedited is 1)"
              : "); 1 in /sys/kernel/rcu_expedited makes grace periods expedited, host-wide, "
                "and this wait a fraction of a millisecond";
  }
  printf("%-19s %-8s %s\n", "exit wait", figure, why.c_str());
}

// One line per profile of `dir`; returns whether the default profile can run.
bool PrintProfiles(const std::string& dir, const std::vector<Feature>& features,
                   const cgroup::Plan& plan) {
  bool default_runs = false;
  for (const std::string& name : config::ListPolicyNames(dir, "profiles")) {
    std::vector<std::string> blockers;
    if (auto p = config::LoadProfile(dir, name); p) {
      blockers = ProfileBlockers(*p, name, features, plan);
    } else {
      blockers = {p.error().Render()};
    }
    std::string why;
    for (const auto& b : blockers) why += (why.empty() ? "" : ", ") + b;
    printf("profile %-24s %s\n", name.c_str(),
           blockers.empty() ? "can run here" : ("cannot run here: " + why).c_str());
    if (name == config::kDefaultProfile) default_runs = blockers.empty();
  }
  return default_runs;
}

}  // namespace

int CheckMain(const std::vector<std::string>& args) {
  CheckRequest req;
  for (size_t i = 0; i < args.size(); ++i) {
    auto f = ApplyFlag(Flags(), args, i, req, "brig check");
    if (!f) {
      fprintf(stderr, "brig: %s\n", f.error().Render().c_str());
      return kExitRefused;
    }
  }
  if (req.help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  auto layout = cgroup::ProbeLayout();
  if (!layout) {
    fprintf(stderr, "brig: %s\n", layout.error().Render().c_str());
    return kExitRefused;
  }
  cgroup::Plan plan;
  if (util::Rootless()) {
    if (!req.cgroup_parent.empty()) {
      fprintf(stderr, "brig: --cgroup-parent '%s': %s\n", req.cgroup_parent.c_str(),
              cgroup::kNoParentWithoutRoot);
      return kExitRefused;
    }
    std::string why;
    std::optional<cgroup::Plan> delegated = cgroup::Delegated(*layout, geteuid(), &why);
    if (delegated) plan = *delegated;
    PrintDelegated(*layout, delegated, why);
  } else {
    plan = cgroup::PlanFor(*layout, req.cgroup_parent);
    PrintCgroups(*layout, plan, req.cgroup_parent);
  }
  fflush(stdout);
  std::string dir = config::ResolvePolicyDir(req.policy_dir);
  std::vector<Feature> features = ProbeFeatures(DefaultSeccompFile(dir));
  PrintFeatures(features);
  // Without root no table of the host's is made: there is no exit wait to measure.
  if (!util::Rootless()) PrintNftExitWait(features);
  bool default_runs = PrintProfiles(dir, features, plan);
  if (!default_runs) {
    fflush(stdout);
    fprintf(stderr, "brig: the default profile %s cannot run here (see above)\n",
            config::kDefaultProfile);
  }
  return default_runs ? 0 : 1;
}

}  // namespace brig::cli
