// Capabilities and process hardening, child side: every capability set emptied (effective,
// permitted, inheritable, bounding, ambient) with libcap-ng, then no_new_privs.
#pragma once

#include "brig/result.h"
#include "security/limits.h"

namespace brig::security {

// Drops every capability and sets no_new_privs and non-dumpable. Irreversible.
Status DropPrivileges();

// Applies nofile, nproc, core, msgqueue and sigpending.
Status ApplyRlimits(const Rlimits& limits);

}  // namespace brig::security
