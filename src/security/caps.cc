// Credentials through libcap-ng (caps.h). libcap-ng keeps one process-wide state: it is
// staged with the sets asked, then applied a part at a time in the kernel's order.
#include "security/caps.h"
#include "util/dirs.h"

#include <cap-ng.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <utility>

namespace brig::security {
namespace {

std::string Part(const Credentials& c, std::string_view part) {
  return c.prefix + std::string(part);
}

// A libcap-ng call's failure: -1 is its own (it could not read this kernel's capability
// version when staged), any other code a system call's, with its errno.
Error CapngFailed(int rc, std::string op, std::string subject) {
  if (rc == -1) {
    return Fail(std::move(op), std::move(subject),
                "libcap-ng could not read this kernel's capability version");
  }
  return SysError(std::move(op), std::move(subject));
}

// libcap-ng's state made the sets asked, the ambient one empty: RaiseAmbient raises it once
// the effective, permitted and inheritable sets hold what it needs. capng_update refuses a
// capability above the kernel's cap_last_cap, and it is left out.
void Stage(const CapSets& s) {
  capng_clear(CAPNG_SELECT_ALL);
  const std::pair<capng_type_t, uint64_t> sets[] = {{CAPNG_BOUNDING_SET, s.bounding},
                                                    {CAPNG_EFFECTIVE, s.effective},
                                                    {CAPNG_PERMITTED, s.permitted},
                                                    {CAPNG_INHERITABLE, s.inheritable}};
  for (const auto& [type, mask] : sets) {
    for (unsigned cap = 0; cap < 64; ++cap) {
      if (mask >> cap & 1) (void)capng_update(CAPNG_ADD, type, cap);
    }
  }
}

Status ApplyBounding(const Credentials& c) {
  // Nothing to drop; libcap-ng would still read the set back from /proc/PID/status of
  // whatever /proc is mounted (brig init, in a pid namespace of its own, has the host's).
  if (c.caps.bounding == kEveryCapability) return {};
  int rc = capng_apply(CAPNG_SELECT_BOUNDS);
  if (rc == 0) return {};
  if (rc == -4) {
    return Fail("capng_apply", Part(c, "capabilities.bounding"), "CAP_SETPCAP is not effective");
  }
  return CapngFailed(rc, "capng_apply", Part(c, "capabilities.bounding"));
}

Status SetGroups(const Credentials& c) {
  if (setgroups(c.groups.size(), c.groups.data()) == 0) return {};
  Error e = SysError("setgroups", Part(c, "user.additionalGids"));
  // EPERM where setgroups(2) is denied (a user namespace whose /proc/PID/setgroups says
  // deny): the process keeps the groups it has, which is as asked only if it has none and
  // none are asked. Host groups that followed it in would stay its for good, which brig
  // without root cannot help: an ordinary user's groups follow it into every namespace it
  // makes (brig(1), WITHOUT ROOT).
  if (e.err == EPERM && c.groups.empty() && (getgroups(0, nullptr) == 0 || util::Rootless())) {
    return {};
  }
  return e;
}

// Under PR_SET_KEEPCAPS, so that the permitted set outlives a change from uid 0 (the
// kernel clears the effective one). Not capng_change_id: libcap-ng 0.8.3 (Debian 12's)
// drops CAP_SETPCAP from the effective and permitted sets whatever was asked (0.9 drops
// only what it added itself), which would take it from a root container whose engine
// gives it, and from brig init before it empties its bounding set.
Status ChangeIds(const Credentials& c) {
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_KEEPCAPS");
  BRIG_TRY(SetGroups(c));
  if (setresgid(c.gid, c.gid, c.gid) < 0) {
    return SysError("setresgid", Part(c, "user.gid ") + std::to_string(c.gid));
  }
  if (setresuid(c.uid, c.uid, c.uid) < 0) {
    return SysError("setresuid", Part(c, "user.uid ") + std::to_string(c.uid));
  }
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_KEEPCAPS");
  return {};
}

// The effective, permitted and inheritable sets, and the ambient one emptied (whatever the
// process had there).
Status ApplySets(const Credentials& c) {
  if (int rc = capng_apply(static_cast<capng_select_t>(CAPNG_SELECT_CAPS | CAPNG_SELECT_AMBIENT));
      rc != 0) {
    return CapngFailed(rc, "capng_apply", Part(c, "capabilities"));
  }
  return {};
}

// Only what the kernel lets an ambient capability be, one both permitted and inheritable
// (capabilities(7)); one that is not is left out, as runc leaves it (runc's own spec asks for
// ambient capabilities that are not inheritable). Leaving one out only takes privilege away.
Status RaiseAmbient(const Credentials& c) {
  uint64_t raisable = c.caps.ambient & c.caps.permitted & c.caps.inheritable;
  for (unsigned cap = 0; cap < 64; ++cap) {
    if (!(raisable >> cap & 1) || capng_update(CAPNG_ADD, CAPNG_AMBIENT, cap) != 0) {
      continue;
    }
    // One at a time, so that an error names the capability the kernel refused.
    if (capng_apply(CAPNG_SELECT_AMBIENT) != 0) {
      return SysError("capng_apply", Part(c, "capabilities.ambient ") + std::to_string(cap));
    }
  }
  return {};
}

}  // namespace

std::vector<Rlimit> RlimitList(const Rlimits& l) {
  return {{RLIMIT_NOFILE, l.nofile, l.nofile, "nofile"},
          {RLIMIT_NPROC, l.nproc, l.nproc, "nproc"},
          {RLIMIT_CORE, l.core, l.core, "core"},
          {RLIMIT_MSGQUEUE, l.msgqueue, l.msgqueue, "msgqueue"},
          {RLIMIT_SIGPENDING, l.sigpending, l.sigpending, "sigpending"}};
}

Status ApplyRlimits(std::span<const Rlimit> rlimits, std::string_view prefix) {
  for (const Rlimit& r : rlimits) {
    struct rlimit rl = {r.soft, r.hard};
    if (setrlimit(r.resource, &rl) < 0) {
      return SysError("setrlimit", std::string(prefix) + "rlimits " + r.name);
    }
  }
  return {};
}

Status ApplyCredentials(const Credentials& c) {
  BRIG_TRY(ApplyRlimits(c.rlimits, c.prefix));
  Stage(c.caps);
  BRIG_TRY(ApplyBounding(c));
  BRIG_TRY(ChangeIds(c));
  BRIG_TRY(ApplySets(c));
  BRIG_TRY(RaiseAmbient(c));
  if (c.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_NO_NEW_PRIVS");
  }
  // A change of ids made the process dumpable as fs.suid_dumpable says (1 on a host set up
  // for debugging): it is brig's binary until its execve, never another process's to trace.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_DUMPABLE");
  return {};
}

}  // namespace brig::security
