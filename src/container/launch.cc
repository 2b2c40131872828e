// Parent side of `brig run`. Everything that can be refused is checked before clone3; after
// it, every path ends in reaping brig init, so no process of the sandbox survives brig.
#include "container/launch.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "container/command.h"
#include "container/init.h"
#include "container/sync.h"
#include "fs/mount_plan.h"
#include "security/caps.h"
#include "security/init_filter.h"
#include "security/seccomp_cache.h"
#include "audit/audit.h"
#include "broker/listen.h"
#include "broker/service.h"
#include "egress/service.h"
#include "fs/export.h"
#include "net/network.h"
#include "state/record.h"
#include "supervise/loop.h"
#include "supervise/stdio.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

constexpr uint64_t kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                 CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
// How long brig waits for each setup step of init before giving up.
constexpr int kSetupStepTimeoutMs = 30000;

Status WriteProcFile(pid_t pid, const char* name, const std::string& data) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  sys::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  if (write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return SysError("write", path);
  }
  return {};
}

// Maps the sandbox user to the workspace owner. One id each, never host 0. setgroups(2)
// is denied first (it must be, before gid_map): nothing inside can drop a group to get
// past a file's group-deny permissions. Init came without supplementary groups (Run).
Status WriteIdMaps(pid_t pid, const config::Sandbox& sb) {
  if (sb.host_uid == 0 || sb.host_gid == 0) {
    return Fail("id map", "", "refusing to map host root", ErrorKind::kInternal);
  }
  BRIG_TRY(WriteProcFile(pid, "uid_map",
                         std::to_string(config::kSandboxUid) + " " + std::to_string(sb.host_uid) +
                             " 1\n"));
  BRIG_TRY(WriteProcFile(pid, "setgroups", "deny"));
  return WriteProcFile(pid, "gid_map",
                       std::to_string(config::kSandboxGid) + " " + std::to_string(sb.host_gid) +
                           " 1\n");
}

// Kills and reaps init after a failure in the parent half of the handshake.
void Abort(int pidfd) {
  (void)sys::PidfdSendSignal(pidfd, SIGKILL);
  siginfo_t si;
  (void)syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, nullptr);
}

// A step of the handshake failed with `e`: if init is gone, what it said (or how it
// ended) is the outcome to report; otherwise `e` is brig's own failure.
Result<std::optional<Error>> InitOrOwn(int sync_fd, int pidfd, Error e) {
  if (std::optional<Error> why = WhyInitIsGone(sync_fd, pidfd, e)) return why;
  return e;
}

// The handshake up to Ready (sync.h). Returns an Error reported by init, if any.
Result<std::optional<Error>> Handshake(int sync_fd, int pidfd, pid_t pid,
                                       const config::Sandbox& sb, cgroup::Group& group,
                                       net::SandboxNet* net, SyncSequence& seq) {
  for (;;) {
    auto m = RecvMessage(sync_fd, kSetupStepTimeoutMs);
    if (!m) return InitOrOwn(sync_fd, pidfd, std::move(m).error().Wrap("brig init"));
    BRIG_TRY(seq.Accept(m->type));
    switch (m->type) {
      case Msg::kNeedIdMap:
        BRIG_TRY(WriteIdMaps(pid, sb));
        if (net) BRIG_TRY(net->Attach(pid));
        if (auto s = SendMessage(sync_fd, Msg::kIdMapDone); !s) {
          return InitOrOwn(sync_fd, pidfd, std::move(s).error());
        }
        // While init sets itself up. It waits for kGroupsJoined before it drops its
        // privileges, so it is in every group before the workload exists. Init may have
        // failed meanwhile (a dead process cannot be moved, a send meets a broken pipe):
        // then its word is the outcome.
        if (auto s = group.AttachV1(pid); !s) {
          return InitOrOwn(sync_fd, pidfd, std::move(s).error());
        }
        if (auto s = SendMessage(sync_fd, Msg::kGroupsJoined); !s) {
          return InitOrOwn(sync_fd, pidfd, std::move(s).error());
        }
        break;
      case Msg::kReady:
        return std::optional<Error>();
      case Msg::kError:
        return std::optional<Error>(DecodeError(*m));
      default:
        return Fail("sync", std::string(MsgName(m->type)), "unexpected", ErrorKind::kInternal);
    }
  }
}

// Signals for the supervisor arrive through a signalfd; blocking them before clone also
// keeps a signal from interrupting clone3 (nsjail #168).
Result<sys::UniqueFd> SupervisorSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) < 0) return SysError("sigprocmask");
  sys::UniqueFd sigfd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) return SysError("signalfd");
  return sigfd;
}

// The sandbox's groups, made before clone so the limits hold from its first instruction.
Result<std::unique_ptr<cgroup::Group>> MakeGroup(const config::Sandbox& sb,
                                                 state::Record& record) {
  return cgroup::Group::Create(sb.cgroup_layout, sb.cgroup_plan, sb.id, sb.limits, record);
}

