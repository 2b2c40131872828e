// A profile without isolation (ISOLATION_NONE): the command runs as brig's own child, in
// the host's namespaces, with the timeout, signals, cgroup limits, output relay and result
// still brig's. The rest of the session (prepare, serve, collect) is session.cc's.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "container/command.h"
#include "container/exec_child.h"
#include "container/process.h"
#include "container/session.h"
#include "log/log.h"
#include "sys/syscalls.h"

namespace brig::container {

bool Session::LaunchUnconfined() {
  // The command runs from the workspace, so it is looked up from there.
  auto path = ResolveCommand(sb_.argv[0], sb_.env, sb_.workdir);
  if (!path) return Failed(std::move(path).error());
  ProcessSpec process = WorkloadOf(sb_);
  auto errors = sys::FdPair::Pipe(true, "exec errors");
  if (!errors) return Failed(std::move(errors).error());
  auto go = sys::FdPair::Pipe(false, "start");
  if (!go) return Failed(std::move(go).error());
  sys::UniqueFd err_rd = errors->TakeParentEnd(), err_wr = errors->TakeChildEnd();
  sys::UniqueFd go_wr = go->TakeParentEnd(), go_rd = go->TakeChildEnd();
  int pidfd = -1;
  pid_t supervisor = getpid();
  auto pid = sys::Clone3(sys::CloneArgs::Held(0, &pidfd, group_->v2_fd()));
  if (!pid) return Failed(std::move(pid).error());
  if (*pid == 0) {
    stdio_->ApplyInChild();
    ExecChild(process, *path, {go_rd.get(), go_wr.get(), err_wr.get(), true, supervisor});
  }
  child_ = sys::Child(*pid, sys::UniqueFd(pidfd));
  log::Debug("clone: unconfined command is pid ", *pid);
  err_wr.Reset();
  go_rd.Reset();
  if (auto s = stdio_->Started(); !s) return Failed(std::move(s).error());
  // It waits until brig has put it into its v1 groups.
  if (auto s = group_->AttachV1(*pid); !s) return Failed(std::move(s).error());
  if (write(go_wr.get(), "g", 1) != 1) return Failed(SysError("write", "start pipe"));
  go_wr.Reset();
  if (std::optional<int> e = sys::ReadExecError(err_rd.get())) {
    errno = *e;
    return Failed(SysError("execve", sb_.argv[0])
                      .WithKind(ExecErrorKind(*e)));
  }
  started_workload_ = true;
  return true;
}

// The command is gone. What it left behind ends with the phase: its cgroup's processes, or
// else its process group's (its pid is still held by the unreaped zombie here, so the
// group cannot be another's).
void Session::OnUnconfinedGone() {
  if (!group_->Kill()) (void)kill(-child_.pid(), SIGKILL);
  auto exit = child_.Reap();
  if (!exit) return (void)Failed(std::move(exit).error());
  out_.usage = exit->usage;
  const siginfo_t& si = exit->info;
  out_.workload_status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
                                                  : si.si_status & 0x7f;
}

}  // namespace brig::container
