// The host's cgroup layout, and brig run's plan over it (design.md, Cgroups): one cgroup
// per sandbox. cgroup v2 is the primary path; on a hybrid host, a controller bound to a v1
// hierarchy is used there instead, in a group brig creates under the one it runs in. brig
// never writes to a group it did not create, and moves no process but the sandbox's own
// init.
//
// The v2 group, when a cgroup2 mount exists at all, holds the sandbox from its first
// instruction (CLONE_INTO_CGROUP) and provides cgroup.kill even if it has no controllers;
// init moves itself into the v1 groups first thing (JoinV1), before the workload exists
// (an ISOLATION_NONE command is put into them by brig before it may exec). Where the v2
// group has no cgroup.kill (no cgroup2 mount, or a kernel before 5.14), the v1 freezer
// makes the kill: freeze, SIGKILL every member, thaw.
//
// The groups themselves are made, limited, killed and removed by cgroup/groups.h, which
// an OCI container's groups share: the limits (config's Limits, from a profile and the
// run's flags) become a Resources (ResourcesOf), written as an OCI container's
// linux.resources are.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::cgroup {

enum class Controller { kMemory, kPids, kCpu };
inline constexpr std::array<Controller, 3> kControllers = {Controller::kMemory,
                                                           Controller::kPids, Controller::kCpu};
std::string_view Name(Controller c);

enum class Path { kV2, kV1, kMissing };
std::string_view Name(Path p);

// What the sandbox is limited to. Unset means no limit (the controller is not needed).
struct Limits {
  std::optional<uint64_t> memory;    // bytes
  std::optional<uint64_t> swap;      // bytes beyond memory; only with memory
  std::optional<uint64_t> pids;      // tasks, brig init included
  std::optional<uint64_t> cpu_milli; // thousandths of a CPU
  // Limits the run may go without where their controller is missing.
  bool memory_optional = false;
  bool pids_optional = false;
  bool cpu_optional = false;
};

// cpu.max period; the quota is cpu_milli * kCpuPeriodUs / 1000.
inline constexpr uint64_t kCpuPeriodUs = 100000;

// A mounted hierarchy: where it is and which group brig runs in there.
struct Hierarchy {
  std::string mount;  // e.g. /sys/fs/cgroup/memory
  std::string self;   // brig's own group, relative to the mount ("/" or "/a/b")
};

// A mounted v1 hierarchy and the controllers bound to it ("cpu", "cpuacct" when co-mounted).
struct V1Hierarchy {
  Hierarchy at;
  std::vector<std::string> controllers;
};

// The host's cgroup layout as /proc/self/mountinfo and /proc/self/cgroup describe it.
struct Layout {
  std::optional<Hierarchy> v2;
  std::optional<Hierarchy> v1_memory, v1_pids, v1_cpu, v1_freezer;
  // Every v1 hierarchy with a controller (named ones such as name=systemd are not), each
  // once, in mountinfo order: the OCI runtime makes a group in all of them (oci/cgroups.h).
  std::vector<V1Hierarchy> v1;
  // The named v1 hierarchies (controllers: {"name=systemd"}), each once: no group is made
  // in them, but an OCI container's /sys/fs/cgroup mounts them too (fs/in_root.cc).
  std::vector<V1Hierarchy> v1_named;
};

// Pure parsers, unit-tested: the two proc files' text to a Layout.
Layout ParseLayout(std::string_view mountinfo, std::string_view proc_cgroup);
Result<Layout> ProbeLayout();

// How each controller will be reached for groups under `parent` (a path relative to each
// hierarchy's root; empty: the group brig runs in, per hierarchy).
struct Plan {
  std::string parent;
  Path memory = Path::kMissing, pids = Path::kMissing, cpu = Path::kMissing;
  Path& For(Controller c);
  Path For(Controller c) const;
};
Plan PlanFor(const Layout& layout, const std::string& parent);
// Drops the optional limits whose controller `plan` has no path for; refuses (exit 125,
// naming the controller) a required one.
Status FitLimits(const Plan& plan, Limits& limits);

// brig run's three limits, each with its controller and its name (limits.NAME in a
// profile, --NAME none on the command line).
struct LimitSlot {
  std::optional<uint64_t>& value;
  bool optional;
  Controller controller;
  const char* name;
};
std::array<LimitSlot, 3> Slots(Limits& limits);

