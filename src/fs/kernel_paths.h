// The host kernel's files that a sandbox's own /proc would still show, and what brig does
// with each (brig-run(1), "Kernel paths"; `brig policy paths`): the one list the mount plan
// applies and `brig policy` prints. It holds every path that Docker (moby's default spec)
// and runc mask or make read-only.
#pragma once

#include <string>
#include <vector>

namespace brig::fs {

enum class KernelPathRule {
  kMasked,    // reads as empty: /dev/null over a file, an empty read-only tmpfs over a directory
  kReadOnly,  // a read-only bind of itself
  kAbsent,    // not mounted at all
};

struct KernelPath {
  const char* path;  // absolute, inside the sandbox
  KernelPathRule rule;
  const char* why;
};

const std::vector<KernelPath>& KernelPaths();

// "masked", "read-only", "absent".
const char* KernelPathRuleName(KernelPathRule rule);

// The list as `brig policy paths` prints it: a header, then a row per path.
std::string FormatKernelPaths();

}  // namespace brig::fs
