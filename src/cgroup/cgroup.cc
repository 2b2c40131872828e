#include "cgroup/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <thread>

#include "cgroup/control.h"
#include "cgroup/resources.h"
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

// Creates the missing components of `dir` below the nearest existing ancestor. Returns the
// directories brig created, outermost first. Groups that exist are left as they are.
Result<std::vector<std::string>> MakeParents(const std::string& dir) {
  std::vector<std::string> created;
  for (const auto& d : MissingDirs(dir)) {
    if (mkdir(d.c_str(), 0755) == 0) {
      created.push_back(d);
    } else if (errno != EEXIST) {
      return SysError("mkdir", d);
    }
  }
  return created;
}

// Another brig that created a shared parent may not have enabled its controllers yet.
void AwaitControllers(const std::string& dir, const std::vector<std::string>& want) {
  for (int i = 0; i < 100; ++i) {
    auto have = Words(dir + "/cgroup.subtree_control");
    bool all = true;
    for (const auto& c : want) all = all && Contains(have, c);
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool SwapInUse() {
  auto text = util::ReadFile("/proc/swaps");
  return !text || Split(*text, '\n').size() > 2;  // header, then one line a device
}

std::string Missing(Controller c, const std::string& parent) {
  return std::string(Name(c)) + " controller is neither enabled for cgroup v2 groups under " +
         (parent.empty() ? std::string("brig's own group") : "'" + parent + "'") +
         " nor mounted as a v1 hierarchy (see brig check; --cgroup-parent picks another "
         "parent, and a profile may mark the limit optional)";
}

// Makes one of the sandbox's own groups, noted in its record first.
Result<std::string> MakeGroupDir(const std::string& dir, state::Record& record) {
  BRIG_TRY(record.Add("cgroup", dir));
  if (mkdir(dir.c_str(), 0755) < 0) return SysError("mkdir", dir).Wrap("cgroup");
  return dir;
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

namespace {

bool SwapLimited(const Limits& limits) {
  return limits.memory && limits.swap.value_or(0) != UINT64_MAX;
}

// The v2 parent, made if missing, with the controllers the sandbox's group needs enabled
// for it.
Status PrepareV2Parent(const std::string& parent, const Plan& plan) {
  std::vector<std::string> enable;
  for (Controller c : kControllers) {
    if (plan.For(c) == Path::kV2) enable.push_back(std::string(Name(c)));
  }
  std::vector<std::string> created = BRIG_TRY_CTX(MakeParents(parent), "cgroup");
  std::string line;
  for (const auto& c : enable) line += (line.empty() ? "+" : " +") + c;
  for (const auto& d : created) {
    if (!line.empty()) BRIG_TRY_CTX(util::WriteFile(d + "/cgroup.subtree_control", line), "cgroup");
  }
  if (created.empty()) AwaitControllers(parent, enable);
  return {};
}

// One v1 group of the sandbox, under the plan's parent in hierarchy `h`.
Result<std::string> MakeV1Dir(const Hierarchy& h, const Plan& plan, const std::string& name,
                              state::Record& record) {
  std::string parent = ParentDir(h, plan.parent);
  BRIG_TRY_CTX(MakeParents(parent), "cgroup");
  return MakeGroupDir(parent + "/" + name, record);
}

}  // namespace

Status Group::MakeV2(const Hierarchy& v2, const Plan& plan, const std::string& name,
                     state::Record& record) {
  std::string parent = ParentDir(v2, plan.parent);
  BRIG_TRY(PrepareV2Parent(parent, plan));
  std::string dir = BRIG_TRY(MakeGroupDir(parent + "/" + name, record));
  v2_ = dir;
  // Looked for, not inferred from the kernel's version (5.14): a backport has it too.
  v2_kill_ = Exists(dir + "/cgroup.kill");
  v2_fd_.Reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!v2_fd_) return SysError("open", dir).Wrap("cgroup");
  v2_memory_ = plan.memory == Path::kV2;
  v2_pids_ = plan.pids == Path::kV2;
  return {};
}

Status Group::MakeV1(Controller c, const Hierarchy& h, const Plan& plan, const std::string& name,
                     state::Record& record) {
  std::string dir = BRIG_TRY(MakeV1Dir(h, plan, name, record));
  v1_.push_back({c, dir});
  if (c != Controller::kMemory) return {};
  // v1 has no memory.oom.group: the supervisor ends the sandbox on this event.
  oom_event_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!oom_event_) return SysError("eventfd").Wrap("cgroup");
  sys::UniqueFd oc(open((dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC));
  if (!oc) return SysError("open", dir + "/memory.oom_control").Wrap("cgroup");
  BRIG_TRY_CTX(util::WriteFile(dir + "/cgroup.event_control",
                               std::to_string(oom_event_.get()) + " " + std::to_string(oc.get())),
               "cgroup");
  return {};
}

Status Group::Limit(const Plan& plan, const Limits& limits) {
  // Each limited controller's group (memory's on v2 in any case, for memory.oom.group), the
  // v2 group as "cgroup".
  Routes routes;
  if (!v2_.empty()) routes["cgroup"] = Route{v2_, true, true};
  for (Controller c : kControllers) {
    bool limited = c == Controller::kMemory ? limits.memory || v2_memory_
                   : c == Controller::kPids ? limits.pids.has_value()
                                            : limits.cpu_milli.has_value();
    if (!limited || plan.For(c) == Path::kMissing) continue;
    std::string dir = v2_;
    for (const auto& [v1_c, v1_dir] : v1_) {
      if (v1_c == c && plan.For(c) == Path::kV1) dir = v1_dir;
    }
    routes[std::string(Name(c))] = Route{dir, plan.For(c) == Path::kV2, true};
  }
  HostFacts facts = ReadFacts(routes);
  facts.default_devices = false;
  bool swap_in_use = !facts.swap_accounting && SwapLimited(limits) && SwapInUse();
  oci::Resources r = BRIG_TRY(ResourcesOf(limits, plan, facts.swap_accounting, swap_in_use));
  WritePlan writes = BRIG_TRY_CTX(PlanWrites(r, routes, facts), "cgroup");
  for (auto& w : writes.writes) {
    w.property = "cgroup";  // brig run's limits have no OCI property to name
    BRIG_TRY(WriteControl(w));
  }
  return {};
}

Result<std::unique_ptr<Group>> Group::Create(const Layout& layout, const Plan& plan,
                                             const std::string& name, const Limits& fitted,
                                             state::Record& record) {
  Limits limits = fitted;
  BRIG_TRY(FitLimits(plan, limits));
  // From here on, whatever fails removes what was made (the destructor).
  std::unique_ptr<Group> g(new Group());
  if (layout.v2) BRIG_TRY(g->MakeV2(*layout.v2, plan, name, record));
  for (Controller c : kControllers) {
    if (plan.For(c) == Path::kV1) BRIG_TRY(g->MakeV1(c, *V1Of(layout, c), plan, name, record));
  }
  BRIG_TRY(g->Limit(plan, limits));
  // Without cgroup.kill the v1 freezer makes the kill (Kill).
  if (!g->v2_kill_ && layout.v1_freezer) {
    g->freezer_ = BRIG_TRY(MakeV1Dir(*layout.v1_freezer, plan, name, record));
  }
  return g;
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

Status Group::AttachV1(pid_t pid) {
  std::string p = std::to_string(pid);
  for (const auto& [c, dir] : v1_) BRIG_TRY_CTX(util::WriteFile(dir + "/cgroup.procs", p), "cgroup");
  if (!freezer_.empty()) BRIG_TRY_CTX(util::WriteFile(freezer_ + "/cgroup.procs", p), "cgroup");
  return {};
}

Result<std::vector<TasksFile>> Group::OpenV1Tasks() const {
  std::vector<TasksFile> out;
  for (const auto& [c, dir] : v1_) out.push_back(BRIG_TRY(OpenTasks(dir)));
  if (!freezer_.empty()) out.push_back(BRIG_TRY(OpenTasks(freezer_)));
  return out;
}

bool Group::Kill() {
  if (!v2_.empty() && v2_kill_ && util::WriteFile(v2_ + "/cgroup.kill", "1")) return true;
  if (freezer_.empty()) return false;
  // Frozen, nothing can fork between reading the member list and the signals.
  if (!FreezeV1(freezer_, true)) return false;
  if (auto pids = ReadProcs(freezer_)) {
    for (pid_t p : *pids) (void)kill(p, SIGKILL);
  }
  (void)FreezeV1(freezer_, false);
  return true;
}

bool Group::OomKilled() const {
  if (v2_memory_) return Keyed(v2_ + "/memory.events", "oom_kill").value_or(0) > 0;
  for (const auto& [c, dir] : v1_) {
    if (c == Controller::kMemory) {
      return Keyed(dir + "/memory.oom_control", "oom_kill").value_or(0) > 0;
    }
  }
  return false;
}

Usage Group::ReadUsage() const {
  Usage u;
  if (!v2_.empty()) u.cpu_usec = Keyed(v2_ + "/cpu.stat", "usage_usec");
  if (v2_memory_) u.peak_memory = Number(v2_ + "/memory.peak");
  if (v2_pids_) u.peak_pids = Number(v2_ + "/pids.peak");
  for (const auto& [c, dir] : v1_) {
    if (c == Controller::kMemory) u.peak_memory = Number(dir + "/memory.max_usage_in_bytes");
    if (c == Controller::kPids) u.peak_pids = Number(dir + "/pids.peak");
    if (c == Controller::kCpu && !u.cpu_usec) {
      if (auto ns = Number(dir + "/cpuacct.usage")) u.cpu_usec = *ns / 1000;
    }
  }
  return u;
}

Status Group::Remove() {
  oom_event_.Reset();
  v2_fd_.Reset();
  Status first;
  auto remove = [&first](const std::string& dir) {
    if (auto s = RemoveEmptyGroup(dir); !s && first) first = std::move(s);
  };
  if (!v2_.empty()) remove(std::exchange(v2_, ""));
  for (const auto& [c, dir] : v1_) remove(dir);
  v1_.clear();
  if (!freezer_.empty()) remove(std::exchange(freezer_, ""));
  return first;
}

Result<bool> RemoveStale(const std::string& id, const std::string& dir) {
  struct statfs fs;
  if (dir.empty() || dir[0] != '/' || dir.substr(dir.rfind('/') + 1) != id) {
    return Fail("cgroup", dir, "not a group of sandbox " + id, ErrorKind::kInternal);
  }
  if (statfs(dir.c_str(), &fs) < 0) {
    if (errno == ENOENT) return false;
    return SysError("statfs", dir);
  }
  if (fs.f_type != CGROUP2_SUPER_MAGIC && fs.f_type != CGROUP_SUPER_MAGIC) {
    return Fail("cgroup", dir, "not on a cgroup file system", ErrorKind::kInternal);
  }
  if (fs.f_type == CGROUP2_SUPER_MAGIC) (void)util::WriteFile(dir + "/cgroup.kill", "1");
  BRIG_TRY(RemoveEmptyGroup(dir));
  return true;
}

}  // namespace brig::cgroup