// brig without root: the plan over the v2 group brig runs in, where that group is
// delegated to `uid` as systemd's user manager delegates a unit with Delegate=yes: a
// directory of the uid's whose cgroup.procs and cgroup.subtree_control it may write, with
// no process in it but brig. The plan's parent is that group (relative to the mount), and
// its controllers are what the group offers (its cgroup.controllers). nullopt, with
// `why_not` saying why, where there is no such group.
std::optional<Plan> Delegated(const Layout& layout, uid_t uid, std::string* why_not);
inline constexpr char kNoParentWithoutRoot[] =
    "brig without root makes its cgroups only in the one it runs in, where that is delegated "
    "to it";
// In the delegated group `plan.parent`, before the sandbox's group is made: brig moves
// itself into a group of its own there, ID.supervisor (a group with controllers enabled
// for its children may hold no process), and enables in the delegated group's
// cgroup.subtree_control the controllers the plan takes from v2. The supervisor's group
// stays, empty, when brig ends; it goes with the delegated group (a scope: when brig, its
// one process, ends).
Status TakeDelegated(const Layout& layout, const Plan& plan, const std::string& id);

// Whether the v2 groups brig makes under `parent` will have cgroup.kill (kernel 5.14), as
// far as can be told without making one: the file is looked for in the nearest existing
// group on the way to `parent` below the root, or, at the root (which never has it), in
// any group just below the root. nullopt if there is no such group to look in. A group
// brig makes looks for the file in itself (Groups::ForSandbox).
std::optional<bool> ProbeCgroupKill(const Hierarchy& v2, const std::string& parent);

// A --cgroup-parent: absolute, without "." or ".." components or control characters.
Status CheckParent(const std::string& parent);
// The directory of `parent` in a hierarchy.
std::string ParentDir(const Hierarchy& h, const std::string& parent);
// A group's directory in hierarchy `h` for a tidied path (oci::CleanCgroupsPath): an
// absolute one under the hierarchy's mount, a relative one under the group brig runs in
// there (runc's cgroupfs driver).
std::string GroupDir(const Hierarchy& h, const std::string& clean_path);

// What a container's or sandbox's groups report (runc's events "stats" data; brig run's
// result's usage).
struct Stats {
  std::optional<uint64_t> cpu_usage_ns, cpu_user_ns, cpu_system_ns;
  std::optional<uint64_t> cpu_periods, cpu_throttled_periods, cpu_throttled_ns;
  std::optional<uint64_t> memory_usage, memory_max_usage, memory_limit, memory_failcnt;
  // Swap as runc reports it: memory+swap, on v2 too.
  std::optional<uint64_t> memory_cache, swap_usage, swap_limit;
  std::optional<uint64_t> pids_current, pids_limit;  // limit unset: max
  std::optional<uint64_t> pids_peak;                 // not in runc's JSON; brig run's result
  std::optional<uint64_t> pids_limit_hits;           // forks refused at the limit (pids.events max)
  std::optional<uint64_t> oom_kills;
};

// Joining v1 groups without waiting on the kernel. Writing a pid to cgroup.procs takes
// the global threadgroup lock, whose writer waits for an RCU grace period (8-11 ms on a
// hybrid host, again for every sandbox that is not right behind another); a thread that
// moves itself (it writes "0" to a v1 group's `tasks`) takes no such lock. The fds are
// opened by brig, as root, before the new process exists; the kernel checks a migration
// against the credentials of whoever opened the file. (v2 has no such door: cgroup.procs
// always takes the lock, and a new process joins v2 at birth with CLONE_INTO_CGROUP.)
struct TasksFile {
  sys::UniqueFd fd;  // DIR/tasks, open for writing
  std::string path;
};
Result<TasksFile> OpenTasks(const std::string& dir);
// In the new process, before it has a second thread or a child: into every group.
Status JoinV1(const std::vector<TasksFile>& tasks);

// Removes the empty group `dir` (gone already is no error), waiting out tasks that were
// killed and are still exiting (EBUSY) for up to 30 s.
Status RemoveEmptyGroup(const std::string& dir);

}  // namespace brig::cgroup
