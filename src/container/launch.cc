// The launch both front ends share (launch.h).
#include "container/launch.h"

#include <linux/securebits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

#include "log/log.h"
#include "sys/syscalls.h"
#include "util/dirs.h"

namespace brig::container {
namespace {

// What brig changes of its own process to clone as another user, put back by Restore.
struct Credentials {
  int securebits = 0, dumpable = 0, pdeath_signal = 0;
  pid_t parent = 0;
};

// Back to root, and what a change of effective uid cleared or set: the dumpable flag, the
// parent-death signal a caller may have given brig (checked against a parent that died
// meanwhile, which would have sent it). Nothing here can fail for root that has its
// capabilities (SECBIT_NO_SETUID_FIXUP kept them), and brig must not go on as another user.
void Restore(const Credentials& c) {
  if (setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)) < 0 ||
      prctl(PR_SET_SECUREBITS, c.securebits, 0, 0, 0) < 0 ||
      prctl(PR_SET_DUMPABLE, c.dumpable, 0, 0, 0) < 0 ||
      prctl(PR_SET_PDEATHSIG, c.pdeath_signal, 0, 0, 0) < 0) {
    abort();
  }
  if (c.pdeath_signal != 0 && getppid() != c.parent) kill(getpid(), c.pdeath_signal);
}

// clone3 with `euid` as brig's effective uid: the kernel makes a new user namespace's owner
// its creator's euid, and charges what is counted in the namespace to that owner in the
// namespace above (ucounts.h). Only the effective uid changes: the real and saved uids stay
// 0, so no process of `euid` may signal or trace brig meanwhile, and SECBIT_NO_SETUID_FIXUP
// keeps brig's capabilities, which CLONE_INTO_CGROUP needs to enter the sandbox's group. The
// child starts with the same credentials; its new namespace resets the securebits.
Result<pid_t> Clone3As(const sys::CloneArgs& args, uid_t euid) {
  Credentials c;
  c.securebits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
  c.dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  c.parent = getppid();
  if (c.securebits < 0 || c.dumpable < 0 || prctl(PR_GET_PDEATHSIG, &c.pdeath_signal, 0, 0, 0) < 0) {
    return SysError("prctl", "brig's credentials");
  }
  if (prctl(PR_SET_SECUREBITS, c.securebits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_SECUREBITS");
  }
  if (setresuid(static_cast<uid_t>(-1), euid, static_cast<uid_t>(-1)) < 0) {
    Error e = SysError("setresuid", std::to_string(euid));
    Restore(c);
    return e;
  }
  auto pid = sys::Clone3(args);
  if (pid && *pid == 0) return pid;
  Restore(c);
  return pid;
}

// A stage child's kPid: it is reaped, and the init it forked, which brig adopted as a
// subreaper when the stage child exited, is held instead.
Status TakeOver(sys::Child& init, const Message& m) {
  pid_t pid = BRIG_TRY(ReportedPid(m));
  BRIG_TRY_CTX(init.Reap(), "the init's stage child");
  init = sys::Child(pid, BRIG_TRY(sys::PidfdOpen(pid, "init")));
  return {};
}

}  // namespace

Result<Launched> CloneInit(const InitClone& c, const std::function<void(int)>& init_main) {
  auto [sync, child_end] = BRIG_TRY(Channel::Open(c.flow, c.who));
  child_end = BRIG_TRY(sys::MoveAbove(std::move(child_end), c.min_fd));
  // Without root, brig dropped them on entering its own user namespace where subordinate ids
  // let it (security::EnterCallersNamespace); where none do, setgroups(2) is denied there and
  // the caller's groups stay (brig(1), WITHOUT ROOT).
  if (!util::Rootless()) BRIG_TRY(sys::DropSupplementaryGroups());
  if (c.staged) BRIG_TRY(sys::BecomeSubreaper());
  int pidfd = -1;
  sys::CloneArgs ca = sys::CloneArgs::Held(c.namespaces, &pidfd, c.cgroup_v2);
  pid_t pid = BRIG_TRY(c.owner ? Clone3As(ca, *c.owner) : sys::Clone3(ca));
  if (pid == 0) {
    sync = Channel();
    init_main(child_end.get());
    _exit(125);
  }
  log::Debug("clone: ", c.who, " is pid ", pid);
  Launched l{sys::Child(pid, sys::UniqueFd(pidfd)), std::move(sync)};
  l.sync.Track(l.init.pidfd());
  return l;
}

Status DriveToReady(Channel& sync, sys::Child& init, bool staged,
                    const std::function<Status()>& answer_id_map) {
  for (;;) {
    Message m = BRIG_TRY(sync.Next());
    log::Debug("sync: ", MsgName(m.type), " from init");
    if (m.type == Msg::kNeedIdMap) {
      BRIG_TRY(sync.Explain(answer_id_map()));
      BRIG_TRY(sync.Send(Msg::kIdMapDone));
    } else if (m.type == Msg::kPid && staged) {
      BRIG_TRY(TakeOver(init, m));
      sync.Track(init.pidfd());
      staged = false;
    } else if (m.type == Msg::kReady && !staged) {
      return {};
    } else {
      return Fail("sync", std::string(MsgName(m.type)), "message out of order",
                  ErrorKind::kInternal);
    }
  }
}

}  // namespace brig::container
