// A container's groups in every hierarchy (cgroup/groups.h): made or joined, the resource
// writes of the plan (cgroup/resources.h) carried out, and the verbs after create: enter,
// update, freeze, pids, stats, destroy. Waits are on the kernel's events (cgroup.events)
// where v2 has them; a v1 group can only be re-read.
#include "cgroup/groups.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "cgroup/control.h"
#include "cgroup/device_filter.h"
#include "cgroup/resources.h"
#include "log/log.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::cgroup {
namespace {

using Clock = std::chrono::steady_clock;

// How long a freeze may take (as FreezeV1's), and how long killed processes may take to
// leave their groups, before brig gives up (a task stuck in the kernel: the record stays
// for delete).
constexpr auto kFreezeLimit = std::chrono::seconds(10);
constexpr auto kExitLimit = std::chrono::seconds(30);

// The v1 controllers a container gets a group for (runc's cgroupfs driver's set).
constexpr std::string_view kV1Controllers[] = {"cpu",     "cpuacct", "cpuset",   "memory",
                                               "pids",    "blkio",   "devices",  "freezer",
                                               "hugetlb", "net_cls", "net_prio", "perf_event"};
// v2 controllers enabled for stats even where no resource needs them; failing to is no
// error.
const std::set<std::string> kV2StatsControllers = {"cpu", "memory", "pids"};

std::string ParentOf(const std::string& dir) { return dir.substr(0, dir.rfind('/')); }

bool SwapInUse() {
  auto text = util::ReadFile("/proc/swaps");
  return !text || util::Split(*text, '\n').size() > 2;  // header, then one line a device
}

// Waits until cgroup.events in `dir` says `key` is `value`: the kernel flags the file for
// poll(2) with POLLPRI at every change of it. False when `limit` passes first.
Result<bool> AwaitEvent(const std::string& dir, std::string_view key, std::string_view value,
                        Clock::duration limit) {
  std::string path = dir + "/cgroup.events";
  sys::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  auto end = Clock::now() + limit;
  for (;;) {
    // Read before each poll: a change after this read wakes the poll at once.
    std::string text = BRIG_TRY(util::ReadFd(fd.get(), 0));
    if (KeyedIn(text, key) == value) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd.get(), POLLPRI, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      return SysError("poll", path);
    }
  }
}

// SIGKILLs what `dir` holds until it holds nothing (a v1 group, or v2 without
// cgroup.kill). A pid read here may be gone by the signal; that is no error.
Status KillAll(const std::string& dir) {
  auto end = Clock::now() + kExitLimit;
  Backoff backoff;
  for (;;) {
    auto pids = ReadProcs(dir);
    if (!pids && std::move(pids).error().err == ENOENT) return {};
    if (!pids) return std::move(pids).error();
    if (pids->empty()) return {};
    if (Clock::now() > end) {
      return Fail("cgroup", dir, "processes are still in it 30 s after SIGKILL");
    }
    for (pid_t p : *pids) (void)kill(p, SIGKILL);
    backoff.Wait();
  }
}

// Removes the group `dir` and the groups its processes made in it, deepest first. A
// group's directory holds its control files too (dozens in a v1 memory group): the kind
// readdir gives tells the groups among them without a stat each.
Status RemoveTree(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d && errno == ENOENT) return {};
  if (!d) return SysError("opendir", dir).Wrap("cgroup");
  std::vector<std::string> groups;
  while (dirent* e = readdir(d.get())) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    bool group = e->d_type == DT_DIR;
    struct stat st;
    if (e->d_type == DT_UNKNOWN &&
        fstatat(dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      group = S_ISDIR(st.st_mode);
    }
    if (group) groups.push_back(dir + "/" + std::string(name));
  }
  d.reset();
  for (const auto& g : groups) BRIG_TRY(RemoveTree(g));
  return RemoveEmptyGroup(dir);
}

// The routes of a container's groups (Groups::Group): each controller to its group, the
// v2 group itself as "cgroup". `read_v2`: a v2 group's controllers as the kernel has them
// now rather than as remembered (an update may have enabled more).
template <typename GroupList>
Routes RoutesOf(const GroupList& groups, bool read_v2) {
  Routes routes;
  for (const auto& g : groups) {
    if (g.v2) routes["cgroup"] = Route{g.dir, true, g.owned};
    for (const auto& c : g.v2&& read_v2 ? Words(g.dir + "/cgroup.controllers") : g.controllers) {
      routes[c] = Route{g.dir, g.v2, g.owned};
    }
  }
  return routes;
}

