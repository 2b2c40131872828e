// What sandboxes whose brig is gone left on the host, removed: by `brig gc`, which reports
// it, and at the start of every `brig run`, which does it quietly. Both go by the same
// locks: a sandbox's record is locked by its brig for the sandbox's life (state/record.h),
// so a record whose lock is free proves its supervisor gone, and its sandbox gone or being
// killed (init dies with brig): a v2 group is killed through cgroup.kill, a v1 group that
// still has tasks is left to a later run or gc; an address
// is decided holding its lease (net/addr.h). A run never waits for a lock a live brig
// holds, and never touches a live sandbox's record.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::cli {

enum class ReclaimMode {
  // brig gc: every stale record, and every state directory of a network namespace that
  // is gone; a record of a namespace that still exists elsewhere is reported, kept.
  kReport,
  // brig run: the same, but a record of a namespace that exists elsewhere is left as it
  // is (a run or gc there takes it), and only the state directories of namespaces found
  // gone on the way are looked at.
  kQuiet,
};

struct Reclaimed {
  std::vector<std::string> removed;  // one line for each thing removed
  std::vector<Error> failed;         // records kept because something could not be removed
};

// With `only`, just that sandbox's record (brig gc ID); the state directories of gone
// network namespaces are then left for a later run or gc.
Result<Reclaimed> Reclaim(ReclaimMode mode, const std::string& only = "");

}  // namespace brig::cli
