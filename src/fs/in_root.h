// An OCI container's root, built by its init inside the image's root directory (a tree the
// image controls): every target is resolved with openat2(RESOLVE_IN_ROOT) and mounted
// through its fd, so a symlink the image plants cannot send a mount outside the root (runc
// CVE-2021-30465). Runs in the container's mount namespace before any seccomp filter.
#pragma once

#include <string>

#include "brig/result.h"
#include "fs/mount_plan.h"
#include "sys/fd.h"

namespace brig::fs {

// `path` (absolute, inside the root `root`) opened O_PATH, confined to the root. With
// `make`, missing directories on the way are made (0755), and a missing last component
// too: a directory, or an empty file when `as_file`. A dangling symlink on the way (an
// image's /mnt/x -> /somewhere) is followed inside the root and what it names is made
// there, as runc does; nothing is ever made outside the root.
Result<sys::UniqueFd> OpenInRoot(int root, const std::string& path, bool make, bool as_file);

// Executes one step of the kinds kBindSource ... kPropagation (mount_plan.h) in `root`.
Status ApplyInRoot(int root, const Step& s);

}  // namespace brig::fs
