// Child side of the filesystem: executes a MountPlan on a fresh tmpfs and pivots into it.
// Runs in brig init inside its new user and mount namespaces, before the workload exists.
#pragma once

#include "brig/result.h"
#include "fs/mount_plan.h"

namespace brig::fs {

// Makes every mount private, builds the new root from `plan`, makes it read-only,
// pivot_root()s into it and detaches the old root. On return cwd is "/".
Status EnterNewRoot(MountPlan& plan);

}  // namespace brig::fs
