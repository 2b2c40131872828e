// brig init, pid 1 inside the sandbox. Everything here runs in the cloned child: errors go
// back to the supervisor over the sync socket and end in _exit, never in a return to main.
#include "container/init.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "brig/exit.h"
#include "container/command.h"
#include "container/exec_child.h"
#include "container/process.h"
#include "container/sync.h"
#include "fs/rootfs.h"
#include "log/log.h"
#include "net/loopback.h"
#include "security/caps.h"
#include "security/ucounts.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"

namespace brig::container {
namespace {

char* g_args_begin = nullptr;
char* g_args_end = nullptr;

// Signals init forwards to the workload. SIGCHLD is init's own.
constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH,
                              SIGCONT, SIGALRM};

// The sandbox user, as init is from the id map on and the workload is: no supplementary
// groups (the supervisor dropped its own before the clone, and setgroups is denied here,
// session.cc's WriteIdMaps).
security::Credentials SandboxUser() {
  security::Credentials c;
  c.uid = config::kSandboxUid;
  c.gid = config::kSandboxGid;
  return c;
}

// Init builds the sandbox as the sandbox user, since what it makes there needs an owner the
// namespace maps (host uid 0 is not mapped), and with every capability a new user
// namespace gave it.
security::Credentials Builder() {
  security::Credentials c = SandboxUser();
  c.caps.bounding = c.caps.effective = c.caps.permitted = security::kEveryCapability;
  return c;
}

// Every capability set emptied and no_new_privs, before the workload is forked, so that it
// inherits nothing to drop; its rlimits are its own (ExecChild). Init stays not dumpable
// (ApplyCredentials): the workload, of the same uid, cannot ptrace it or read its /proc.
Status DropPrivileges() {
  security::Credentials c = SandboxUser();
  c.no_new_privs = true;
  return security::ApplyCredentials(c);
}

struct Workload {
  pid_t pid;
};

// Before the workload goes on: init lets go of fds 0-2 (the workload has its own copies
// now: the stdio relay's pipes or its pty, and its stdin; supervise/stdio.h), so it holds
// no write end that would keep the supervisor's relay open, and loads its own filter
// (which allows no other close). Every other fd that named a host object went
// before kReady (InitMain).
Status ReleaseHost(const InitArgs& a) {
  for (int fd = 0; fd <= 2; ++fd) close(fd);
  BRIG_TRY(security::LoadSeccomp(*a.init_filter));
  return {};
}

// What the workload's first function is given: ExecChild's arguments.
struct WorkloadStart {
  const ProcessSpec* p;
  const std::string* path;
  ExecStart start;
};

int RunWorkload(void* arg) {
  auto* w = static_cast<WorkloadStart*>(arg);
  ExecChild(*w->p, *w->path, w->start);
}

// The workload's stack until its execve (ExecChild's work, TakeOn's included).
constexpr size_t kWorkloadStack = 256 * 1024;

// Starts the workload, lets it go on once init holds nothing of the host and runs
// filtered, and waits until its execve succeeded (the error pipe closes) or failed.
//
// The workload shares init's memory until its execve (CLONE_VM, as vfork(2) and
// posix_spawn(3) do), on a stack of its own: no copy of init's page tables is made, nor
// torn down again at the execve, about half a millisecond of every start. Nothing else is
// shared (no CLONE_FILES, CLONE_SIGHAND or CLONE_THREAD): each closes its own fds, and the
// workload's signal handlers, credentials, rlimits and filter are its own. The two never
// run brig code that writes shared memory at once: until the go the workload only waits
// in read(2), and from the go on init only waits in read(2) for the execve. What init
// does before the go (close its stdio, load its filter) allocates nothing, and the errors
// it may report are made before the clone.
Result<Workload> StartWorkload(const InitArgs& a, const std::string& path) {
  ProcessSpec p = WorkloadOf(*a.sandbox);
  // The program alone: not the policy text it was compiled from (32 KB for the default),
  // which only the manifest reads.
  p.seccomp = security::SeccompProgram{a.seccomp->insns, a.seccomp->flags, {}};
  sys::FdPair errors = BRIG_TRY(sys::FdPair::Pipe(true, "exec errors"));
  sys::FdPair go = BRIG_TRY(sys::FdPair::Pipe(false, "start"));
  sys::UniqueFd rd = errors.TakeParentEnd(), wr = errors.TakeChildEnd();
  sys::UniqueFd go_wr = go.TakeParentEnd(), go_rd = go.TakeChildEnd();
  Error exec_failed = SysError("execve", a.sandbox->argv[0]);
  Error seccomp_failed = SysError("seccomp", "load filter");
  void* stack = mmap(nullptr, kWorkloadStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return SysError("mmap", "the workload's stack");
  WorkloadStart start{&p, &path, {go_rd.get(), go_wr.get(), wr.get(), false, 0}};
  pid_t pid =
      clone(RunWorkload, static_cast<char*>(stack) + kWorkloadStack, CLONE_VM | SIGCHLD, &start);
  if (pid < 0) return SysError("clone", "workload");
  wr.Reset();
  go_rd.Reset();
  if (auto s = ReleaseHost(a); !s) return std::move(s).error().Wrap("brig init");
  go_wr.Reset();
  if (std::optional<int> failed = sys::ReadExecError(rd.get())) {
    int e = *failed;
    // The workload failed before or at execve; reap it so its status is not reported too.
    waitpid(pid, nullptr, 0);
    if (e < 0) {
      seccomp_failed.err = -e;
      return seccomp_failed;
    }
    exec_failed.err = e;
    exec_failed.kind = ExecErrorKind(e);
    return exec_failed;
  }
  return Workload{pid};
}

// Whether init relays `si` to the workload: only a signal from outside the sandbox (the
// supervisor's pidfd_send_signal, an operator's kill from the host). The kernel reports
// such a sender as pid 0, since it has no pid in this namespace, and SI_USER. A process
// inside is reported with its own pid; it can claim pid 0 only through rt_sigqueueinfo(2),
// and then only with a negative si_code (the kernel refuses SI_USER to another process).
bool FromOutside(const signalfd_siginfo& si) {
  return si.ssi_pid == 0 && si.ssi_code == SI_USER;
}

// Init's own exit status mirrors the workload's, for callers that only see init; the
// supervisor already has the precise status.
[[noreturn]] void ExitAs(int status) {
  if (WIFSIGNALED(status)) _exit(ExitCodeForSignal(WTERMSIG(status)));
  _exit(WEXITSTATUS(status));
}

// The command is gone, and the phase with it: every other process of the pid namespace is
// killed at once (kill(-1) spares only init itself) and reaped here, where each orphan
// ends up. Returns how many the SIGKILL ended as init reaps them: one that had already
// exited is not counted, nor one that its parent, waiting in wait4 as the SIGKILL reached
// both, reaped itself. Whatever slipped past would die with init anyway (the kernel ends
// its pid namespace).
uint32_t KillLeftovers() {
  if (kill(-1, SIGKILL) < 0) return 0;  // ESRCH: nothing was left
  uint32_t killed = 0;
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return killed;  // ECHILD: none left
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
  }
}

// Pid 1's loop: reap every child, forward the supervisor's signals to the workload (or, once
// it is gone, with --wait-all, to every process left), report the workload's status. Init
// exits when the workload does, having killed what it left (KillLeftovers), or with
// --wait-all when nothing is left.
[[noreturn]] void ReapAndForward(int sync_fd, int sigfd, pid_t workload, bool wait_all) {
  int workload_status = 0;
  bool workload_alive = true;
  for (;;) {
    struct signalfd_siginfo si;
    ssize_t n = read(sigfd, &si, sizeof si);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof si) _exit(125);
    if (si.ssi_signo != SIGCHLD) {
      if (FromOutside(si)) kill(workload_alive ? workload : -1, static_cast<int>(si.ssi_signo));
      continue;
    }
    for (;;) {
      int status;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid == 0) break;
      if (pid < 0) ExitAs(workload_status);  // ECHILD: the phase is over
      if (pid != workload) continue;
      workload_alive = false;
      workload_status = status;
      (void)SendWorkloadExit(sync_fd, status, wait_all ? 0 : KillLeftovers());
      if (!wait_all) ExitAs(status);
    }
  }
}

