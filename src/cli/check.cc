// `brig check`: what this host offers brig's sandboxes, starting with the path each cgroup
// controller takes (design.md, Cgroups). Reads only; creates nothing.
#include <cstdio>
#include <sstream>

#include "cgroup/cgroup.h"
#include "cli/cli.h"
#include "cli/flags.h"

namespace brig::cli {
namespace {

struct CheckRequest {
  std::string cgroup_parent;
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
         "Print, for each cgroup controller brig limits (memory, pids, cpu), the path it\n"
         "takes on this host: v2, v1 (a hybrid host's v1 hierarchy) or missing, with the\n"
         "directory its sandbox groups go under; then how brig kills a sandbox.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: 0 if every controller is available, 1 if one is missing, 125 on\n"
         "bad input.\n";
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
  cgroup::Plan plan = cgroup::PlanFor(*layout, req.cgroup_parent);
  printf("cgroup v2   %s\n", layout->v2 ? layout->v2->mount.c_str() : "not mounted");
  printf("parent      %s\n",
         req.cgroup_parent.empty() ? "brig's own group" : req.cgroup_parent.c_str());
  bool all = true;
  for (cgroup::Controller c : cgroup::kControllers) {
    cgroup::Path p = plan.For(c);
    std::string where = "-";
    if (p == cgroup::Path::kV2) where = cgroup::ParentDir(*layout->v2, req.cgroup_parent);
    if (p == cgroup::Path::kV1) where = cgroup::ParentDir(*V1For(*layout, c), req.cgroup_parent);
    all = all && p != cgroup::Path::kMissing;
    printf("%-11s %-8s %s\n", std::string(cgroup::Name(c)).c_str(),
           std::string(cgroup::Name(p)).c_str(), where.c_str());
  }
  std::optional<bool> v2_kill;
  if (layout->v2) v2_kill = cgroup::ProbeCgroupKill(*layout->v2, req.cgroup_parent);
  std::string fallback = layout->v1_freezer ? "freeze, SIGKILL, thaw (v1 freezer)"
                                            : "SIGKILL to brig init (no cgroup to kill through)";
  std::string kill = v2_kill.value_or(false) ? "cgroup.kill (v2)" : fallback;
  // No v2 group to look in yet: the sandbox's own group will say.
  if (layout->v2 && !v2_kill) kill = "cgroup.kill (v2) if its group has it, else " + fallback;
  printf("kill        %s\n", kill.c_str());
  return all ? 0 : 1;
}

}  // namespace brig::cli