bool IsV1Controller(std::string_view c) {
  return std::find(std::begin(kV1Controllers), std::end(kV1Controllers), c) !=
         std::end(kV1Controllers);
}

}  // namespace

bool Groups::Group::Has(std::string_view c) const {
  return std::find(controllers.begin(), controllers.end(), c) != controllers.end();
}

const Groups::Group* Groups::With(std::string_view controller) const {
  // A controller on both (a hybrid host's v2 group enables what no v1 hierarchy holds, but
  // the kernel lets either take it) is v2's, as the routes have it.
  const Group* found = nullptr;
  for (const auto& g : groups_) {
    if (g.Has(controller) && (!found || g.v2)) found = &g;
  }
  return found;
}

bool Groups::OwnsAny() const {
  return std::any_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.owned; });
}

const Groups::Group* Groups::V2() const {
  for (const auto& g : groups_) {
    if (g.v2) return &g;
  }
  return nullptr;
}

std::vector<std::string> Groups::Missing(const Group& g) {
  if (!g.owned) return {};
  return MissingDirs(g.dir);
}

Status Groups::Make(Group& g, const std::vector<std::string>& missing) {
  bool cpuset = !g.v2 && g.Has("cpuset");
  for (const auto& d : missing) {
    if (mkdir(d.c_str(), 0755) < 0) {
      // Another container's create may have made a shared ancestor meanwhile.
      if (errno == EEXIST && d != g.dir) continue;
      // The group itself made meanwhile by someone else is not brig's to remove.
      if (errno == EEXIST) g.owned = false;
      return SysError("mkdir", d).Wrap("cgroup");
    }
    if (d != g.dir) parents_.push_back(d);
    if (cpuset) {
      // A v1 cpuset group starts with no CPUs and no memory nodes, and no task may join
      // it so: each level gets its parent's.
      for (const char* f : {"/cpuset.cpus", "/cpuset.mems"}) {
        if (ReadTrimmed(d + f).value_or("").empty()) {
          auto parent = ReadTrimmed(ParentOf(d) + f);
          if (!parent) return SysError("read", ParentOf(d) + f).Wrap("cgroup");
          BRIG_TRY_CTX(util::WriteFile(d + f, *parent), "cgroup");
        }
      }
    }
  }
  return {};
}

Status Groups::EnableV2(const std::string& mount, const std::set<std::string>& want,
                         bool required) const {
  const Group* g = V2();
  if (!g || !g->owned || want.empty()) return {};
  // The chain from the leaf's parent up to the mount, nearest first.
  std::vector<std::string> chain;
  for (std::string d = ParentOf(g->dir); d.size() >= mount.size(); d = ParentOf(d)) {
    chain.push_back(d);
    if (d == mount) break;
  }
  for (const auto& c : want) {
    // From the nearest ancestor that offers `c` (its cgroup.controllers) down to the
    // parent: enabled in each cgroup.subtree_control that lacks it. In ancestors brig did
    // not make, that is the only write brig makes, as runc and crun do.
    size_t top = 0;
    while (top < chain.size()) {
      auto offered = Words(chain[top] + "/cgroup.controllers");
      if (std::find(offered.begin(), offered.end(), c) != offered.end()) break;
      ++top;
    }
    // Offered nowhere: a v1 hierarchy has it, or the plan refuses what needs it.
    if (top == chain.size()) continue;
    for (size_t i = top + 1; i-- > 0;) {
      std::string control = chain[i] + "/cgroup.subtree_control";
      auto enabled = [&] {
        auto words = Words(control);
        return std::find(words.begin(), words.end(), c) != words.end();
      };
      if (enabled()) continue;
      if (sandbox_ && std::find(parents_.begin(), parents_.end(), chain[i]) == parents_.end()) {
        // Not this sandbox's to write: the brig that just made it may not have enabled
        // its controllers yet.
        Backoff backoff;
        for (int tries = 0; tries < 20 && !enabled(); ++tries) backoff.Wait();
        continue;
      }
      auto s = util::WriteFile(control, "+" + c);
      if (!s && required) return std::move(s).error().Wrap("cgroup");
      if (!s) break;
    }
  }
  return {};
}