void IntoGroup(sys::CloneArgs& ca, const cgroup::Group& group) {
  if (group.v2_fd() < 0) return;
  ca.flags |= CLONE_INTO_CGROUP;
  ca.cgroup_fd = group.v2_fd();
}

// The brokers serve from before the workload's first instruction; their TCP ports are made
// in the sandbox's network namespace now that init has brought loopback up.
Result<std::unique_ptr<broker::Service>> StartBrokers(const config::Sandbox& sb, pid_t pid,
                                                      broker::Listeners listeners,
                                                      broker::AuditSink audit) {
  BRIG_TRY_CTX(broker::ListenTcp(sb.brokers, pid, listeners), "brokers");
  return broker::Service::Start(sb.brokers, std::move(listeners),
                                sb.id + "/" + std::to_string(sb.attempt), std::move(audit));
}

// Once no process of the sandbox is left: what the cgroup saw, then the cgroup goes (or,
// if it stays busy, is left to brig gc: `keep_record`).
Outcome FromLoop(supervise::LoopOutput&& lo, std::chrono::steady_clock::time_point started,
                 cgroup::Group& group, bool& keep_record) {
  Outcome out;
  out.oom_killed = lo.oom_event || group.OomKilled();
  out.cgroup_usage = group.ReadUsage();
  if (auto s = group.Remove(); !s) {
    fprintf(stderr, "brig: %s (brig gc removes what is left)\n", s.error().Render().c_str());
    keep_record = true;
  }
  out.workload_status = lo.workload_status;
  out.error = std::move(lo.error);
  out.timed_out = lo.timed_out;
  out.killed_for_signal = lo.killed_for_signal;
  out.init_signal = lo.init_signal;
  out.usage = lo.usage;
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

[[noreturn]] void ExecUnconfined(const config::Sandbox& sb, const std::string& path,
                                 pid_t supervisor, int go_fd, int err_fd, char* const* argv,
                                 char* const* envp) {
  // The workload dies with brig, as a sandbox's init does (what it leaves behind ends
  // with the cgroup).
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != supervisor) _exit(125);
  // Wait until brig has put this process into its v1 groups.
  char go = 0;
  if (read(go_fd, &go, 1) != 1) _exit(125);
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int e = 0;
  // A terminal on stdin is the workload's own pty (supervise/stdio.h): its controlling one.
  if (setsid() < 0 || (isatty(0) && ioctl(0, TIOCSCTTY, 0) < 0) || !sys::CloseRangeCloexec(3) ||
      !security::ApplyRlimits(sb.rlimits) ||
      (!sb.fs.workspace.empty() && chdir(sb.fs.workspace.c_str()) < 0)) {
    e = errno;
  } else {
    execve(path.c_str(), argv, envp);
    e = errno;
  }
  (void)!write(err_fd, &e, sizeof e);
  _exit(e == ENOENT ? 127 : 126);
}

