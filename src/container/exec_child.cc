#include "container/exec_child.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "brig/exit.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

[[noreturn]] void Failed(int err_fd, int e, ErrorKind kind) {
  (void)!write(err_fd, &e, sizeof e);
  _exit(ExitCode(kind));
}

// Waits for the parent's go (see ExecStart). False: no go will come.
bool AwaitGo(const ExecStart& s) {
  close(s.go_other);
  char go = 0;
  ssize_t n;
  while ((n = read(s.go_fd, &go, 1)) < 0 && errno == EINTR) {
  }
  close(s.go_fd);
  return !s.dies_with_parent || n == 1;
}

}  // namespace

void ExecChild(const ProcessSpec& p, const std::string& path, const ExecStart& s) {
  if (s.dies_with_parent &&
      (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != s.parent ||
       (s.parent_socket >= 0 && sys::PeerClosed(s.parent_socket)))) {
    _exit(kExitRefused);
  }
  if (s.go_fd >= 0 && !AwaitGo(s)) _exit(kExitRefused);
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // A terminal on stdin is the workload's own pty (supervise/stdio.h): its controlling one.
  if (setsid() < 0 || (isatty(0) && ioctl(0, TIOCSCTTY, 0) < 0)) {
    Failed(s.err_fd, errno, ErrorKind::kSetup);
  }
  // A refusal of the cwd that has no errno is ELOOP.
  if (auto t = TakeOn(p); !t) {
    Failed(s.err_fd, t.error().err ? t.error().err : ELOOP, t.error().kind);
  }
  Error e = Exec(p, path);
  Failed(s.err_fd, e.op == "seccomp" ? -e.err : e.err, e.kind);
}

}  // namespace brig::container
