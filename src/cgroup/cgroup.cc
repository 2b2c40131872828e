#include "cgroup/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "cgroup/control.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::cgroup {
namespace {

using util::Split;

// The v1 hierarchy a controller is bound to, if any.
const std::optional<Hierarchy>& V1Of(const Layout& layout, Controller c) {
  return c == Controller::kMemory ? layout.v1_memory
         : c == Controller::kPids ? layout.v1_pids
                                  : layout.v1_cpu;
}

template <typename Strings>
bool Contains(const Strings& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Missing(Controller c, const std::string& parent) {
  return std::string(Name(c)) + " controller is neither enabled for cgroup v2 groups under " +
         (parent.empty() ? std::string("brig's own group") : "'" + parent + "'") +
         " nor mounted as a v1 hierarchy (see brig check; --cgroup-parent picks another "
         "parent, and a profile may mark the limit optional)";
}

// How long a group may stay busy with tasks that were killed and are still exiting. A
// loaded machine took over 2 s (issue 14, item 13); past this something is stuck, and the
// group is left to brig gc rather than forgotten.
constexpr auto kExitingLimit = std::chrono::seconds(30);

}  // namespace

Status RemoveEmptyGroup(const std::string& dir) {
  auto end = std::chrono::steady_clock::now() + kExitingLimit;
  auto pause = std::chrono::microseconds(500);
  while (rmdir(dir.c_str()) < 0 && errno != ENOENT) {
    if (errno != EBUSY || std::chrono::steady_clock::now() > end) {
      return SysError("rmdir", dir).Wrap("cgroup");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(50000));
  }
  return {};
}

std::string_view Name(Controller c) {
  switch (c) {
    case Controller::kMemory: return "memory";
    case Controller::kPids: return "pids";
    case Controller::kCpu: return "cpu";
  }
  return "?";
}

std::string_view Name(Path p) {
  switch (p) {
    case Path::kV2: return "v2";
    case Path::kV1: return "v1";
    case Path::kMissing: return "missing";
  }
  return "?";
}

Path& Plan::For(Controller c) {
  return c == Controller::kMemory ? memory : c == Controller::kPids ? pids : cpu;
}
Path Plan::For(Controller c) const {
  return c == Controller::kMemory ? memory : c == Controller::kPids ? pids : cpu;
}

Layout ParseLayout(std::string_view mountinfo, std::string_view proc_cgroup) {
  // Which group brig is in, per hierarchy: "0::/path" for v2, "N:ctrl,ctrl:/path" for v1.
  std::string v2_self;
  std::vector<std::pair<std::vector<std::string_view>, std::string>> v1_self;
  for (auto line : Split(proc_cgroup, '\n')) {
    auto f = Split(line, ':');
    if (f.size() < 3) continue;
    // The path may itself hold ':'.
    size_t path_at = f[0].size() + f[1].size() + 2;
    std::string path(line.substr(path_at));
    if (f[0] == "0" && f[1].empty()) {
      v2_self = path;
    } else {
      v1_self.push_back({Split(f[1], ','), path});
    }
  }
  auto relative = [](const std::string& self, std::string_view root) {
    if (root == "/" || root.empty()) return self;
    if (self.compare(0, root.size(), root) == 0) {
      std::string rest = self.substr(root.size());
      return rest.empty() ? std::string("/") : rest;
    }
    return self;
  };
  Layout layout;
  for (auto line : Split(mountinfo, '\n')) {
    auto f = Split(line, ' ');
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 3 >= f.size()) continue;
    std::string_view root = f[3], fstype = f[dash + 1];
    std::string mount = util::UnescapeMountinfo(f[4]);
    if (fstype == "cgroup2") {
      if (!layout.v2) layout.v2 = Hierarchy{mount, relative(v2_self.empty() ? "/" : v2_self, root)};
      continue;
    }
    if (fstype != "cgroup") continue;
    auto opts = Split(f[dash + 3], ',');
    auto bind = [&](const char* ctrl, std::optional<Hierarchy>& slot) {
      if (slot || !Contains(opts, ctrl)) return;
      for (const auto& [ctrls, path] : v1_self) {
        if (Contains(ctrls, ctrl)) slot = Hierarchy{mount, relative(path, root)};
      }
    };
    bind("memory", layout.v1_memory);
    bind("pids", layout.v1_pids);
    bind("cpu", layout.v1_cpu);
    bind("freezer", layout.v1_freezer);
    // The hierarchy's controllers as /proc/self/cgroup lists them; a second mount of the
    // same hierarchy (a bind mount) is not listed again.
    for (const auto& [ctrls, path] : v1_self) {
      if (ctrls.empty() || !Contains(opts, ctrls[0])) continue;
      auto& list = ctrls[0].substr(0, 5) == "name=" ? layout.v1_named : layout.v1;
      bool seen = false;
      for (const auto& h : list) seen = seen || h.controllers[0] == ctrls[0];
      if (seen) continue;
      V1Hierarchy h{Hierarchy{mount, relative(path, root)}, {}};
      for (auto c : ctrls) h.controllers.emplace_back(c);
      list.push_back(std::move(h));
    }
  }
  return layout;
}

