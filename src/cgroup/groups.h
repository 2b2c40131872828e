// The groups of one container or sandbox, for both front ends: one group in each cgroup
// hierarchy that is wanted, made (or, for an OCI container, joined), limited by one planner
// (cgroup/resources.h) and one writer (cgroup/control.h), entered by the new process itself
// (JoinV1, CLONE_INTO_CGROUP), and then frozen, updated, counted, killed and removed. Every
// directory is noted before any is made. The two front ends differ only in what they
// ask for:
// - An OCI container (oci/cgroups.h reads its cgroupsPath and linux.resources out of
//   config.json, and its directories out of the record) gets groups as runc's cgroupfs
//   driver makes them: in every v1 hierarchy of runc's set (cpu,cpuacct, cpuset, memory,
//   pids, blkio, devices, freezer, hugetlb, whichever are mounted) and in v2, on pure v2 and
//   on hybrid hosts. The ancestors made on the way are the container's, and go with it.
//   Controllers are enabled in a v2 parent's cgroup.subtree_control wherever they are not
//   yet (as runc and crun do), and runc's default device rules apply.
// - brig run's sandbox (design.md, Cgroups) gets a v2 group and a v1 group only in the
//   hierarchies its plan (cgroup.h) routes a controller to, with the v1 freezer where v2
//   has no cgroup.kill. Its parent (--cgroup-parent) is shared by every sandbox under it:
//   ancestors made on the way stay, and nothing is written to a group this sandbox did not
//   make. Its /dev holds only what it allows, so no device rules are written.
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
  // Until Keep(), the groups Create (or ForSandbox) made are destroyed (Destroy) when they
  // go: a create that fails leaves none. With `adopt`, the groups at `clean_path` that
  // exist are the container's own all the same, as made: a systemd scope made for it
  // (cgroup/systemd.h), delegated to brig.
  static Result<std::unique_ptr<Groups>> Create(const std::string& clean_path,
                                                const oci::Resources& r, const Note& note,
                                                bool adopt = false);
  // brig run's sandbox `id`'s groups under `plan`'s parent in `layout`, limited to `limits`
  // (FitLimits fitted them to `plan`; ResourcesOf makes them the Resources written). Each
  // group is new: one that exists already is refused, never joined. A v1 memory group gets
  // an eventfd that counts its OOM kills (oom_event_fd); where the v2 group has no
  // cgroup.kill, a v1 freezer group is made for the kill.
  static Result<std::unique_ptr<Groups>> ForSandbox(const Layout& layout, const cgroup::Plan& plan,
                                                    const std::string& id, const Limits& limits,
                                                    const Note& note);
  // The directories ForSandbox would make for `id` (the v1 freezer's for a kill aside),
  // made nothing of: what brig run's manifest and its dry run list.
  static std::vector<std::string> SandboxDirs(const Layout& layout, const cgroup::Plan& plan,
                                              const std::string& id);
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
  // (`joined`) before, as noted then, for the verbs after create; a running sandbox's, all
  // joined, for brig exec NAME.
  static std::unique_ptr<Groups> Existing(const std::vector<std::string>& owned,
                                          const std::vector<std::string>& joined);

  // A new process joins the groups itself, never by a pid written for it (JoinV1 says
  // why): the v2 group at birth (clone3 CLONE_INTO_CGROUP with v2_fd()), each v1 group
  // through the fds OpenV1Tasks() opened (JoinV1).
  //
  // The v2 directory's fd for CLONE_INTO_CGROUP; -1 without one.
  int v2_fd() const;
  // The same for a process joining groups that exist (Existing): an error where the v2
  // group is named but could not be opened, since the process would then start outside
  // it, beyond its limits.
  Result<int> V2FdToJoin() const;
  // The same for a process placed in groups below the container's (runc's exec --cgroup):
  // `subs` names, for some controllers or (no controllers) for the rest, a path relative to
  // the container's group, which must exist; a controller no hierarchy has is refused.
  // The v2 directory's fd is owned by the caller.
  struct Sub {
    std::vector<std::string> controllers;
    std::string path;  // relative, without ".." (ParseSub)
  };
  // "PATH" or "CONTROLLER[,CONTROLLER...]:PATH", as --cgroup gives it; "/" is the group
  // itself, and a path that leaves it ("..") is refused.
  static Result<Sub> ParseSub(const std::string& text);
  Result<sys::UniqueFd> OpenV2Sub(const std::vector<Sub>& subs) const;
  Result<std::vector<TasksFile>> OpenV1Tasks(const std::vector<Sub>& subs = {}) const;
  // Puts `pid` into the v1 groups by writing it for it (brig run's unconfined command, which
  // runs no brig code of its own to join them; it pays the grace period).
  Status AttachV1(pid_t pid) const;
  // An eventfd that becomes readable on an OOM kill in a sandbox's v1 memory group; -1
  // otherwise (v2 kills the whole group itself: memory.oom.group).
  int oom_event_fd() const { return oom_event_.get(); }
  // A descriptor that becomes readable when the kernel's OOM killer acts in the memory
  // controller's group (v1: an eventfd on memory.oom_control; v2: inotify on
  // memory.events, which also changes for other reasons: read OomKills then). None where
  // the group is not brig's making, or there is none.
  Result<sys::UniqueFd> WatchOom() const;
  // The OOM kills in the memory controller's group, if it has one.
  std::optional<uint64_t> OomKills() const;
  // The resources again (`brig update`): only what `r` sets is written.
  Status Update(const oci::Resources& r) const;
  // Freezes or thaws every process (v2 cgroup.freeze, or the v1 freezer) and waits until
  // the kernel says it is done (pause, resume).
  Status Freeze(bool frozen) const;
  bool Frozen() const;
  // The pids in the container's groups (cgroup.procs), for ps and kill --all.
  Result<std::vector<pid_t>> Pids() const;
  Stats ReadStats() const;
  // Kills every process in the groups brig made (cgroup.kill, or freeze + SIGKILL + thaw,
  // then SIGKILL until they are empty) and waits until they are gone. Fails if brig made no
  // group to kill through.
  Status Kill() const;
  // Kill where brig made a group, then removes the directories brig made. Once: the
  // destructor does not try again, so a group that stays busy stays for brig gc (a
  // sandbox) or delete (a container).
  [[nodiscard]] Status Destroy();

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
  // The groups of `clean_path`, as they are on the host now: nothing made. A v1 hierarchy
  // gets one if `v1` holds one of its controllers; v2, if mounted, always.
  // ForSandbox's and SandboxDirs' groups, laid out: `path` under the mounts, and the v2
  // controllers the plan puts there.
  static std::unique_ptr<Groups> LaySandbox(const Layout& layout, const cgroup::Plan& plan,
                                            const std::string& id, std::string& path,
                                            std::set<std::string>& v2);
  static std::unique_ptr<Groups> Lay(const Layout& layout, const std::string& clean_path,
                                     const std::function<bool(std::string_view)>& v1);
  // `r` as writes to these groups, planned before they exist.
  Result<WritePlan> PlanCreate(const oci::Resources& r) const;
  // What Create notes: each group joined, or the directories it makes for it (Missing), in
  // order (a sandbox's: its groups alone); `missing`, if given, gets each group's Missing.
  std::vector<Noted> ToMake(std::vector<std::vector<std::string>>* missing) const;
  // Refuses a group to be joined that is frozen ("container's cgroup unexpectedly frozen",
  // as runc words it), and warns once if one already holds processes ("container's cgroup
  // is not empty"), as runc does.
  Status CheckJoined() const;
  // Notes, then makes, the groups Lay laid out, with the v2 controllers `want` enabled for
  // the v2 group (a write that fails is an error), and, for a container, those it reports
  // stats of where they can be. Whatever fails removes what was made.
  Status MakeAll(const Note& note, const std::set<std::string>& want);
  const Group* With(std::string_view controller) const;
  const Group* V2() const;
  // The group that freezes the container: the v2 one brig made (cgroup.freeze, 5.2), else
  // the v1 freezer group brig made; null without either.
  const Group* Freezer() const;
  bool OwnsAny() const;
  // `g`'s directory and its ancestors that do not exist, outermost first; none if joined.
  static std::vector<std::string> Missing(const Group& g);
  // Makes `missing` (Missing(g), noted); a group someone else made meanwhile is not owned.
  Status Make(Group& g, const std::vector<std::string>& missing);
  // Enables those of `want` that cgroup v2 offers for the owned v2 group, from the nearest
  // ancestor that has them down to its parent, wherever they are not enabled yet (in a
  // sandbox's, only in ancestors it made; in others it waits a moment for the create that
  // made them); `required`: a write that fails is an error.
  Status EnableV2(const std::string& mount, const std::set<std::string>& want, bool required) const;
  // The resources as writes, in `create` or update mode, carried out: Write with the
  // groups' routes and the facts read from them.
  Status Apply(const oci::Resources& r, bool create) const;
  Status Write(const oci::Resources& r, bool create, const Routes& routes, HostFacts facts) const;
  // Removes what brig made, deepest first: the groups (and groups made inside them), then
  // a container's ancestors that no other group holds.
  Status Remove();

  std::vector<Group> groups_;
  std::vector<std::string> dirs_;  // the groups' directories, absolute (dirs())
  // Ancestors brig made for them, outermost first: a container's, removed with it, or the
  // parent of a sandbox, left for the next.
  std::vector<std::string> parents_;
  std::string v2_mount_;  // the v2 hierarchy's mount point, if there is one
  sys::UniqueFd v2_fd_, oom_event_;
  bool sandbox_ = false;  // brig run's sandbox (ForSandbox), not an OCI container
  bool adopted_ = false;  // Create's `adopt`
  bool made_ = false;     // by Create, and not kept or destroyed yet
};

// For `brig gc`: removes the group `dir` of sandbox `id`, whose brig is gone, and says
// whether there was one to remove. Refuses a path that is not a cgroup directory named
// `id`; kills what is left in it first (cgroup.kill, or SIGKILL until it is empty), in
// whichever order the record names the sandbox's groups.
Result<bool> RemoveStale(const std::string& id, const std::string& dir);

}  // namespace brig::cgroup
