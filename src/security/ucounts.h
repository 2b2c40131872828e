// The sandbox's share of the per-user counts the kernel keeps (/proc/sys/user). brig makes
// the sandbox's user namespace as root, and the kernel charges what a process holds to its
// user in its own user namespace and to the creator of each namespace above it: without a
// cap of its own, a sandbox's inotify instances, watches and namespaces are host root's,
// and a sandbox that takes them all leaves none to the host's root processes. A user
// namespace's own limits (its /proc/sys/user/max_*) apply to what is charged in it, so
// capping them in the sandbox's namespace stops the sandbox before the host runs out.
#pragma once

#include "brig/result.h"
#include "security/limits.h"

namespace brig::security {

// In brig init, in the sandbox's user namespace, while init still holds CAP_SYS_RESOURCE
// there and the host's /proc is still mounted (before the new root, whose /proc/sys is
// read-only). A count this kernel does not keep is skipped; any other failure is an error.
Status CapUserCounts(const UserCounts& counts);

}  // namespace brig::security