Result<Layout> ProbeLayout() {
  std::string mountinfo = BRIG_TRY(util::ReadFile("/proc/self/mountinfo"));
  std::string cg = BRIG_TRY(util::ReadFile("/proc/self/cgroup"));
  return ParseLayout(mountinfo, cg);
}

Status CheckParent(const std::string& parent) {
  if (parent.empty() || parent[0] != '/') {
    return BadInput("--cgroup-parent", parent, "expected an absolute cgroup path, as /brig");
  }
  for (auto part : Split(parent, '/')) {
    if (part == "." || part == "..") {
      return BadInput("--cgroup-parent", parent, "'.' and '..' components are not allowed");
    }
  }
  for (unsigned char c : parent) {
    if (c < 0x20 || c == 0x7f) {
      return BadInput("--cgroup-parent", parent, "control characters are not allowed");
    }
  }
  return {};
}

std::string ParentDir(const Hierarchy& h, const std::string& parent) {
  std::string rel = parent.empty() ? h.self : parent;
  if (rel.empty() || rel[0] != '/') rel = "/" + rel;
  while (rel.size() > 1 && rel.back() == '/') rel.pop_back();
  return rel == "/" ? h.mount : h.mount + rel;
}

std::string GroupDir(const Hierarchy& h, const std::string& clean_path) {
  if (clean_path[0] == '/') return ParentDir(h, clean_path);
  return ParentDir(h, "") + "/" + clean_path;
}

Plan PlanFor(const Layout& layout, const std::string& parent) {
  Plan plan;
  plan.parent = parent;
  std::vector<std::string> v2_available;
  if (layout.v2) {
    // What the leaf can get: the nearest existing ancestor's subtree_control (brig enables
    // the same set in any group it creates on the way).
    std::string dir = ParentDir(*layout.v2, parent);
    while (!Exists(dir) && dir.size() > layout.v2->mount.size()) dir = dir.substr(0, dir.rfind('/'));
    v2_available = Words(dir + "/cgroup.subtree_control");
  }
  for (Controller c : kControllers) {
    if (Contains(v2_available, Name(c))) {
      plan.For(c) = Path::kV2;
    } else if (V1Of(layout, c)) {
      plan.For(c) = Path::kV1;
    }
  }
  return plan;
}

