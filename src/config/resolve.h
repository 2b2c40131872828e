// Resolution: a profile and one run's overrides into the plan of a sandbox (sandbox.h). A
// pure function: no file, no environment, no system call. What needs the host (paths,
// owners, header values, addresses, cgroups) is the probe's, which runs next (probe.h).
// Every refusal that needs only these two inputs is made here: a flag that would widen
// the posture (design.md, Invariant 2), a flag the profile has no use for, a limit without
// the one it needs.
#pragma once

#include "brig/result.h"
#include "config/overrides.h"
#include "config/sandbox.h"
#include "proto/brig.pb.h"

namespace brig::config {

// `profile` as LoadProfile or ParseProfile gives it (validated). Errors name the field or
// the flag, and are bad input or policy refusals (exit 125). Paths are kept as given.
Result<Sandbox> Resolve(const v1::Profile& profile, const Overrides& run);

// A sandbox process's environment, built from nothing (design.md, Invariant 3): brig's few
// defaults, then the variables `run` passes from its caller's environment (passed_env),
// then those it sets (set_env), each "K=V". The workload's, and a brig exec's process's.
std::vector<std::string> BuildEnv(const Overrides& run);

}  // namespace brig::config
