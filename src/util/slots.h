// Files that a live brig holds under an exclusive flock(2) while it uses what they name: an
// address lease or a bridge port (net/addr.h), a sandbox's host ids (security/
// sandbox_ids.h). The kernel lets go of a lock when its holder is gone, killed or not, so
// what a crashed brig held is free again at once; its file stays until a run or brig gc
// drops it (DropUnheld).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::util {

// Locks `path` (made if `create` and missing). Fails with EWOULDBLOCK if another holds it,
// or if the locked file is no longer the one at `path` (its holder has just released and
// unlinked it), so a file is never held twice.
Result<sys::UniqueFd> LockHeld(const std::string& path, bool create);

// One of the slots `dir`/N, N from `first` to first+count-1, locked (LockHeld) while `fd`
// is open. The search starts at a random N, so concurrent takers rarely meet.
struct Slot {
  uint32_t n = 0;
  std::string path;
  sys::UniqueFd fd;
};
// What TakeSlot does with a slot whose file a holder that is gone left, unlocked: take it
// (what it names is free once its holder is), or skip it, for what a holder's death does
// not end at once (a sandbox uid's processes die after their brig); DropUnheld's `in_use`
// then says when it may go.
enum class Left { kTake, kSkip };
// nullopt: every slot is held (or left, with kSkip).
Result<std::optional<Slot>> TakeSlot(const std::string& dir, uint32_t first, uint32_t count,
                                     Left left = Left::kTake);

// Removes the files in `dir` whose holders are gone, unless `in_use` (given the file's
// name) says what one names is still in use; notes their paths in `removed` if given.
// Returns false if one stays.
Result<bool> DropUnheld(const std::string& dir, std::vector<std::string>* removed = nullptr,
                        const std::function<bool(const std::string&)>& in_use = {});

}  // namespace brig::util
