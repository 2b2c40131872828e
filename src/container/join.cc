// The stage child's steps and the parent's wait for them (join.h draws the order).
#include "container/join.h"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "container/init.h"
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
  pid_t pid = fork();
  if (pid < 0) SendErrorAndExit(sync_fd, SysError("fork", "exec"));
  if (pid == 0) {
    p.become(sync_fd);
    _exit(125);
  }
  _exit(SendMessage(sync_fd, Msg::kPid, 0, std::to_string(pid)) ? 0 : 125);
}

}  // namespace

Result<Joined> Join(const JoinTarget& t, const JoinedProcess& p) {
  sys::FdPair pair = BRIG_TRY(sys::FdPair::SocketPair(SOCK_SEQPACKET, "exec"));
  Joined j;
  j.sync = pair.TakeParentEnd();
  sys::UniqueFd child_end = pair.TakeChildEnd();
  sys::CloneArgs ca;
  ca.exit_signal = SIGCHLD;
  if (t.cgroup_v2 >= 0) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup_fd = t.cgroup_v2;
  }
  pid_t child = BRIG_TRY_CTX(sys::Clone3(ca), "exec");
  if (child == 0) {
    j.sync.Reset();
    JoinAndFork(t, p, child_end.get());
  }
  child_end.Reset();
  // The stage child's kPid, then it is reaped: a silent one is killed first.
  auto m = RecvMessage(j.sync.get(), kSetupStepTimeoutMs);
  if (!m) kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (!m) return std::move(m).error().Wrap("exec");
  BRIG_TRY(j.seq.Accept(m->type));
  if (m->type == Msg::kError) return DecodeError(*m);
  j.pid = static_cast<pid_t>(std::strtol(m->payload.c_str(), nullptr, 10));
  if (j.pid <= 0) return Fail("sync", m->payload, "not a pid", ErrorKind::kInternal);
  j.pidfd = BRIG_TRY_CTX(sys::PidfdOpen(j.pid, "the process"), "exec");
  return j;
}

Status AwaitExecve(Joined& j) {
  auto m = RecvMessage(j.sync.get(), kSetupStepTimeoutMs);
  if (!m && m.error().detail == kPeerClosed) return {};
  if (!m) {
    // A process that failed and went with a word of brig's unread (kStart) resets the
    // socket (ECONNRESET): what it said before it went is still queued.
    Error lost = std::move(m).error().Wrap("exec");
    std::optional<Error> why = WhyInitIsGone(j.sync.get(), j.pidfd.get(), lost);
    return why ? std::move(*why) : std::move(lost);
  }
  BRIG_TRY(j.seq.Accept(m->type));
  return DecodeError(*m);
}

}  // namespace brig::container