// Profile none: the command runs as brig's own child, in the host's namespaces, with the
// timeout, signals and result still brig's.
Result<Outcome> RunUnconfined(const config::Sandbox& sb,
                              std::chrono::steady_clock::time_point started) {
  Outcome out;
  // The command runs from the workspace, so a relative path means one inside it.
  std::string cmd = sb.argv[0];
  if (!sb.fs.workspace.empty() && cmd[0] != '/' && cmd.find('/') != std::string::npos) {
    cmd = sb.fs.workspace + "/" + cmd;
  }
  auto path = ResolveCommand(cmd, sb.env);
  if (!path) {
    out.error = std::move(path).error();
    return out;
  }
  std::vector<char*> argv = ExecArray(sb.argv), envp = ExecArray(sb.env);
  // Signals are held from here on, so none ends brig between making the groups and
  // removing them.
  sys::UniqueFd sigfd = BRIG_TRY(SupervisorSignals());
  // Whatever the sandbox holds on the host is noted before it is made (brig gc).
  state::Record record = BRIG_TRY(state::Record::Create(state::kSandboxDir, sb.id));
  std::unique_ptr<cgroup::Group> group = BRIG_TRY(MakeGroup(sb, record));
  std::unique_ptr<supervise::Stdio> stdio = BRIG_TRY(supervise::Stdio::Prepare(sb.output_limit));
  int p[2], g[2];
  if (pipe2(p, O_CLOEXEC) < 0) return SysError("pipe2");
  sys::UniqueFd rd(p[0]), wr(p[1]);
  if (pipe2(g, O_CLOEXEC) < 0) return SysError("pipe2");
  sys::UniqueFd go_rd(g[0]), go_wr(g[1]);
  int pidfd_raw = -1;
  sys::CloneArgs ca;
  ca.flags = CLONE_PIDFD;
  ca.pidfd = &pidfd_raw;
  ca.exit_signal = SIGCHLD;
  IntoGroup(ca, *group);
  pid_t supervisor = getpid();
  pid_t pid = BRIG_TRY(sys::Clone3(ca));
  if (pid == 0) {
    stdio->ApplyInChild();
    ExecUnconfined(sb, *path, supervisor, go_rd.get(), wr.get(), argv.data(), envp.data());
  }
  sys::UniqueFd pidfd(pidfd_raw);
  wr.Reset();
  go_rd.Reset();
  if (auto s = stdio->Started(); !s) {
    Abort(pidfd.get());
    return std::move(s).error();
  }
  if (auto s = group->AttachV1(pid); !s) {
    Abort(pidfd.get());
    return std::move(s).error();
  }
  if (write(go_wr.get(), "g", 1) != 1) {
    Abort(pidfd.get());
    return SysError("write", "start pipe");
  }
  go_wr.Reset();
  if (std::optional<int> failed = sys::ReadExecError(rd.get())) {
    int e = *failed;
    Abort(pidfd.get());
    errno = e;
    out.error = SysError("execve", sb.argv[0])
                    .WithKind(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kNotExecutable);
    return out;
  }
  SyncSequence seq;
  supervise::LoopInput in{pidfd.get(), -1, sigfd.get(), started + sb.timeout, sb.grace, &seq,
                          pid, group.get()};
  in.extra_fds.push_back(stdio->fd());
  in.on_extra = [&](int) { stdio->Handle(); };
  auto lo = supervise::Supervise(in);
  if (!lo) {
    Abort(pidfd.get());
    return std::move(lo).error();
  }
  stdio->Drain();
  stdio->RestoreTerminal();
  bool keep_record = false;
  out = FromLoop(std::move(*lo), started, *group, keep_record);
  out.output = stdio->Summary();
  if (keep_record) record.Keep();
  return out;
}

}  // namespace

