// The per-process and per-user limits brig init sets in the sandbox: rlimits (caps.h) and
// the user namespace's own counts (ucounts.h). Plain data; the values come from the profile
// and the run (config/limits.h holds the defaults).
#pragma once

#include <cstdint>

namespace brig::security {

struct Rlimits {
  uint64_t nofile = 0;
  uint64_t nproc = 0;
  uint64_t core = 0;
  // Counted per user and charged to host root as well (ucounts.h).
  uint64_t msgqueue = 0;
  uint64_t sigpending = 0;
};

// The sandbox user namespace's own /proc/sys/user limits (ucounts.h).
struct UserCounts {
  uint64_t inotify_instances = 0;
  uint64_t inotify_watches = 0;
  uint64_t fanotify_groups = 0;
  uint64_t fanotify_marks = 0;
  uint64_t namespaces = 0;  // of each kind
};

}  // namespace brig::security