Status Groups::Apply(const oci::Resources& r, bool create) const {
  // A create's groups were read as they were made (MakeAll); an update may find more
  // controllers enabled since.
  Routes routes = RoutesOf(groups_, !create);
  return Write(r, create, routes, ReadFacts(routes));
}

Status Groups::Write(const oci::Resources& r, bool create, const Routes& routes,
                     HostFacts facts) const {
  if (auto m = routes.find("memory"); m != routes.end() && m->second.v2 &&
                                      r.memory().check_before_update() && r.memory().limit() > 0) {
    uint64_t in_use = Number(m->second.dir + "/memory.current").value_or(0);
    if (static_cast<uint64_t>(r.memory().limit()) < in_use) {
      return BadInput("linux.resources.memory.limit", "",
                      std::to_string(r.memory().limit()) + " is below the memory in use (" +
                          std::to_string(in_use) + ")");
    }
  }
  facts.default_devices = create && !sandbox_;
  auto planned = PlanWrites(r, routes, facts);
  // brig run's limits have no OCI property to name.
  if (!planned && sandbox_) return std::move(planned).error().Wrap("cgroup");
  if (!planned) return std::move(planned).error();
  for (ControlWrite w : planned->writes) {
    if (sandbox_) w.property = "cgroup";
    BRIG_TRY(WriteControl(w));
  }
  if (planned->v2_devices) {
    auto rules = BRIG_TRY(DeviceRules(r.devices()));
    DeviceList list = EmulateDevices(rules);
    if (!AllowsAll(list) || !create) {
      BRIG_TRY_CTX(AttachDeviceFilter(v2_fd_.get(), DeviceProgram(list)),
                   "linux.resources.devices");
    }
  }
  return {};
}

std::unique_ptr<Groups> Groups::Lay(const Layout& layout, const std::string& path,
                                    const std::function<bool(std::string_view)>& v1) {
  std::unique_ptr<Groups> cg(new Groups());
  for (const auto& h : layout.v1) {
    if (std::none_of(h.controllers.begin(), h.controllers.end(), v1)) continue;
    std::string dir = GroupDir(h.at, path);
    cg->groups_.push_back(Group{dir, !Exists(dir), false, h.controllers});
  }
  if (layout.v2) {
    std::string dir = GroupDir(*layout.v2, path);
    Group g{dir, !Exists(dir), true, {}};
    // What it can have: what its nearest existing ancestor is offered.
    std::string above = ParentOf(dir);
    while (above.size() > layout.v2->mount.size() && !Exists(above)) above = ParentOf(above);
    g.controllers = Words((g.owned ? above : dir) + "/cgroup.controllers");
    cg->groups_.push_back(std::move(g));
    cg->v2_mount_ = layout.v2->mount;
  }
  for (const auto& g : cg->groups_) cg->dirs_.push_back(g.dir);
  return cg;
}

Result<WritePlan> Groups::PlanCreate(const oci::Resources& r) const {
  // The facts of the groups themselves only pick files, they refuse nothing: a plan made
  // before the groups exist refuses what a create would.
  return PlanWrites(r, RoutesOf(groups_, false), HostFacts{});
}

std::vector<Groups::Noted> Groups::ToMake(std::vector<std::vector<std::string>>* missing) const {
  std::vector<Noted> noted;
  for (const auto& g : groups_) {
    std::vector<std::string> m = Missing(g);
    if (!g.owned || sandbox_ || (adopted_ && m.empty())) {
      noted.push_back({g.dir, g.owned});
    } else {
      for (const auto& d : m) noted.push_back({d, true});
    }
    if (missing) missing->push_back(std::move(m));
  }
  return noted;
}

Result<Groups::Planned> Groups::Plan(const std::string& clean_path, const oci::Resources& r) {
  Layout layout = BRIG_TRY_CTX(ProbeLayout(), "cgroup");
  std::unique_ptr<Groups> cg = Lay(layout, clean_path, IsV1Controller);
  Planned p;
  p.writes = BRIG_TRY(cg->PlanCreate(r));
  p.dirs = cg->dirs_;
  p.noted = cg->ToMake(nullptr);
  return p;
}

