// The stage child's steps and the parent's wait for them (join.h draws the order).
#include "container/join.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>


#include "container/init.h"
#include "sys/child.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

[[noreturn]] void JoinAndFork(const JoinTarget& t, const JoinedProcess& p, int sync_fd) {
  // brig's own binary is about to enter the target's namespaces: the first steps of every
  // process brig clones there (not dumpable, its command line scrubbed).
  if (auto s = StartAsBrigsChild(sync_fd); !s) SendErrorAndExit(sync_fd, std::move(s).error());
  if (p.in_stage) p.in_stage();
  // Before the target's cgroup namespace, and before the process is forked.
  if (auto s = cgroup::JoinV1(t.cgroup_v1); !s) SendErrorAndExit(sync_fd, std::move(s).error());
  if (setns(t.pidfd, t.namespaces) < 0) {
    SendErrorAndExit(sync_fd, SysError("setns", "the namespaces joined"));
  }
  // Every descriptor of brig's goes before anything is resolved inside: the cgroup
  // directories (CLONE_INTO_CGROUP's and the v1 tasks files), the target's pidfd, brig's
  // log, the record. A process holding one starts where /proc/self/fd/N reaches the host
  // (runc CVE-2024-21626). What the front end names stays.
  std::vector<int> keep = p.keep;
  keep.push_back(sync_fd);
  if (auto s = sys::CloseAllExcept(std::move(keep), p.keep_below); !s) {
    SendErrorAndExit(sync_fd, std::move(s).error().Wrap("exec"));
  }
  // The process says nothing before this child has told its pid: a word of its own (its
  // listener, its failure) always comes after kPid. It waits for the gate to close.
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) < 0) SendErrorAndExit(sync_fd, SysError("pipe", "exec"));
  pid_t pid = fork();
  if (pid < 0) SendErrorAndExit(sync_fd, SysError("fork", "exec"));
  if (pid == 0) {
    close(gate[1]);
    char c;
    while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
    }
    close(gate[0]);
    p.become(sync_fd);
    _exit(125);
  }
  close(gate[0]);
  if (!SendMessage(sync_fd, Msg::kPid, 0, std::to_string(pid))) _exit(125);
  close(gate[1]);
  // Held until brig has the process's pidfd, then killed: while this stage child lives,
  // the process is its child, so one that ends at once stays a zombie that nothing else
  // reaps and whose pid nobody else gets. Once it went, an engine's shim (the subreaper
  // above a detached exec) reaped such a process before brig opened it.
  for (;;) pause();
}

}  // namespace

Result<Joined> Join(const JoinTarget& t, const JoinedProcess& p) {
  BRIG_TRY(sys::DropSupplementaryGroups());
  if (p.adopt) BRIG_TRY(sys::BecomeSubreaper());
  auto [channel, child_end] = BRIG_TRY(Channel::Open(Flow::kExec, "exec"));
  Joined j;
  j.sync = std::move(channel);
  int pidfd = -1;
  pid_t pid = BRIG_TRY_CTX(sys::Clone3(sys::CloneArgs::Held(0, &pidfd, t.cgroup_v2)), "exec");
  if (pid == 0) {
    j.sync = Channel();
    JoinAndFork(t, p, child_end.get());
  }
  child_end.Reset();
  // The stage child's kPid, then the process's pidfd, then the stage child is killed
  // and reaped, as one that fails or goes silent is when it goes out of scope.
  sys::Child stage(pid, sys::UniqueFd(pidfd));
  j.sync.Track(stage.pidfd());
  Message m = BRIG_TRY(j.sync.Next());
  j.pid = BRIG_TRY(ReportedPid(m));
  j.pidfd = BRIG_TRY_CTX(sys::PidfdOpen(j.pid, "the process"), "exec");
  stage.KillAndReap();
  j.sync.Track(j.pidfd.get());
  return j;
}

}  // namespace brig::container
