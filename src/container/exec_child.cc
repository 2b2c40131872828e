#include "container/exec_child.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "brig/exit.h"
#include "security/caps.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

[[noreturn]] void Failed(int err_fd, int e, ErrorKind kind) {
  (void)!write(err_fd, &e, sizeof e);
  _exit(ExitCode(kind));
}

// Waits for the parent's go (see ExecSpec). False: no go will come.
bool AwaitGo(const ExecSpec& s) {
  close(s.go_other);
  char go = 0;
  ssize_t n;
  while ((n = read(s.go_fd, &go, 1)) < 0 && errno == EINTR) {
  }
  close(s.go_fd);
  return s.parent == 0 || n == 1;
}

}  // namespace

void ExecChild(const ExecSpec& s) {
  if (s.parent && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != s.parent)) {
    _exit(kExitRefused);
  }
  if (s.go_fd >= 0 && !AwaitGo(s)) _exit(kExitRefused);
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // A terminal on stdin is the workload's own pty (supervise/stdio.h): its controlling one.
  if (setsid() < 0 || (isatty(0) && ioctl(0, TIOCSCTTY, 0) < 0) || !sys::CloseRangeCloexec(3)) {
    Failed(s.err_fd, errno, ErrorKind::kSetup);
  }
  // The working directory as every front end enters one: inside the root, never through a
  // /proc link (sys::EnterDirInRoot). Its errno, or ELOOP for a refusal that has none.
  if (*s.workdir) {
    if (auto in = sys::EnterDirInRoot(s.workdir, "workdir"); !in) {
      Failed(s.err_fd, in.error().err ? in.error().err : ELOOP, ErrorKind::kSetup);
    }
  }
  // The workload's limits, not its parent's: brig init must keep its own few fds whatever
  // they are.
  if (auto r = security::ApplyRlimits(s.rlimits); !r) {
    Failed(s.err_fd, r.error().err, ErrorKind::kSetup);
  }
  // Seccomp last: nothing after this needs more than execve.
  if (s.seccomp && !security::LoadSeccomp(*s.seccomp)) Failed(s.err_fd, -errno, ErrorKind::kSetup);
  execve(s.path, s.argv, s.envp);
  int e = errno;
  // A shell that cannot be run leaves the file's own failure as the cause.
  if (e == ENOEXEC) execve(s.script_argv[0], s.script_argv, s.envp);
  Failed(s.err_fd, e, ExecErrorKind(e));
}

}  // namespace brig::container