Status Groups::MakeAll(const Note& note, const std::set<std::string>& want) {
  // Everything it will make or join is noted at once, before anything is made.
  std::vector<std::vector<std::string>> missing;
  BRIG_TRY(note(ToMake(&missing)));
  Status s;
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (s) s = Make(groups_[i], missing[i]);
  }
  if (s && V2()) {
    v2_fd_.Reset(open(V2()->dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!v2_fd_) s = SysError("open", V2()->dir).Wrap("cgroup");
    if (s) s = EnableV2(v2_mount_, want, true);
    if (s && !sandbox_) s = EnableV2(v2_mount_, kV2StatsControllers, false);
    for (auto& g : groups_) {
      if (g.v2 && g.owned) g.controllers = Words(g.dir + "/cgroup.controllers");
    }
  }
  if (!s) {
    (void)Remove();
    return s;
  }
  made_ = true;
  return {};
}

Result<std::unique_ptr<Groups>> Groups::Create(const std::string& path, const oci::Resources& r,
                                               const Note& note, bool adopt) {
  Layout layout = BRIG_TRY_CTX(ProbeLayout(), "cgroup");
  std::unique_ptr<Groups> cg = Lay(layout, path, IsV1Controller);
  if (adopt) {
    cg->adopted_ = true;
    for (Group& g : cg->groups_) {
      g.owned = true;
    }
  }
  // Refused before anything is made: what the host cannot honour.
  BRIG_TRY(cg->PlanCreate(r));
  BRIG_TRY(cg->CheckJoined());
  BRIG_TRY(cg->MakeAll(note, V2ControllersFor(r)));
  // From here on, whatever fails destroys what was made (the destructor).
  BRIG_TRY(cg->Apply(r, true));
  return cg;
}

// runc's checks and words. A frozen group would freeze the container's process as it
// joined, before it could even report; nothing of brig's would ever thaw it (the group is
// not brig's to write to), and a SIGKILL does not end a frozen process.
Status Groups::CheckJoined() const {
  bool warned = false;
  for (const Group& g : groups_) {
    if (g.owned) continue;
    std::optional<std::string> state = g.v2               ? ReadTrimmed(g.dir + "/cgroup.freeze")
                                       : g.Has("freezer") ? ReadTrimmed(g.dir + "/freezer.state")
                                                          : std::nullopt;
    if (state && *state != "0" && *state != "THAWED") {
      return Fail("cgroup", g.dir, "container's cgroup unexpectedly frozen (thaw it first)");
    }
    auto procs = ReadTrimmed(g.dir + "/cgroup.procs");
    if (!warned && procs && !procs->empty()) {
      log::Warn("cgroup '", g.dir, "': container's cgroup is not empty: ",
                std::count(procs->begin(), procs->end(), '\n') + 1,
                " processes are in it already, and share its limits");
      warned = true;
    }
  }
  return {};
}

std::unique_ptr<Groups> Groups::LaySandbox(const Layout& layout, const cgroup::Plan& plan,
                                           const std::string& id, std::string& path,
                                           std::set<std::string>& v2) {
  std::string parent = plan.parent;
  while (!parent.empty() && parent.back() == '/') parent.pop_back();
  // Relative: under the group brig runs in (GroupDir).
  path = plan.parent.empty() ? id : parent + "/" + id;
  std::vector<std::string> v1;
  for (Controller c : kControllers) {
    if (plan.For(c) == Path::kV2) v2.insert(std::string(Name(c)));
    if (plan.For(c) == Path::kV1) v1.emplace_back(Name(c));
  }
  return Lay(layout, path,
             [&v1](std::string_view c) { return std::find(v1.begin(), v1.end(), c) != v1.end(); });
}

std::vector<std::string> Groups::SandboxDirs(const Layout& layout, const cgroup::Plan& plan,
                                             const std::string& id) {
  std::string path;
  std::set<std::string> v2;
  return LaySandbox(layout, plan, id, path, v2)->dirs_;
}

