// The sandbox's share of the per-user counts the kernel keeps (/proc/sys/user). The kernel
// charges what a process holds to its user in its own user namespace and to the owner
// (creator) of each namespace above it, in that namespace. brig makes the sandbox's user
// namespace as the sandbox's own host uid (security/sandbox_ids.h), so what it holds is
// charged to that uid on the host, never to host root; and a user namespace's own limits
// (its /proc/sys/user/max_*) apply to what is charged in it, so capping them in the
// sandbox's namespace stops the sandbox at its share before its host uid's are reached.
#pragma once

#include "brig/result.h"
#include "security/limits.h"

namespace brig::security {

// In brig init, in the sandbox's user namespace, while init still holds CAP_SYS_RESOURCE
// there and the host's /proc is still mounted (before the new root, whose /proc/sys is
// read-only). A count this kernel does not keep is skipped; any other failure is an error.
Status CapUserCounts(const UserCounts& counts);

}  // namespace brig::security
