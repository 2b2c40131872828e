// The container's file system, in its own mount namespace (child side): config.json's
// root, mounts, devices, rootfsPropagation, maskedPaths and readonlyPaths. Every mount
// target inside the rootfs is resolved with openat2(RESOLVE_IN_ROOT) and mounted through
// its fd, so a symlink the image plants cannot send a mount outside the rootfs (runc
// CVE-2021-30465, CVE-2025-31133).
#pragma once

#include <string>

#include "brig/result.h"
#include "proto/oci.pb.h"

namespace brig::oci {

// Before pivot_root: the host's mounts made slave (or as rootfsPropagation says), the
// rootfs a mount point of its own, config.json's mounts in order, and /dev's devices.
// A bind mount's relative source is taken from `bundle`. `userns`: the container has a
// user namespace of its own (devices are then bound from the host, as mknod is not
// allowed there).
Status PrepareRootfs(const Spec& spec, const std::string& rootfs, const std::string& bundle,
                     bool userns);
// pivot_root into the rootfs (or, with `no_pivot`, MS_MOVE and chroot, runc's --no-pivot).
Status EnterRootfs(const std::string& rootfs, bool no_pivot);
// After it: root.readonly, maskedPaths, readonlyPaths, and the mount propagation of "/".
Status FinishRootfs(const Spec& spec);

}  // namespace brig::oci
