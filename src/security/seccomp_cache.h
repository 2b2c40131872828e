// Compiled seccomp filters, cached by policy content (design.md: compiling costs ~1.3 ms
// for a Docker-sized policy with libseccomp 2.5.4, every start). An entry holds the policy
// text it was compiled from and is used only when that text matches byte for byte, so a
// hash collision can never select the wrong filter. Entries are trusted only in a
// root-owned directory that nobody else can write.
#pragma once

#include <string>

#include "brig/result.h"
#include "security/seccomp.h"

namespace brig::security {

inline constexpr const char* kSeccompCacheDir = "/run/brig/seccomp";

// Reads the policy at `policy_path`, and returns its compiled program from `cache_dir`
// when a valid entry exists, otherwise compiles it and stores an entry (best effort:
// a cache that cannot be written is not an error). An empty `cache_dir`: no cache, nothing
// written (brig run --dry-run).
Result<SeccompProgram> CompileSeccompFile(const std::string& policy_path,
                                          const std::string& cache_dir);

}  // namespace brig::security