Status FitLimits(const Plan& plan, Limits& limits) {
  auto fit = [&](Controller c, auto& limit, bool optional) -> Status {
    if (!limit || plan.For(c) != Path::kMissing) return {};
    if (!optional) {
      return Fail("cgroup", std::string(Name(c)), Missing(c, plan.parent), ErrorKind::kSetup);
    }
    limit.reset();
    return {};
  };
  BRIG_TRY(fit(Controller::kMemory, limits.memory, limits.memory_optional));
  BRIG_TRY(fit(Controller::kPids, limits.pids, limits.pids_optional));
  return fit(Controller::kCpu, limits.cpu_milli, limits.cpu_optional);
}

std::array<LimitSlot, 3> Slots(Limits& l) {
  return {LimitSlot{l.memory, l.memory_optional, Controller::kMemory, "memory"},
          LimitSlot{l.pids, l.pids_optional, Controller::kPids, "pids"},
          LimitSlot{l.cpu_milli, l.cpu_optional, Controller::kCpu, "cpus"}};
}

std::optional<Plan> Delegated(const Layout& layout, uid_t uid, std::string* why_not) {
  if (!layout.v2) {
    *why_not = "the host has no cgroup v2 hierarchy";
    return std::nullopt;
  }
  std::string group = layout.v2->self.empty() ? "/" : layout.v2->self;
  std::string dir = ParentDir(*layout.v2, group);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || st.st_uid != uid ||
      access((dir + "/cgroup.procs").c_str(), W_OK) != 0 ||
      access((dir + "/cgroup.subtree_control").c_str(), W_OK) != 0) {
    *why_not = "its cgroup v2 group " + group + " is not delegated to it";
    return std::nullopt;
  }
  for (const std::string& pid : Words(dir + "/cgroup.procs")) {
    if (pid != std::to_string(getpid())) {
      *why_not = "its delegated cgroup " + group + " holds process " + pid + " too";
      return std::nullopt;
    }
  }
  Plan plan;
  plan.parent = group;
  std::vector<std::string> offered = Words(dir + "/cgroup.controllers");
  for (Controller c : kControllers) {
    if (std::find(offered.begin(), offered.end(), Name(c)) != offered.end()) {
      plan.For(c) = Path::kV2;
    }
  }
  return plan;
}

Status TakeDelegated(const Layout& layout, const Plan& plan, const std::string& id) {
  const std::string dir = ParentDir(*layout.v2, plan.parent);
  const std::string own = dir + "/" + id + ".supervisor";
  if (mkdir(own.c_str(), 0755) < 0) return SysError("mkdir", own).Wrap("cgroup");
  BRIG_TRY_CTX(util::WriteFile(own + "/cgroup.procs", "0"), "cgroup");
  for (Controller c : kControllers) {
    if (plan.For(c) != Path::kV2) continue;
    BRIG_TRY_CTX(util::WriteFile(dir + "/cgroup.subtree_control", "+" + std::string(Name(c))),
                 "cgroup");
  }
  return {};
}

std::optional<bool> ProbeCgroupKill(const Hierarchy& v2, const std::string& parent) {
  std::string dir = ParentDir(v2, parent);
  // A --cgroup-parent brig has yet to make: its nearest existing ancestor.
  while (dir.size() > v2.mount.size() && !Exists(dir)) dir.resize(dir.rfind('/'));
  if (dir.size() > v2.mount.size()) return Exists(dir + "/cgroup.kill");
  // The root group never has the file; a group just below it does where the kernel has it.
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(v2.mount.c_str()), closedir);
  if (!d) return std::nullopt;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") {
      return Exists(v2.mount + "/" + name + "/cgroup.kill");
    }
  }
  return std::nullopt;
}

Result<TasksFile> OpenTasks(const std::string& dir) {
  std::string path = dir + "/tasks";
  sys::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path).Wrap("cgroup");
  return TasksFile{std::move(fd), std::move(path)};
}

Status JoinV1(const std::vector<TasksFile>& tasks) {
  for (const auto& t : tasks) {
    if (write(t.fd.get(), "0", 1) != 1) return SysError("write", t.path).Wrap("cgroup");
  }
  return {};
}

}  // namespace brig::cgroup
