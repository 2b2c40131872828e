// Child side of the filesystem: executes a MountPlan's steps and pivots into the new root.
// Runs in brig init, or an OCI container's init, inside the container's mount namespace,
// before the workload exists. Both front ends mask, make read-only and pivot_root here.
#pragma once

#include <vector>

#include "brig/result.h"
#include "fs/mount_plan.h"

namespace brig::fs {

// Makes every mount private, builds the new root from `plan`, makes it read-only,
// pivot_root()s into it and detaches the old root. On return cwd is "/".
Status EnterNewRoot(MountPlan& plan);

// Executes `steps` in order on the tree whose root is `root` (an O_PATH or mount fd). Each
// destination is reached inside that root (openat2 RESOLVE_IN_ROOT), so a symlink there
// cannot lead a mount out of it. A step's errors are named by its `field` when it has one.
// kSealRoRecursive with an empty dest makes the root's own mount read-only.
Status ApplySteps(int root, const std::vector<Step>& steps);

// pivot_root into the directory `root`, then detaches the old root without its unmount
// reaching the host. On return cwd is "/".
Status PivotInto(int root);

}  // namespace brig::fs
