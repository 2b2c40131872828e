// One cgroup per sandbox (design.md, Cgroups). cgroup v2 is the primary path; on a hybrid
// host, a controller bound to a v1 hierarchy is used there instead, in a group brig creates
// under the one it runs in. brig never writes to a group it did not create, and moves no
// process but the sandbox's own init.
//
// The v2 group, when a cgroup2 mount exists at all, holds the sandbox from its first
// instruction (CLONE_INTO_CGROUP) and provides cgroup.kill even if it has no controllers;
// init moves itself into the v1 groups first thing (JoinV1), before the workload exists
// (an ISOLATION_NONE command is put into them by brig before it may exec). Where the v2
// group has no cgroup.kill (no cgroup2 mount, or a kernel before 5.14), the v1 freezer
// makes the kill: freeze, SIGKILL every member, thaw.
//
// The limits (config's Limits, from a profile and the run's flags) are written as an OCI
// container's linux.resources are (cgroup/groups.h): ResourcesOf turns them into a
// Resources, PlanWrites (cgroup/resources.h) into control-file writes, and WriteControl
// (cgroup/control.h) makes them.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "state/record.h"
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

// Whether the v2 groups brig makes under `parent` will have cgroup.kill (kernel 5.14), as
// far as can be told without making one: the file is looked for in the nearest existing
// group on the way to `parent` below the root, or, at the root (which never has it), in
// any group just below the root. nullopt if there is no such group to look in. A group
// brig makes looks for the file in itself (Group::Create).
std::optional<bool> ProbeCgroupKill(const Hierarchy& v2, const std::string& parent);

// A --cgroup-parent: absolute, without "." or ".." components or control characters.
Status CheckParent(const std::string& parent);
// The directory of `parent` in a hierarchy.
std::string ParentDir(const Hierarchy& h, const std::string& parent);
// A group's directory in hierarchy `h` for a tidied path (oci::CleanCgroupsPath): an
// absolute one under the hierarchy's mount, a relative one under the group brig runs in
// there (runc's cgroupfs driver).
std::string GroupDir(const Hierarchy& h, const std::string& clean_path);

struct Usage {
  std::optional<uint64_t> cpu_usec, peak_memory, peak_pids;
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

// One sandbox's groups. Create() refuses (exit 125) a needed limit whose controller is
// missing, unless that limit is optional; on any failure what it made is removed again.
class Group {
 public:
  // Every group is noted in `record` before it is made.
  static Result<std::unique_ptr<Group>> Create(const Layout& layout, const Plan& plan,
                                               const std::string& name, const Limits& limits,
                                               state::Record& record);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() { (void)Remove(); }

  // The v2 group's directory fd, for CLONE_INTO_CGROUP; -1 without a cgroup2 mount.
  int v2_fd() const { return v2_fd_.get(); }
  // The v1 groups' tasks files, for init to join them itself (JoinV1).
  Result<std::vector<TasksFile>> OpenV1Tasks() const;
  // Puts `pid` into the v1 groups (an ISOLATION_NONE command, which runs no brig code of
  // its own to join them; it pays the grace period).
  Status AttachV1(pid_t pid);
  // An eventfd that becomes readable on an OOM kill in a v1 memory group; -1 otherwise (v2
  // kills the whole group itself: memory.oom.group).
  int oom_event_fd() const { return oom_event_.get(); }
  // Kills every process in the sandbox. False if there is no cgroup to kill through.
  bool Kill();
  bool OomKilled() const;
  Usage ReadUsage() const;
  // Removes the groups. Call once no process is left; the destructor does it otherwise.
  // Fails if a group stays busy (see kExitingLimit): the sandbox's record must then stay
  // for brig gc.
  [[nodiscard]] Status Remove();

 private:
  Group() = default;
  // The sandbox's v2 group, and one v1 group of controller `c` in hierarchy `h`, each made
  // under the plan's parent.
  Status MakeV2(const Hierarchy& v2, const Plan& plan, const std::string& name,
                state::Record& record);
  Status MakeV1(Controller c, const Hierarchy& h, const Plan& plan, const std::string& name,
                state::Record& record);
  // `limits` written into the groups made, planned (cgroup/resources.h) and written
  // (cgroup/control.h) as an OCI container's resources are.
  Status Limit(const Plan& plan, const Limits& limits);
  std::string v2_;  // directory of the v2 group, empty if none
  std::vector<std::pair<Controller, std::string>> v1_;  // v1 groups by controller
  std::string freezer_;                                // v1 freezer group, kill without v2
  sys::UniqueFd v2_fd_, oom_event_;
  bool v2_memory_ = false, v2_pids_ = false;
  bool v2_kill_ = false;  // the v2 group has cgroup.kill: no v1 freezer is needed to kill
};

// Removes the empty group `dir` (gone already is no error), waiting out tasks that were
// killed and are still exiting (EBUSY) for up to 30 s.
Status RemoveEmptyGroup(const std::string& dir);

// For `brig gc`: removes the group `dir` of sandbox `id`, whose brig is gone, and says
// whether there was one to remove. Refuses a path that is not a cgroup directory named
// `id`; kills what is left in a v2 group first.
Result<bool> RemoveStale(const std::string& id, const std::string& dir);

}  // namespace brig::cgroup