Status Setup(const InitArgs& a) {
  BRIG_TRY(StartAsBrigsChild(a.sync_fd));
  // Into the v1 groups at once (the clone put it into the v2 one), before the workload
  // exists and before the cgroup namespace below.
  BRIG_TRY(cgroup::JoinV1(*a.cgroup_tasks));
  security::Credentials builder = Builder();
  BRIG_TRY_CTX(TakeIdsFromMap(a.sync_fd, &builder), "user");
  log::Debug("user: uid ", config::kSandboxUid, " gid ", config::kSandboxGid);
  BRIG_TRY_CTX(net::BringUpLoopback(), "network");
  log::Debug("network: loopback up");
  if (a.address) {
    // The supervisor made eth0 here before it sent kIdMapDone. No IPv6: brig's rules
    // would drop it anyway, so the sandbox does not try.
    // (Only "all": the sandbox cannot make another interface.)
    BRIG_TRY_CTX(util::WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1"), "network");
    BRIG_TRY_CTX(net::ConfigureSandboxSide(a.address->addr, a.address->subnet), "network");
    log::Debug("network: eth0 configured");
  }
  // While the host's /proc is still here and init holds CAP_SYS_RESOURCE in its namespace.
  BRIG_TRY_CTX(security::CapUserCounts(a.sandbox->user_counts), "user counts");
  log::Debug("user counts capped");
  BRIG_TRY_CTX(fs::EnterNewRoot(*a.plan), "filesystem");
  if (sethostname("sandbox", 7) < 0) return SysError("sethostname", "sandbox");
  log::Debug("hostname: sandbox");
  // Init joined its v1 groups after the clone made the cgroup namespace; a second one roots
  // those too, so the sandbox sees "/" in every hierarchy.
  if (unshare(CLONE_NEWCGROUP) < 0) return SysError("unshare", "cgroup namespace");
  log::Debug("a cgroup namespace of its own");
  BRIG_TRY_CTX(DropPrivileges(), "privileges");
  log::Debug("capabilities dropped, no_new_privs set");
  return {};
}

}  // namespace

