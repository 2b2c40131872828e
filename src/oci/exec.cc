// `brig exec` (exec.h). brig clones a child into the container's v2 group, which joins its
// v1 groups itself (cgroup/groups.h) and the container's namespaces through its process's
// pidfd (setns(2) with every namespace at once); since a pid namespace is entered only by
// children, that child forks the process, reports its pid and exits.
//
//   brig exec                          child                           process
//   clone3(CLONE_INTO_CGROUP) ───────▶ "0" to each v1 tasks file
//                                      setns(pidfd, namespaces)
//                                      fork ──────────────────────────▶ setsid, terminal,
//                  ◀── kPid {pid}      exits                            credentials, seccomp,
//                  ◀── kError, or EOF at execve                         execve
#include "oci/exec.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "brig/exit.h"
#include "container/init.h"
#include "container/sync.h"
#include "oci/cgroups.h"
#include "oci/launch.h"
#include "oci/process.h"
#include "oci/spec.h"
#include "oci/state.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::oci {
namespace {

using container::Msg;
using container::SendErrorAndExit;

Status ParseUser(const std::string& user, Process& p) {
  size_t colon = user.find(':');
  auto num = [&](const std::string& s) -> Result<uint32_t> {
    char* end = nullptr;
    errno = 0;
    unsigned long v = strtoul(s.c_str(), &end, 10);
    if (s.empty() || *end || errno || v > UINT32_MAX) {
      return BadInput("--user", user, "expected UID[:GID], numbers");
    }
    return static_cast<uint32_t>(v);
  };
  p.mutable_user()->set_uid(BRIG_TRY(num(user.substr(0, colon))));
  if (colon != std::string::npos) p.mutable_user()->set_gid(BRIG_TRY(num(user.substr(colon + 1))));
  return {};
}

// The process itself, in the container's namespaces: never returns.
[[noreturn]] void BecomeProcess(const PreparedProcess& p, bool terminal,
                                const ConsoleSize& size, int console_fd, int sync_fd,
                                int preserve_fds) {
  if (setsid() < 0) SendErrorAndExit(sync_fd, SysError("setsid"));
  if (terminal) {
    if (auto s = SetupConsole(console_fd, size, false); !s) SendErrorAndExit(sync_fd, s.error());
  }
  // Before the credentials, whose seccomp filter (without no_new_privileges) may refuse
  // fcntl. Only the sync socket is left above them, and it goes at execve.
  for (int i = 0; i < preserve_fds; ++i) (void)fcntl(3 + i, F_SETFD, 0);
  if (terminal) close(console_fd);
  if (auto s = ApplyCredentials(p); !s) {
    SendErrorAndExit(sync_fd, std::move(s).error().Wrap("exec"));
  }
  auto path = ResolveExecutable(p);
  if (!path) SendErrorAndExit(sync_fd, std::move(path).error());
  if (auto s = ApplyLastSteps(p); !s) SendErrorAndExit(sync_fd, s.error());
  SendErrorAndExit(sync_fd, Exec(*path, p));
}

[[noreturn]] void JoinAndFork(int pidfd, int ns_flags, const PreparedProcess& p, bool terminal,
                              const ConsoleSize& size, int console_fd, int sync_fd,
                              int preserve_fds, const std::vector<cgroup::TasksFile>& tasks) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // brig's own binary is about to enter the container's namespaces: none of its processes
  // may ptrace it or open it through /proc/PID/exe until execve (runc CVE-2019-5736).
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
    SendErrorAndExit(sync_fd, SysError("prctl", "PR_SET_DUMPABLE"));
  }
  // Nor its command line, which /proc/PID/cmdline shows without ptrace access.
  container::ScrubProcessArgs();
  // Before the container's cgroup namespace, and before the process is forked.
  if (auto s = cgroup::JoinV1(tasks); !s) SendErrorAndExit(sync_fd, std::move(s).error());
  if (setns(pidfd, ns_flags) < 0) {
    SendErrorAndExit(sync_fd, SysError("setns", "the container's namespaces"));
  }
  // Every descriptor of brig's goes before anything is resolved in the container: the
  // container's cgroup directories (CLONE_INTO_CGROUP's and the v1 tasks files), its
  // process's pidfd, brig's log. A process holding one starts where a container's
  // /proc/self/fd/N reaches the host (runc CVE-2024-21626). What --preserve-fds hands over
  // stays.
  if (auto s = sys::CloseAllExcept({sync_fd, console_fd}, 3 + preserve_fds); !s) {
    SendErrorAndExit(sync_fd, std::move(s).error().Wrap("exec"));
  }
  pid_t pid = fork();
  if (pid < 0) SendErrorAndExit(sync_fd, SysError("fork", "exec"));
  if (pid == 0) BecomeProcess(p, terminal, size, console_fd, sync_fd, preserve_fds);
  _exit(container::SendMessage(sync_fd, Msg::kPid, 0, std::to_string(pid)) ? 0 : 125);
}

