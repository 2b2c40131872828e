// Id-mapped mounts (mount_setattr MOUNT_ATTR_IDMAP): a detached tree whose files owned by
// one host uid/gid appear as owned by another. A read-only workspace owned by an id the
// sandbox user is never mapped to (host root) is mounted so that the sandbox user reads
// it as its owner (mount_plan.cc, AddWorkspace).
#pragma once

#include <string>

#include "brig/result.h"
#include "fs/spec.h"

namespace brig::fs {

// Maps every mount of `tree` (an open_tree(OPEN_TREE_CLONE) copy, not yet attached): files
// of `map.from_uid`/`from_gid` appear as `to_uid`/`to_gid`, every other id as unmapped
// (the overflow id, with only "other" permissions). False: the tree's file system (or one
// mounted under it) cannot be id-mapped, and the tree is as it was.
Result<bool> MapTreeIds(int tree, const IdMap& map, const std::string& subject);

}  // namespace brig::fs
