// A container's groups, one in every hierarchy, as runc's cgroupfs driver makes them: v1
// (cpu,cpuacct, cpuset, memory, pids, blkio, devices, freezer, hugetlb, whichever are
// mounted) and v2 (the unified mount), on pure v2 and on hybrid hosts. An OCI container's
// (oci/cgroups.h reads its cgroupsPath and linux.resources out of config.json, and its
// directories out of the record); brig run's sandbox has cgroup::Group (cgroup/cgroup.h).
// Both are limited by one planner (cgroup/resources.h) and one writer (cgroup/control.h).
// Every directory is noted before any is made. brig writes only to the directories it
// made, and to a v2 parent's cgroup.subtree_control only where the controllers are not yet
// enabled there (as runc and crun do on pure v2).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "cgroup/resources.h"
#include "proto/oci.pb.h"
#include "sys/fd.h"

namespace brig::cgroup {

// What a container's groups report (runc's events "stats" data).
struct Stats {
  std::optional<uint64_t> cpu_usage_ns, cpu_user_ns, cpu_system_ns;
  std::optional<uint64_t> cpu_periods, cpu_throttled_periods, cpu_throttled_ns;
  std::optional<uint64_t> memory_usage, memory_max_usage, memory_limit, memory_failcnt;
  // Swap as runc reports it: memory+swap, on v2 too.
  std::optional<uint64_t> memory_cache, swap_usage, swap_limit;
  std::optional<uint64_t> pids_current, pids_limit;  // limit unset: max
  std::optional<uint64_t> oom_kills;
};

class Groups {
 public:
  // Makes the groups of `clean_path` (GroupDir in each hierarchy) and writes `r`. The
  // directories it will make (owned) or join are passed to `note` at once, before any is
  // made, and the caller writes them down (an OCI container's record: Container.cgroups or
  // joined_cgroups) before this goes on; an error from `note` stops it. One noted that
  // another create makes meanwhile is left to that one (Destroy removes only what is there
  // and empty). A resource this host cannot honour (its controller is not mounted, or the
  // value is refused by the kernel) is an error naming the property
  // ("linux.resources.memory.limit: ..."), and what was made is removed again.
  // Directories that already exist are joined, not made: `owned` then stays false for them
  // and they are never removed (runc joins an existing cgroupsPath too); brig writes no
  // resource to them (one set for a joined group is refused), nor kills through them.
  struct Noted {
    std::string dir;
    bool owned;
  };
  using Note = std::function<brig::Status(const std::vector<Noted>&)>;
  // Until Keep(), the groups Create made are destroyed (Destroy) when they go: a create
  // that fails leaves none.
  static Result<std::unique_ptr<Groups>> Create(const std::string& clean_path,
                                                const oci::Resources& r, const Note& note);
  void Keep() { made_ = false; }
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;
  ~Groups() {
    if (made_) (void)Destroy();
  }
  // What Create would do, read from the host and made nothing of (`brig create --dry-run`):
  // the groups' directories, those it would make (owned) or join, and the writes of `r`
  // as they would be planned before the groups exist. Refuses what Create refuses first.
  struct Planned {
    std::vector<std::string> dirs;
    std::vector<Noted> noted;
    WritePlan writes;
  };
  static Result<Planned> Plan(const std::string& clean_path, const oci::Resources& r);
  // The groups made (`owned`, with the ancestors made on the way to them) or joined
  // (`joined`) before, as noted then, for the verbs after create.
  static std::unique_ptr<Groups> Existing(const std::vector<std::string>& owned,
                                          const std::vector<std::string>& joined);

  // A new process joins the groups itself, never by a pid written for it (JoinV1 says
  // why): the v2 group at birth (clone3 CLONE_INTO_CGROUP with v2_fd()), each v1 group
  // through the fds OpenV1Tasks() opened (JoinV1).
  //
  // The v2 directory's fd for CLONE_INTO_CGROUP; -1 without one.
  int v2_fd() const;
  Result<std::vector<TasksFile>> OpenV1Tasks() const;
  // The resources again (`brig update`): only what `r` sets is written.
  Status Update(const oci::Resources& r) const;
  // Freezes or thaws every process (v2 cgroup.freeze, or the v1 freezer) and waits until
  // the kernel says it is done (pause, resume).
  Status Freeze(bool frozen) const;
  bool Frozen() const;
  // The pids in the container's groups (cgroup.procs), for ps and kill --all.
  Result<std::vector<pid_t>> Pids() const;
  Stats ReadStats() const;
  // Kills every process in the groups (cgroup.kill, or freeze + SIGKILL + thaw), waits until
  // they are gone, then removes the directories brig made. Idempotent.
  Status Destroy();

  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  // The container's group in one hierarchy.
  struct Group {
    std::string dir;
    bool owned = false;  // brig made it (else it was joined)
    bool v2 = false;
    std::vector<std::string> controllers;  // v1: its hierarchy's; v2: those enabled in it
    bool Has(std::string_view c) const;
  };
  Groups() = default;
  // The groups of `clean_path` in every hierarchy, as they are on the host now: nothing made.
  static Result<std::unique_ptr<Groups>> Lay(const std::string& clean_path);
  // `r` as writes to these groups, planned before they exist.
  Result<WritePlan> PlanCreate(const oci::Resources& r) const;
  // What Create notes: each group joined, or the directories it makes for it (Missing), in
  // order; `missing`, if given, gets each group's Missing.
  std::vector<Noted> ToMake(std::vector<std::vector<std::string>>* missing) const;
  const Group* With(std::string_view controller) const;
  const Group* V2() const;
  // The group that freezes the container: the v2 one brig made (cgroup.freeze, 5.2), else
  // the v1 freezer group brig made; null without either.
  const Group* Freezer() const;
  // `g`'s directory and its ancestors that do not exist, outermost first; none if joined.
  static std::vector<std::string> Missing(const Group& g);
  // Makes `missing` (Missing(g), noted); a group someone else made meanwhile is not owned.
  Status Make(Group& g, const std::vector<std::string>& missing);
  // Enables those of `want` that cgroup v2 offers for the owned v2 group, from the nearest
  // ancestor that has them down to its parent, wherever they are not enabled yet;
  // `required`: a write that fails is an error.
  Status EnableV2(const std::string& mount, const std::set<std::string>& want, bool required) const;
  // The resources as writes, in `create` or update mode, carried out.
  Status Apply(const oci::Resources& r, bool create) const;
  Status Kill() const;
  // Removes what brig made, deepest first: the groups (and groups made inside them), then
  // the ancestors no other group holds.
  Status Remove();

  std::vector<Group> groups_;
  std::vector<std::string> dirs_;     // the groups' directories, absolute (dirs())
  std::vector<std::string> parents_;  // ancestors brig made for them, outermost first
  std::string v2_mount_;              // the v2 hierarchy's mount point, if there is one
  sys::UniqueFd v2_fd_;
  bool made_ = false;  // by Create, and not kept yet
};

}  // namespace brig::cgroup