// The exec's side of the order drawn above, each step within a setup step's time: the
// child's kPid (the child is reaped), then EOF at the process's execve. Returns the
// process's host pid. A process that fails or goes silent before its command is reaped
// unless `detach` (its parent is then brig's child, which has exited).
Result<pid_t> AwaitProcess(int sync, pid_t child, bool detach) {
  container::SyncSequence seq(container::Flow::kExec);
  auto m = container::RecvMessage(sync, container::kSetupStepTimeoutMs);
  if (!m) kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (!m) return std::move(m).error().Wrap("exec");
  BRIG_TRY(seq.Accept(m->type));
  if (m->type == Msg::kError) return container::DecodeError(*m);
  pid_t pid = static_cast<pid_t>(std::strtol(m->payload.c_str(), nullptr, 10));
  m = container::RecvMessage(sync, container::kSetupStepTimeoutMs);
  if (!m && m.error().detail == container::kPeerClosed) return pid;
  Error e = m ? container::DecodeError(*m) : std::move(m).error().Wrap("exec");
  if (m) BRIG_TRY(seq.Accept(m->type));
  // The process never got to its command: it is brig's still, and goes.
  if (!m) kill(pid, SIGKILL);
  if (!detach) waitpid(pid, nullptr, 0);
  return e;
}

}  // namespace

Result<Process> ExecProcess(const ExecOptions& o, const Process& base) {
  Process p;
  if (!o.process_file.empty()) {
    std::string text = BRIG_TRY(util::ReadUserFile(o.process_file));
    p = BRIG_TRY(ParseProcess(text, o.process_file));
  } else {
    if (o.args.empty()) return BadInput("brig exec", o.id, "no command given");
    p.set_cwd(o.cwd.empty() ? base.cwd() : o.cwd);
    // --env replaces a variable config.json sets, as runc's last value wins.
    std::vector<std::string> env(base.env().begin(), base.env().end());
    for (const std::string& e : o.env) {
      std::string key = e.substr(0, e.find('=') + 1);
      std::erase_if(env, [&](const std::string& old) { return old.rfind(key, 0) == 0; });
      env.push_back(e);
    }
    for (const std::string& e : env) p.add_env(e);
    *p.mutable_user() = base.user();
    if (!o.user.empty()) {
      p.mutable_user()->clear_additional_gids();
      BRIG_TRY(ParseUser(o.user, p));
    }
    for (uint32_t g : o.additional_gids) p.mutable_user()->add_additional_gids(g);
    if (base.has_capabilities()) *p.mutable_capabilities() = base.capabilities();
    for (const std::string& c : o.caps) {
      Capabilities* caps = p.mutable_capabilities();
      for (auto* set : {caps->mutable_bounding(), caps->mutable_effective(),
                        caps->mutable_permitted()}) {
        set->Add(std::string(c));
      }
    }
    *p.mutable_rlimits() = base.rlimits();
    p.set_no_new_privileges(base.no_new_privileges() || o.no_new_privs);
    if (base.has_oom_score_adj()) p.set_oom_score_adj(base.oom_score_adj());
    for (const std::string& a : o.args) p.add_args(a);
  }
  if (o.tty) p.set_terminal(true);
  return p;
}