Result<std::unique_ptr<Groups>> Groups::ForSandbox(const Layout& layout, const cgroup::Plan& plan,
                                                   const std::string& id, const Limits& limits,
                                                   const Note& note) {
  std::string path;
  std::set<std::string> v2;
  std::unique_ptr<Groups> cg = LaySandbox(layout, plan, id, path, v2);
  cg->sandbox_ = true;
  for (const auto& g : cg->groups_) {
    if (!g.owned) return Fail("cgroup", g.dir, "exists already: a sandbox's group is its own");
  }
  BRIG_TRY(cg->MakeAll(note, v2));
  // From here on, whatever fails destroys what was made (the destructor).
  const Group* v2_group = cg->V2();
  if ((!v2_group || !Exists(v2_group->dir + "/cgroup.kill")) && layout.v1_freezer) {
    // Without cgroup.kill (no v2, or a kernel before 5.14: the v2 group, once made, says)
    // the v1 freezer makes the kill (Kill).
    std::string dir = GroupDir(*layout.v1_freezer, path);
    BRIG_TRY(note({{dir, true}}));
    cg->groups_.push_back(Group{dir, true, false, {"freezer"}});
    cg->dirs_.push_back(dir);
    BRIG_TRY(cg->Make(cg->groups_.back(), MissingDirs(dir)));
  }
  if (const Group* m = cg->With("memory"); m && !m->v2) {
    // v1 has no memory.oom.group: the supervisor ends the sandbox on this event.
    cg->oom_event_ = BRIG_TRY(cg->WatchOom());
  }
  // The facts are read once: the limits' swap depends on them, and the writes too.
  Routes routes = RoutesOf(cg->groups_, false);
  HostFacts facts = ReadFacts(routes);
  bool swap_limited = limits.memory && limits.swap.value_or(0) != UINT64_MAX;
  bool swap_in_use = !facts.swap_accounting && swap_limited && SwapInUse();
  oci::Resources r = BRIG_TRY(ResourcesOf(limits, plan, facts.swap_accounting, swap_in_use));
  BRIG_TRY(cg->Write(r, true, routes, facts));
  return cg;
}

std::unique_ptr<Groups> Groups::Existing(const std::vector<std::string>& owned,
                                         const std::vector<std::string>& joined) {
  std::unique_ptr<Groups> cg(new Groups());
  std::vector<std::pair<std::string, bool>> all;
  for (const auto& d : owned) all.push_back({d, true});
  for (const auto& d : joined) all.push_back({d, false});
  auto layout = ProbeLayout();
  for (const auto& entry : all) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& dir = entry.first;
    bool owned = entry.second;
    // An ancestor made on the way to another group is no group of the container's.
    bool ancestor = std::any_of(all.begin(), all.end(), [&](const auto& other) {
      return other.first != dir && util::PathWithin(other.first, dir);
    });
    if (ancestor) {
      cg->parents_.push_back(dir);
      continue;
    }
    Group g{dir, owned, false, {}};
    if (layout && layout->v2 && util::PathWithin(dir, layout->v2->mount)) {
      g.v2 = true;
    } else if (layout) {
      for (const auto& h : layout->v1) {
        if (util::PathWithin(dir, h.at.mount)) g.controllers = h.controllers;
      }
    }
    struct statfs fs;
    if (!g.v2 && g.controllers.empty() && statfs(dir.c_str(), &fs) == 0) {
      g.v2 = fs.f_type == CGROUP2_SUPER_MAGIC;
    }
    if (g.v2) {
      g.controllers = Words(dir + "/cgroup.controllers");
      cg->v2_fd_.Reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    cg->dirs_.push_back(dir);
    cg->groups_.push_back(std::move(g));
  }
  std::sort(cg->parents_.begin(), cg->parents_.end(),
            [](const auto& a, const auto& b) { return a.size() < b.size(); });
  return cg;
}

int Groups::v2_fd() const { return v2_fd_.get(); }

Result<int> Groups::V2FdToJoin() const {
  const Group* g = V2();
  if (g && !v2_fd_) {
    return Fail("cgroup", g->dir, "cannot be opened: a process joining would start outside it");
  }
  return v2_fd_.get();
}

