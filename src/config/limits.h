// A profile's limits, typed: parsed once, here, for both the profile's validation
// (profile.cc) and the run's plan (resolve.cc). The built-in defaults live here and only
// here; `brig policy show` prints them filled in (profile.h, FillDefaults).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "proto/brig.pb.h"
#include "security/limits.h"

namespace brig::config {

// The kernel's PID_MAX_LIMIT, the largest pids.max it accepts.
inline constexpr uint64_t kMaxPids = 4194304;
// The cap on a copy kept on disk when neither the run nor the profile gives one: a copy
// under --copy-dir is never uncapped (a sandbox wrote 2 GiB in 2 s there; issue 14).
inline constexpr uint64_t kCopyDirDisk = 8ull << 30;

struct Limits {
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds grace{0};
  uint64_t tmp_size = 0;                 // bytes, for /tmp and /dev/shm each
  std::optional<uint64_t> output_limit;  // bytes of each of stdout and stderr; unset: no bound
  std::optional<uint64_t> disk;          // a copy workspace's changes; unset: no cap
  std::optional<uint64_t> egress_bytes;  // sent through the proxy and brokers; unset: no bound
  cgroup::Limits cgroup;                 // unset: no limit; optional_limits as *_optional
  security::Rlimits rlimits;
  security::UserCounts user_counts;
};

// `given` with every unset field of the built-in defaults filled in. Without isolation
// there is no /tmp of brig's, so no tmp_size is filled in then.
v1::Limits WithDefaults(const v1::Limits& given, bool isolated);

// `limits` (defaults filled in) as numbers and durations. Errors name `file` and the field
// ("limits.memory"), as bad input.
Result<Limits> ParseLimits(const v1::Limits& limits, const std::string& file);

}  // namespace brig::config