Result<int> Exec(const ExecOptions& o) {
  BRIG_TRY(CheckId(o.id));
  BRIG_TRY(CheckPreserved(o.preserve_fds));
  int ns_flags = 0;
  Container rec;
  std::unique_ptr<cgroup::Groups> cg;
  std::optional<sys::UniqueFd> pidfd;
  {
    // The lock is held only while the container is looked at: an attached exec may last,
    // and the engine must still be able to kill or delete the container meanwhile.
    ContainerDir dir = BRIG_TRY(ContainerDir::Open(o.root, o.id));
    rec = BRIG_TRY(dir.Read());
    cg = CgroupsOf(rec);
    ContainerStatus st = StatusOf(rec, cg->Frozen());
    if (st != ContainerStatus::kRunning && st != ContainerStatus::kCreated) {
      return BadInput("container", o.id,
                      "cannot exec in it (it is " + std::string(StatusName(st)) + ")");
    }
    pidfd = OpenProcess(rec);
    if (!pidfd) return Fail("exec", o.id, "container not running");
  }
  for (const Namespace& n : rec.config().linux().namespaces()) {
    if (std::optional<int> f = NamespaceFlag(n.type())) ns_flags |= *f;
  }
  Process p = BRIG_TRY(ExecProcess(o, rec.config().process()));
  std::optional<brig::v1::SeccompPolicy> policy;
  if (rec.config().linux().has_seccomp()) policy = rec.config().linux().seccomp();
  PreparedProcess prep = BRIG_TRY(PrepareProcess(p, policy));
  sys::UniqueFd console;
  if (p.terminal()) {
    if (o.console_socket.empty()) {
      return BadInput("--tty", "", "needs --console-socket to hand the terminal to");
    }
    console = BRIG_TRY(ConnectConsoleSocket(o.console_socket));
  }
  sys::FdPair sync = BRIG_TRY(sys::FdPair::SocketPair(SOCK_SEQPACKET, "exec"));
  sys::UniqueFd parent_end = sync.TakeParentEnd(), child_end = sync.TakeChildEnd();
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (!o.detach) {
    sigprocmask(SIG_BLOCK, &chld, &old);
    // The process is the child's child: it comes back to brig when the child exits.
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
      return SysError("prctl", "PR_SET_CHILD_SUBREAPER");
    }
  }
  std::vector<cgroup::TasksFile> tasks = BRIG_TRY(cg->OpenV1Tasks());
  sys::CloneArgs ca;
  ca.exit_signal = SIGCHLD;
  if (cg->v2_fd() >= 0) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup_fd = cg->v2_fd();
  }
  pid_t child = BRIG_TRY_CTX(sys::Clone3(ca), "exec");
  if (child == 0) {
    parent_end.Reset();
    JoinAndFork(pidfd->get(), ns_flags, prep, p.terminal(), p.console_size(), console.get(),
                child_end.get(), o.preserve_fds, tasks);
  }
  child_end.Reset();
  console.Reset();
  tasks.clear();
  pid_t pid = BRIG_TRY(AwaitProcess(parent_end.get(), child, o.detach));
  if (!o.pid_file.empty()) {
    BRIG_TRY_CTX(util::ReplaceFile(o.pid_file, std::to_string(pid)), "--pid-file");
  }
  if (o.detach) return 0;
  int status = WaitForwardingSignals(pid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return WIFSIGNALED(status) ? ExitCodeForSignal(WTERMSIG(status)) : WEXITSTATUS(status);
}

}  // namespace brig::oci