Status StartAsBrigsChild(int sync_fd) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_PDEATHSIG");
  if (sys::PeerClosed(sync_fd)) _exit(125);
  // Without root brig runs as the caller's own uid and must open init's /proc files to
  // write its id maps, which a process that is not dumpable keeps root's: init stays
  // dumpable until the maps are written (TakeIdsFromMap). Until then it is no more open
  // to the caller's processes than brig itself is.
  if (!util::Rootless() && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_DUMPABLE");
  }
  (void)prctl(PR_SET_NAME, "brig-init", 0, 0, 0);
  ScrubProcessArgs();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  return {};
}

Status TakeIdsFromMap(int sync_fd, const security::Credentials* ids) {
  BRIG_TRY(SendMessage(sync_fd, Msg::kNeedIdMap));
  BRIG_TRY_CTX(Expect(sync_fd, Msg::kIdMapDone, kSetupStepTimeoutMs), "wait for id map");
  log::Debug("id map written by the parent");
  if (util::Rootless() && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_DUMPABLE");
  }
  if (!ids) return {};
  BRIG_TRY(security::ApplyCredentials(*ids));
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return SysError("prctl", "PR_SET_PDEATHSIG");
  return {};
}

void ScrubProcessArgs() {
  if (g_args_begin == nullptr) return;
  memset(g_args_begin, 0, static_cast<size_t>(g_args_end - g_args_begin));
  strncpy(g_args_begin, "brig-init", static_cast<size_t>(g_args_end - g_args_begin) - 1);
}

void RecordProcessArgs(int argc, char** argv) {
  if (argc < 1) return;
  g_args_begin = argv[0];
  char* end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
  for (char** e = environ; e && *e; ++e) {
    if (*e == end) end = *e + strlen(*e) + 1;
  }
  g_args_end = end;
}

void InitMain(const InitArgs& a) {
  int fd = a.sync_fd;
  ForwardLogs(fd);
  log::Debug("started");
  // A session of its own, off the caller's terminal: what that terminal sends its
  // foreground group (^C's SIGINT) reaches brig, which passes it on, and not init as well,
  // where the kernel's copy (not FromOutside) would take brig's place in the one pending
  // slot and never be forwarded.
  if (setsid() < 0) SendErrorAndExit(fd, SysError("setsid").Wrap("container init"));
  if (auto s = Setup(a); !s) SendErrorAndExit(fd, std::move(s).error().Wrap("container init"));
  auto path = ResolveCommand(a.sandbox->argv[0], a.sandbox->env, a.sandbox->workdir);
  if (!path) SendErrorAndExit(fd, std::move(path).error());
  log::Debug("command: ", *path);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (int s : kForwarded) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (sigfd < 0) SendErrorAndExit(fd, SysError("signalfd").Wrap("container init"));
  // Whatever init holds of the supervisor's goes now: the cgroup's, the record's and the
  // mount plan's fds, listeners, the supervisor's signalfd (runc CVE-2024-21626). Fds 0-2
  // stay for the workload until it is forked.
  if (auto s = sys::CloseAllExcept({0, 1, 2, fd, sigfd}); !s) {
    SendErrorAndExit(fd, std::move(s).error().Wrap("container init"));
  }

  log::Debug("ready; the workload's seccomp filter loads last, in the workload");
  StopForwardingLogs();
  if (auto s = SendMessage(fd, Msg::kReady); !s) _exit(125);
  if (!Expect(fd, Msg::kStart, kSetupStepTimeoutMs)) _exit(125);
  auto w = StartWorkload(a, *path);
  if (!w) SendErrorAndExit(fd, std::move(w).error());
  ReapAndForward(fd, sigfd, w->pid, a.sandbox->wait_all);
}

}  // namespace brig::container