Result<Groups::Sub> Groups::ParseSub(const std::string& text) {
  Sub sub;
  std::string path = text;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    for (std::string_view c : util::Split(std::string_view(text).substr(0, colon), ',')) {
      if (c.empty()) return BadInput("--cgroup", text, "an empty controller name");
      sub.controllers.emplace_back(c);
    }
    path = text.substr(colon + 1);
  }
  for (std::string_view part : util::Split(path, '/')) {
    if (part == "..") return BadInput("--cgroup", text, path + " is not a sub cgroup path");
    if (part.empty() || part == ".") continue;
    if (!sub.path.empty()) sub.path += '/';
    sub.path += part;
  }
  return sub;
}

namespace {

// The path of `subs` for a group with `controllers` (v2: none): a list naming one of them,
// else the one that names none; "" for the group itself.
std::string SubFor(const std::vector<Groups::Sub>& subs,
                   const std::vector<std::string>& controllers) {
  const Groups::Sub* any = nullptr;
  for (const auto& s : subs) {
    if (s.controllers.empty()) any = &s;
    for (const auto& c : s.controllers) {
      if (std::find(controllers.begin(), controllers.end(), c) != controllers.end()) return s.path;
    }
  }
  return any ? any->path : "";
}

}  // namespace

Result<sys::UniqueFd> Groups::OpenV2Sub(const std::vector<Sub>& subs) const {
  for (const auto& s : subs) {
    for (const auto& c : s.controllers) {
      bool known = std::any_of(groups_.begin(), groups_.end(),
                               [&c](const Group& g) { return !g.v2 && g.Has(c); });
      if (!known) return BadInput("--cgroup", c, "unknown controller (no v1 hierarchy has it)");
    }
  }
  const Group* g = V2();
  if (!g) return sys::UniqueFd();
  std::string dir = g->dir;
  if (std::string sub = SubFor(subs, {}); !sub.empty()) dir += "/" + sub;
  sys::UniqueFd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return SysError("open", dir).Wrap("--cgroup");
  return fd;
}

Result<std::vector<TasksFile>> Groups::OpenV1Tasks(const std::vector<Sub>& subs) const {
  std::vector<TasksFile> out;
  for (const auto& g : groups_) {
    if (g.v2) continue;
    std::string sub = SubFor(subs, g.controllers);
    if (sub.empty()) {
      out.push_back(BRIG_TRY(OpenTasks(g.dir)));
    } else {
      out.push_back(BRIG_TRY_CTX(OpenTasks(g.dir + "/" + sub), "--cgroup"));
    }
  }
  return out;
}

Status Groups::Update(const oci::Resources& r) const {
  if (const Group* g = V2(); g && g->owned) {
    Layout layout = BRIG_TRY_CTX(ProbeLayout(), "cgroup");
    if (layout.v2) BRIG_TRY(EnableV2(layout.v2->mount, V2ControllersFor(r), true));
  }
  return Apply(r, false);
}

const Groups::Group* Groups::Freezer() const {
  for (const auto& g : groups_) {
    if (g.owned && g.v2 && Exists(g.dir + "/cgroup.freeze")) return &g;
  }
  for (const auto& g : groups_) {
    if (g.owned && !g.v2 && g.Has("freezer")) return &g;
  }
  return nullptr;
}

Status Groups::Freeze(bool frozen) const {
  const Group* g = Freezer();
  if (!g) {
    return Fail(frozen ? "pause" : "resume", "",
                "the container has no freezer: no cgroup v2 group and no v1 freezer group of "
                "brig's making");
  }
  if (!g->v2) return FreezeV1(g->dir, frozen);
  BRIG_TRY_CTX(util::WriteFile(g->dir + "/cgroup.freeze", frozen ? "1" : "0"), "cgroup");
  bool done =
      BRIG_TRY_CTX(AwaitEvent(g->dir, "frozen", frozen ? "1" : "0", kFreezeLimit), "cgroup");
  if (!done && frozen) {
    (void)util::WriteFile(g->dir + "/cgroup.freeze", "0");
    return Fail("pause", g->dir, "the group did not freeze within 10 s");
  }
  return {};
}

bool Groups::Frozen() const {
  const Group* g = Freezer();
  if (!g) return false;
  if (!g->v2) return ReadTrimmed(g->dir + "/freezer.state") == "FROZEN";
  auto text = util::ReadFile(g->dir + "/cgroup.events");
  return text && KeyedIn(*text, "frozen") == "1";
}

