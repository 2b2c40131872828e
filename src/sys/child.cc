#include "sys/child.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/syscalls.h"

namespace brig::sys {

Status Child::Signal(int sig) const { return PidfdSendSignal(pidfd_.get(), sig); }

Result<ChildExit> Child::Reap() {
  ChildExit e;
  int r;
  do {
    r = static_cast<int>(syscall(SYS_waitid, P_PIDFD, pidfd_.get(), &e.info, WEXITED, &e.usage));
  } while (r < 0 && errno == EINTR);
  if (r < 0) return SysError("waitid", std::to_string(pid_));
  pidfd_.Reset();
  return e;
}

void Child::KillAndReap() {
  if (!pidfd_) return;
  (void)Signal(SIGKILL);
  (void)Reap();
}

}  // namespace brig::sys