Result<Outcome> Run(const config::Sandbox& sb) {
  auto started = std::chrono::steady_clock::now();
  if (!sb.isolated) return RunUnconfined(sb, started);
  // Everything that can be refused is refused here, before any process exists.
  security::SeccompProgram seccomp = BRIG_TRY(
      security::CompileSeccompFile(sb.seccomp_policy, security::kSeccompCacheDir));
  security::SeccompProgram init_filter = BRIG_TRY(security::CompileInitFilter());
  // Signals are held from here on, so none ends brig between making something on the host
  // (placeholders, groups) and removing it.
  sys::UniqueFd sigfd = BRIG_TRY(SupervisorSignals());
  // Whatever the sandbox holds on the host is noted before it is made (brig gc).
  state::Record record = BRIG_TRY(state::Record::Create(state::kSandboxDir, sb.id));
  fs::MountPlan plan = BRIG_TRY_CTX(fs::PrepareMountPlan(sb.fs, record), "filesystem");
  // A broker's unix socket is bound now, so the plan can put it in the sandbox.
  broker::Listeners broker_listeners;
  if (!sb.brokers.empty()) {
    BRIG_TRY_CTX(broker::ListenUnix(sb.brokers, plan, broker_listeners), "brokers");
  }
  std::unique_ptr<cgroup::Group> group = BRIG_TRY(MakeGroup(sb, record));
  std::unique_ptr<net::SandboxNet> net;
  if (sb.network) net = BRIG_TRY(net::SandboxNet::Prepare(sb.id, *sb.network, record));
  std::unique_ptr<supervise::Stdio> stdio = BRIG_TRY(supervise::Stdio::Prepare(sb.output_limit));

  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    return SysError("socketpair");
  }
  sys::UniqueFd parent_end(sp[0]), child_end(sp[1]);

  // Init starts with the supervisor's credentials, and setgroups is denied in its user
  // namespace (WriteIdMaps): host root's supplementary groups (gid 0 among them) would
  // follow it and the workload for good. The supervisor, root, needs none of them. (Only
  // when it has some: where setgroups is itself denied, brig has none to drop.)
  if (getgroups(0, nullptr) != 0 && setgroups(0, nullptr) < 0) {
    return SysError("setgroups", "supervisor");
  }
  int pidfd_raw = -1;
  sys::CloneArgs ca;
  ca.flags = kNamespaces | CLONE_PIDFD;
  ca.pidfd = &pidfd_raw;
  ca.exit_signal = SIGCHLD;
  IntoGroup(ca, *group);
  pid_t pid = BRIG_TRY(sys::Clone3(ca));
  if (pid == 0) {
    parent_end.Reset();
    stdio->ApplyInChild();
    InitMain(InitArgs{&sb, &plan, &seccomp, &init_filter, child_end.get(),
                      net ? &net->address() : nullptr});
  }
  sys::UniqueFd pidfd(pidfd_raw);
  child_end.Reset();
  plan.steps.clear();  // the detached trees now live on only in the child
  if (auto s = stdio->Started(); !s) {
    Abort(pidfd.get());
    return std::move(s).error();
  }

  SyncSequence seq;
  Outcome out;
  auto hs = Handshake(parent_end.get(), pidfd.get(), pid, sb, *group, net.get(), seq);
  if (!hs || hs->has_value()) {
    // Init failed (and said why) or went silent; either way it ends here.
    Abort(pidfd.get());
    if (group->OomKilled()) {
      return Fail("brig init", "", "killed by the OOM killer while setting up: the memory "
                  "limit is too small for the sandbox to start");
    }
    if (!hs) return std::move(hs).error();
    out.error = std::move(**hs);
    out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    return out;
  }
  // The resolver and proxy serve from before the workload's first packet. splice(2) has
  // no MSG_NOSIGNAL; ignoring SIGPIPE only now keeps the workload's disposition default.
  auto audit_sink = [&sb](v1::AuditEvent e) {
    if (auto s = audit::Append(sb.audit_path, sb.id, std::move(e)); !s) {
      fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    }
  };
  if (net || !sb.brokers.empty()) signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<egress::Service> egress;
  if (net) {
    auto started_egress = egress::Service::Start(sb.egress, net->listeners(), net->address().addr.v,
                                                 net->address().subnet, audit_sink);
    if (!started_egress) {
      Abort(pidfd.get());
      return std::move(started_egress).error();
    }
    egress = std::move(*started_egress);
  }
  std::unique_ptr<broker::Service> brokers;
  if (!sb.brokers.empty()) {
    auto started_brokers = StartBrokers(sb, pid, std::move(broker_listeners), audit_sink);
    if (!started_brokers) {
      Abort(pidfd.get());
      return std::move(started_brokers).error();
    }
    brokers = std::move(*started_brokers);
  }
  if (auto s = SendMessage(parent_end.get(), Msg::kStart); !s) {
    std::optional<Error> why = WhyInitIsGone(parent_end.get(), pidfd.get(), s.error());
    Abort(pidfd.get());
    if (!why) return std::move(s).error();
    out.error = std::move(*why);
    out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    return out;
  }

  supervise::LoopInput in{pidfd.get(), parent_end.get(), sigfd.get(), started + sb.timeout,
                          sb.grace, &seq, 0, group.get()};
  in.extra_fds.push_back(stdio->fd());
  if (egress) in.extra_fds.push_back(egress->fd());
  if (brokers) in.extra_fds.push_back(brokers->fd());
  in.on_extra = [&](int fd) {
    if (fd == stdio->fd()) stdio->Handle();
    if (egress && fd == egress->fd()) egress->Handle();
    if (brokers && fd == brokers->fd()) brokers->Handle();
  };
  auto lo = supervise::Supervise(in);
  if (!lo) {
    Abort(pidfd.get());
    return std::move(lo).error();
  }
  // Every writer is gone with the sandbox: the rest of its output, then the terminal.
  stdio->Drain();
  stdio->RestoreTerminal();
  // Every broker connection, both sides, ends with the sandbox.
  if (brokers) brokers->Close();
  // The network first: closing brig's netfilter socket at exit waits for the kernel to
  // retire this last transaction (an RCU grace period), which the cgroup's removal and
  // the result's writing then overlap.
  if (egress) {
    egress->Close();
    out.network = egress->Summary();
  }
  if (brokers) {
    if (!out.network) out.network.emplace();
    for (v1::BrokerTraffic& t : brokers->Summary()) *out.network->add_brokers() = std::move(t);
  }
  bool keep_record = false;
  if (net) {
    if (auto s = net->Teardown(); !s) {
      // The workload's outcome stands; what could not be removed is brig gc's.
      fprintf(stderr, "brig: %s (brig gc removes what is left)\n", s.error().Render().c_str());
      keep_record = true;
    }
  }
  std::optional<v1::NetworkSummary> network = std::move(out.network);
  out = FromLoop(std::move(*lo), started, *group, keep_record);
  out.network = std::move(network);
  out.output = stdio->Summary();
  // The sandbox is gone; its copy's changes are still in brig's scratch tmpfs.
  if (!sb.fs.export_changes.empty()) {
    if (auto s = fs::ExportChanges(plan.copy_scratch.get(), sb.fs.workspace,
                                   sb.fs.export_changes, plan.protected_paths, plan.hidden);
        !s) {
      out.export_error = std::move(s).error();
    }
  }
  if (auto s = plan.Finish(); !s) {
    fprintf(stderr, "brig: %s (brig gc removes what is left)\n", s.error().Render().c_str());
    keep_record = true;
  }
  if (keep_record) record.Keep();
  return out;
}

}  // namespace brig::container
