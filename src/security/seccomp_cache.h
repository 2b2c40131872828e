// Compiled seccomp filters, cached by policy content (design.md: compiling costs ~1.3 ms
// for a Docker-sized policy with libseccomp 2.5.4, every start). An entry holds the policy
// text it was compiled from and is used only when that text matches byte for byte, so a
// hash collision can never select the wrong filter. Entries are trusted only in a
// root-owned directory that nobody else can write.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "brig/result.h"
#include "security/seccomp.h"
#include "util/dirs.h"

namespace brig::security {

inline std::string SeccompCacheDir() { return util::RunDir() + "/seccomp"; }

// Reads the policy at `policy_path`, and returns its compiled program from `cache_dir`
// when a valid entry exists, otherwise compiles it and stores an entry (best effort:
// a cache that cannot be written is not an error). An empty `cache_dir`: no cache, nothing
// written (brig run --dry-run).
Result<SeccompProgram> CompileSeccompFile(const std::string& policy_path,
                                          const std::string& cache_dir);

// The program compile(policy) makes of a policy given as a message (an OCI bundle's), from
// `cache_dir` when an entry for the same policy exists; the entry is keyed by `kind` (which
// names what compile() makes: "oci", "init"), the policy's deterministic serialization and
// libseccomp's version. What compile() does must depend on those only.
Result<SeccompProgram> CompileSeccompCached(
    const v1::SeccompPolicy& policy, const std::string& cache_dir, std::string_view kind,
    const std::function<Result<SeccompProgram>(const v1::SeccompPolicy&)>& compile);

}  // namespace brig::security
