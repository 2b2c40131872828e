// Capability dropping and rlimits. Runs in brig init, before the workload is forked, so the
// workload inherits nothing to drop.
#include "security/caps.h"

#include <cap-ng.h>
#include <sys/prctl.h>
#include <sys/resource.h>

namespace brig::security {

Status DropPrivileges() {
  capng_clear(CAPNG_SELECT_ALL);
  if (capng_apply(CAPNG_SELECT_ALL) != 0) {
    return Fail("capng_apply", "all capability sets", "libcap-ng could not drop capabilities");
  }
  // PR_SET_DUMPABLE 0: the workload (same uid) cannot ptrace brig init or read its /proc.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_DUMPABLE");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_NO_NEW_PRIVS");
  return {};
}

Status ApplyRlimits(const Rlimits& limits) {
  struct Item {
    int resource;
    const char* name;
    uint64_t value;
  };
  const Item items[] = {{RLIMIT_NOFILE, "nofile", limits.nofile},
                        {RLIMIT_NPROC, "nproc", limits.nproc},
                        {RLIMIT_CORE, "core", limits.core},
                        {RLIMIT_MSGQUEUE, "msgqueue", limits.msgqueue},
                        {RLIMIT_SIGPENDING, "sigpending", limits.sigpending}};
  for (const auto& it : items) {
    struct rlimit rl = {it.value, it.value};
    if (setrlimit(it.resource, &rl) < 0) return SysError("setrlimit", it.name);
  }
  return {};
}

}  // namespace brig::security
