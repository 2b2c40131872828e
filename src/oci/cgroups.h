// An OCI container's cgroups (config-linux.md "Control groups"): linux.cgroupsPath and
// linux.resources on pure cgroup v2 and on hybrid hosts (controllers bound to v1
// hierarchies, as on a systemd-less Debian with cgroupfs v1), as runc's cgroupfs driver
// treats them. An absolute cgroupsPath is taken under each hierarchy's root; a relative one
// under the group brig itself runs in, in each hierarchy (runc); an empty one is
// /brig/ID. One directory per hierarchy that exists (v1: cpu,cpuacct, cpuset, memory,
// pids, blkio, devices, freezer, hugetlb, whichever are mounted; v2: the unified mount),
// each noted in the record (Container.cgroups) before it is made. brig writes only to the
// directories it made, and to a v2 parent's cgroup.subtree_control only where the
// controllers are not yet enabled there (as runc and crun do on pure v2).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/oci.pb.h"
#include "sys/fd.h"

namespace brig::oci {

// What `brig events --stats` prints for a container (runc's events "stats" data).
struct CgroupStats {
  std::optional<uint64_t> cpu_usage_ns, cpu_user_ns, cpu_system_ns;
  std::optional<uint64_t> cpu_throttled_periods, cpu_throttled_ns;
  std::optional<uint64_t> memory_usage, memory_max_usage, memory_limit, memory_failcnt;
  std::optional<uint64_t> memory_cache, swap_usage;
  std::optional<uint64_t> pids_current, pids_limit;  // limit unset: max
  std::optional<uint64_t> oom_kills;
};
// As runc's `events --stats` JSON: {"type":"stats","id":ID,"data":{"cpu":...,"memory":...,
// "pids":...}}.
std::string StatsJson(const std::string& id, const CgroupStats& s);

class Cgroups {
 public:
  // Makes the container's groups for `spec` (cgroupsPath, resources) and writes its
  // resources. Every directory is passed to `note` before it is made or joined (owned:
  // made by brig), and the caller writes it into the record (Container.cgroups or
  // joined_cgroups) before this goes on; an error from `note` stops it. A resource this host cannot honour (its controller is
  // not mounted, or the value is refused by the kernel) is an error naming the property
  // ("linux.resources.memory.limit: ..."), and what was made is removed again.
  // Directories that already exist are joined, not made: `owned` then stays false for them
  // and they are never removed (runc joins an existing cgroupsPath too).
  using Note = std::function<brig::Status(const std::string& dir, bool owned)>;
  static Result<std::unique_ptr<Cgroups>> Create(const Spec& spec, const std::string& id,
                                                 const Note& note);
  // The groups a record names, for verbs after create.
  static std::unique_ptr<Cgroups> FromRecord(const Container& c);

  // The v2 directory's fd for CLONE_INTO_CGROUP; -1 without one.
  int v2_fd() const;
  // Puts `pid` into every group (the v1 ones; and v2 where it was not cloned into it).
  Status Enter(pid_t pid) const;
  // linux.resources again (`brig update`): only what `r` sets is written.
  Status Update(const Resources& r) const;
  // Freezes or thaws every process (v2 cgroup.freeze, or the v1 freezer) and waits until
  // the kernel says it is done (pause, resume).
  Status Freeze(bool frozen) const;
  bool Frozen() const;
  // The pids in the container's groups (cgroup.procs), for ps and kill --all.
  Result<std::vector<pid_t>> Pids() const;
  CgroupStats Stats() const;
  // Kills every process in the groups (cgroup.kill, or freeze + SIGKILL + thaw), waits until
  // they are gone, then removes the directories brig made. Idempotent.
  Status Destroy();

  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  Cgroups() = default;
  std::vector<std::string> dirs_;  // absolute, one per hierarchy
  std::vector<bool> owned_;        // per dir: brig made it
  std::string v2_dir_;             // the unified one of dirs_, or empty
  sys::UniqueFd v2_fd_;
};

}  // namespace brig::oci