Result<std::vector<pid_t>> Groups::Pids() const {
  // Every group holds every process of the container: any will do, one of brig's making
  // and with a controller that keeps processes in it first.
  const Group* best = nullptr;
  int best_rank = -1;
  for (const auto& g : groups_) {
    int rank = (g.owned ? 4 : 0) + ((g.v2 && (g.Has("pids") || g.Has("memory"))) ? 3
                                    : g.Has("memory")                            ? 2
                                    : g.Has("pids")                              ? 1
                                                                                 : 0);
    if (rank > best_rank) best = &g, best_rank = rank;
  }
  if (!best) return std::vector<pid_t>{};
  return ReadProcs(best->dir);
}

Stats Groups::ReadStats() const {
  Stats s;
  const Group* v2 = V2();
  if (const Group* acct = With("cpuacct"); acct && !acct->v2) {
    s.cpu_usage_ns = Number(acct->dir + "/cpuacct.usage");
    s.cpu_user_ns = Number(acct->dir + "/cpuacct.usage_user");
    s.cpu_system_ns = Number(acct->dir + "/cpuacct.usage_sys");
  } else if (v2) {
    // A v2 group's cpu.stat has the usage even without the cpu controller.
    std::string stat = v2->dir + "/cpu.stat";
    auto ns = [](std::optional<uint64_t> us) { return us ? std::optional(*us * 1000) : us; };
    s.cpu_usage_ns = ns(Keyed(stat, "usage_usec"));
    s.cpu_user_ns = ns(Keyed(stat, "user_usec"));
    s.cpu_system_ns = ns(Keyed(stat, "system_usec"));
  }
  if (const Group* cpu = With("cpu")) {
    std::string stat = cpu->dir + "/cpu.stat";
    s.cpu_periods = Keyed(stat, "nr_periods");
    s.cpu_throttled_periods = Keyed(stat, "nr_throttled");
    if (cpu->v2) {
      auto us = Keyed(stat, "throttled_usec");
      if (us) s.cpu_throttled_ns = *us * 1000;
    } else {
      s.cpu_throttled_ns = Keyed(stat, "throttled_time");
    }
  }
  if (const Group* m = With("memory"); m && m->v2) {
    s.memory_usage = Number(m->dir + "/memory.current");
    s.memory_max_usage = Number(m->dir + "/memory.peak");
    s.memory_limit = Number(m->dir + "/memory.max");
    s.memory_failcnt = Keyed(m->dir + "/memory.events", "max");
    s.memory_cache = Keyed(m->dir + "/memory.stat", "file");
    // memory+swap, as v1 and runc report it.
    auto swap = Number(m->dir + "/memory.swap.current");
    auto swap_max = Number(m->dir + "/memory.swap.max");
    if (swap) s.swap_usage = *swap + s.memory_usage.value_or(0);
    if (swap_max) {
      s.swap_limit = *swap_max == UINT64_MAX || s.memory_limit == UINT64_MAX
                         ? UINT64_MAX
                         : *swap_max + s.memory_limit.value_or(0);
    }
  } else if (m) {
    s.memory_usage = Number(m->dir + "/memory.usage_in_bytes");
    s.memory_max_usage = Number(m->dir + "/memory.max_usage_in_bytes");
    s.memory_limit = Number(m->dir + "/memory.limit_in_bytes");
    s.memory_failcnt = Number(m->dir + "/memory.failcnt");
    s.memory_cache = Keyed(m->dir + "/memory.stat", "total_cache");
    s.swap_usage = Number(m->dir + "/memory.memsw.usage_in_bytes");
    s.swap_limit = Number(m->dir + "/memory.memsw.limit_in_bytes");
  }
  s.oom_kills = OomKills();
  if (const Group* p = With("pids")) {
    s.pids_current = Number(p->dir + "/pids.current");
    s.pids_limit = Number(p->dir + "/pids.max");
    if (s.pids_limit == UINT64_MAX) s.pids_limit.reset();
    s.pids_peak = Number(p->dir + "/pids.peak");
    s.pids_limit_hits = Keyed(p->dir + "/pids.events", "max");
  }
  return s;
}

