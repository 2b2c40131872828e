// A process's credentials, child side: the one path by which brig init and the OCI verbs'
// processes take their ids, supplementary groups, the five capability sets (through
// libcap-ng), rlimits and no_new_privs. Runs after clone or fork and before execve: no
// exceptions, and nothing that could not run in a single-threaded child.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "security/limits.h"

namespace brig::security {

// Bit N is capability N (linux/capability.h). A capability the running kernel does not
// have is left out of every set, as runc leaves it out: no process can hold it.
struct CapSets {
  uint64_t bounding = 0, effective = 0, inheritable = 0, permitted = 0, ambient = 0;
};
// Every capability the kernel has: as the bounding set, none dropped.
inline constexpr uint64_t kEveryCapability = ~uint64_t{0};

struct Rlimit {
  int resource = 0;  // RLIMIT_*
  uint64_t soft = 0, hard = 0;
  std::string name;  // what an error names it by: "RLIMIT_NOFILE", "nofile"
};

struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
  CapSets caps;
  std::vector<Rlimit> rlimits;
  bool no_new_privs = false;
  // Put before each part an error names: "process." names config.json's properties
  // ("process.user.uid 1000", "process.capabilities.ambient 10").
  std::string prefix;
};

// A sandbox's rlimits (the profile's and the run's) as entries, soft = hard.
std::vector<Rlimit> RlimitList(const Rlimits& limits);

// Makes this process hold `c`, in the order the kernel requires: the rlimits (raising a
// hard one needs CAP_SYS_RESOURCE); the bounding set (needs CAP_SETPCAP); the
// supplementary groups, the gid and the uid under PR_SET_KEEPCAPS, so that the permitted
// set outlives a change from uid 0; the effective, permitted and inheritable sets, which
// drop what the ids change needed; the ambient set, which needs its capabilities permitted
// and inheritable; no_new_privs; not dumpable (a change of ids may have made it so, and the
// process stays brig's binary until its execve). setgroups(2) refused with EPERM (a user namespace whose
// setgroups is denied) is let pass only when no group is asked and the process holds none.
// Irreversible; on an error the process is half-changed and must not go on.
Status ApplyCredentials(const Credentials& c);

// Only the rlimits, as ApplyCredentials sets them: for brig run's workload, whose limits
// are its own, not its parent's (brig init must fork and keep its descriptors whatever
// they are), and whose other credentials are its parent's.
Status ApplyRlimits(std::span<const Rlimit> rlimits, std::string_view prefix = "");

}  // namespace brig::security
