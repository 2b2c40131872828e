// brig init's own seccomp filter (issue 14, item 4): pid 1 of the sandbox is a process the
// workload can reach (signals, its sync socket's peer), so once the workload is released
// init may make only the few system calls its loop makes. The workload never inherits it:
// init forks the workload first and loads this filter before it lets the workload go on.
#pragma once

#include "brig/result.h"
#include "proto/brig.pb.h"
#include "security/seccomp.h"

namespace brig::security {

// The filter as a policy: the list (init_filter.cc) with why each call is there. A call
// outside it kills init, and with it the whole sandbox.
v1::SeccompPolicy InitFilterPolicy();

// Compiled with libseccomp, in the parent like the workload's filter, or taken from
// `cache_dir` (seccomp_cache.h; empty: no cache).
Result<SeccompProgram> CompileInitFilter(const std::string& cache_dir);

}  // namespace brig::security