Result<sys::UniqueFd> Groups::WatchOom() const {
  const Group* m = With("memory");
  if (!m || !m->owned) return sys::UniqueFd();
  if (m->v2) {
    sys::UniqueFd in(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!in) return SysError("inotify_init1", "memory.events").Wrap("cgroup");
    std::string events = m->dir + "/memory.events";
    if (inotify_add_watch(in.get(), events.c_str(), IN_MODIFY) < 0) {
      return SysError("inotify_add_watch", events).Wrap("cgroup");
    }
    return in;
  }
  sys::UniqueFd ev(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!ev) return SysError("eventfd").Wrap("cgroup");
  std::string control = m->dir + "/memory.oom_control";
  sys::UniqueFd oc(open(control.c_str(), O_RDONLY | O_CLOEXEC));
  if (!oc) return SysError("open", control).Wrap("cgroup");
  BRIG_TRY_CTX(util::WriteFile(m->dir + "/cgroup.event_control",
                               std::to_string(ev.get()) + " " + std::to_string(oc.get())),
               "cgroup");
  return ev;
}

std::optional<uint64_t> Groups::OomKills() const {
  const Group* m = With("memory");
  if (!m) return std::nullopt;
  return m->v2 ? Keyed(m->dir + "/memory.events", "oom_kill")
               : Keyed(m->dir + "/memory.oom_control", "oom_kill");
}

Status Groups::AttachV1(pid_t pid) const {
  std::string p = std::to_string(pid);
  for (const auto& g : groups_) {
    if (!g.v2) BRIG_TRY_CTX(util::WriteFile(g.dir + "/cgroup.procs", p), "cgroup");
  }
  return {};
}

Status Groups::Kill() const {
  // Only through groups brig made: a joined group may hold processes of others.
  if (!OwnsAny()) return Fail("cgroup", "", "no group of brig's making to kill through");
  const Group* v2 = V2();
  if (v2 && v2->owned && Exists(v2->dir + "/cgroup.kill")) {
    auto s = util::WriteFile(v2->dir + "/cgroup.kill", "1");
    if (s) {
      bool empty = BRIG_TRY_CTX(AwaitEvent(v2->dir, "populated", "0", kExitLimit), "cgroup");
      if (!empty)
        return Fail("cgroup", v2->dir, "processes are still in it 30 s after cgroup.kill");
    } else if (Exists(v2->dir)) {
      return std::move(s).error().Wrap("cgroup");
    }
  } else if (const Group* f = Freezer(); f && Exists(f->dir)) {
    // Frozen, nothing forks between reading the members and signalling them; they die
    // once thawed.
    BRIG_TRY(Freeze(true));
    auto pids = ReadProcs(f->dir);
    if (pids) {
      for (pid_t p : *pids) (void)kill(p, SIGKILL);
    }
    BRIG_TRY(Freeze(false));
  }
  // Whatever is left, and the groups of a host with neither: signalled until they are
  // empty (a v1 group cannot be watched; re-read with short pauses).
  for (const auto& g : groups_) {
    if (g.owned) BRIG_TRY(KillAll(g.dir));
  }
  return {};
}

Status Groups::Remove() {
  v2_fd_.Reset();
  oom_event_.Reset();
  Status first;
  for (const auto& g : groups_) {
    if (!g.owned) continue;
    if (auto s = RemoveTree(g.dir); !s && first) first = std::move(s);
  }
  if (sandbox_) return first;  // its parent is the next sandbox's too
  // Deepest first; one that another container's group is in stays (EBUSY).
  for (auto it = parents_.rbegin(); it != parents_.rend(); ++it) {
    if (rmdir(it->c_str()) < 0 && errno != ENOENT && errno != EBUSY && errno != ENOTEMPTY &&
        first) {
      first = SysError("rmdir", *it).Wrap("cgroup");
    }
  }
  return first;
}

Status Groups::Destroy() {
  made_ = false;
  if (OwnsAny()) BRIG_TRY(Kill());
  return Remove();
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
  BRIG_TRY_CTX(KillAll(dir), "cgroup");
  BRIG_TRY(RemoveEmptyGroup(dir));
  return true;
}

}  // namespace brig::cgroup
