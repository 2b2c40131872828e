// The pure planner of every cgroup limit brig sets: an OCI Resources (an OCI container's
// linux.resources) as the ordered control-file writes of a v1, hybrid or pure v2 layout,
// with runc's conversions (cpu.weight from shares, memory.swap.max from memory+swap,
// io.weight from the blkio weight). Nothing here reads or writes the host: the caller
// gathers the facts, makes the groups and carries the writes out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "proto/oci.pb.h"

namespace brig::cgroup {

// Where one controller's files are written.
struct Route {
  std::string dir;
  bool v2 = false;
  bool owned = true;  // brig made the directory; resources are written only to such
};
// By controller name, as the kernel names it in its version (v1 "blkio", v2 "io"); the
// v2 group itself, for its core files (cgroup.*) and the device filter, is "cgroup".
using Routes = std::map<std::string, Route>;

// What the plan needs to know about the host beyond the routes.
struct HostFacts {
  // memory.memsw.limit_in_bytes (v1) or memory.swap.max (v2) exists: swap is accounted.
  bool swap_accounting = false;
  bool bfq = false;  // blkio.bfq.weight or io.bfq.weight exists (the BFQ scheduler)
  // The v1 group's memory.limit_in_bytes now: which of limit and memory+swap goes first.
  std::optional<uint64_t> v1_memory_limit;
  // The quota half of the v2 group's cpu.max now, kept when only the period changes.
  std::string v2_cpu_quota = "max";
  // runc's default device rules are applied even where `r` gives none: an OCI container's
  // create. Otherwise (an update, or brig run's sandbox, whose /dev holds only what it
  // allows) device rules are applied only if given.
  bool default_devices = true;
};

// One write: `value` to `dir`/`file`, for the property named in errors.
struct ControlWrite {
  std::string property;  // "linux.resources.memory.limit"
  std::string dir, file, value;
  bool operator==(const ControlWrite&) const = default;
};

struct WritePlan {
  std::vector<ControlWrite> writes;
  // The device rules need the v2 group's eBPF filter (no v1 devices hierarchy).
  bool v2_devices = false;
};

// `r` as writes, in the order they are made. A property this layout cannot honour (its
// controller is missing or takes no such setting in that version, its group was joined
// rather than made, or its value is invalid) is refused naming it.
Result<WritePlan> PlanWrites(const oci::Resources& r, const Routes& routes, const HostFacts& facts);

// brig run's limits (FitLimits fitted them to `plan`) as the Resources the planner takes,
// so that its sandbox's groups are written as an OCI container's are: memory as
// memory.limit; the swap beyond it as memory.swap, which is memory+swap (OCI's and runc's
// meaning), and none where it is unlimited; cpu_milli as a quota of cpu_milli / 1000 of
// kCpuPeriodUs a kCpuPeriodUs period; pids as pids.limit; and with memory on v2,
// memory.oom.group 1 (one OOM kill ends the whole sandbox, as on v1, where the supervisor
// does it). A swap limit is refused (exit 125) where the group cannot account swap
// (`swap_accounted` false) and the host has swap in use, and dropped if it has none: then
// there is nothing to bound.
Result<oci::Resources> ResourcesOf(const Limits& limits, const Plan& plan, bool swap_accounted,
                                   bool swap_in_use);

// The v2 controllers `r` needs enabled for its group (a unified key's controller too).
std::set<std::string> V2ControllersFor(const oci::Resources& r);

// runc's conversions, for the v2 files that the spec's v1-shaped values become.
uint64_t CpuWeightFromShares(uint64_t shares);
uint64_t IoWeightFromBlkioWeight(uint64_t weight);

}  // namespace brig::cgroup
