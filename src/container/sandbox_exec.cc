// brig exec into a running sandbox (sandbox_exec.h): find it, check its init, join it,
// audit, let the process go, relay its stdio until it ends.
#include "container/sandbox_exec.h"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "audit/audit.h"
#include "brig/exit.h"
#include "cgroup/groups.h"
#include "config/probe.h"
#include "container/command.h"
#include "container/exec_child.h"
#include "container/exec_record.h"
#include "container/join.h"
#include "state/record.h"
#include "supervise/attend.h"
#include "sys/child.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

// brig init's namespaces, every one that `brig run` makes.
constexpr int kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                            CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

// The process, in the sandbox's namespaces: the sandbox user with nothing to raise, its
// command resolved as brig init resolves the workload's, then, once brig has audited it,
// the workload's own exec path. Never returns.
[[noreturn]] void Become(const ExecRecord& rec, const SandboxExec& req, const std::string& workdir,
                         int err_fd, int sync_fd) {
  security::Credentials c;
  c.uid = rec.uid;
  c.gid = rec.gid;
  c.no_new_privs = true;
  // Not dumpable after it either (ApplyCredentials), until execve.
  if (auto s = security::ApplyCredentials(c); !s) {
    SendErrorAndExit(sync_fd, std::move(s).error().Wrap("exec"));
  }
  auto path = ResolveCommand(req.argv[0], req.env, workdir);
  if (!path) SendErrorAndExit(sync_fd, std::move(path).error());
  ProcessSpec p;
  p.args = req.argv;
  p.env = req.env;
  p.cwd = workdir;
  p.rlimits = rec.rlimits;
  p.seccomp = rec.seccomp;
  p.scripts_via_shell = true;
  if (!Expect(sync_fd, Msg::kStart, kSetupStepTimeoutMs)) _exit(kExitRefused);
  // Its parent is now this brig exec, which adopted it (JoinedProcess::adopt) and records
  // its end: it dies with it.
  ExecChild(p, *path, {-1, -1, err_fd, true, 0, sync_fd});
}

// What the process's failed execve (or a step of ExecChild before it) wrote on the error
// pipe, as brig init reports the workload's.
Status ExecOutcome(int err_fd, const std::string& cmd) {
  std::optional<int> failed = sys::ReadExecError(err_fd);
  if (!failed) return {};
  if (*failed < 0) return Error{-*failed, "seccomp", "load filter"};
  Error e{*failed, "execve", cmd};
  e.kind = ExecErrorKind(*failed);
  return e;
}

v1::AuditEvent StartEvent(const SandboxExec& req, const std::string& workdir, pid_t pid) {
  v1::AuditEvent e;
  v1::ExecStart* s = e.mutable_exec_start();
  for (const std::string& a : req.argv) s->add_argv(a);
  s->set_caller_uid(getuid());
  s->set_pid(pid);
  s->set_cwd(workdir);
  for (const std::string& kv : req.env) s->add_env(kv.substr(0, kv.find('=')));
  s->set_tty(req.tty);
  return e;
}

v1::AuditEvent ExitEvent(pid_t pid, const Result<int>& code,
                         std::chrono::steady_clock::time_point started) {
  v1::AuditEvent e;
  v1::ExecExit* x = e.mutable_exec_exit();
  x->set_pid(pid);
  x->set_exit_code(code ? *code : ExitCode(code.error().kind));
  if (code && *code > 128) x->set_signal(*code - 128);
  if (!code) x->set_error(code.error().Render());
  x->set_duration_ms(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - started)
                                               .count()));
  return e;
}

struct Joining {
  ExecRecord rec;
  JoinTarget target;
  sys::UniqueFd init;
  // The sandbox's groups as its record names them, joined, not brig exec's to remove: the
  // stage child is cloned into the v2 one and writes itself into the v1 ones' tasks files.
  std::unique_ptr<cgroup::Groups> groups;
};

// The sandbox `target` names, its init checked and its groups open.
Result<Joining> Find(const std::string& target) {
  std::vector<state::LiveRecord> live = BRIG_TRY(state::ListLive(state::SandboxDir()));
  const state::LiveRecord* found = BRIG_TRY(FindSandbox(live, target));
  Joining j;
  j.rec = BRIG_TRY(ReadExecRecord(*found));
  std::optional<sys::UniqueFd> init = sys::OpenProcessStartedAt(j.rec.init_pid, j.rec.init_start);
  if (!init) return BadInput("sandbox", j.rec.id, "is not running (its brig init has exited)");
  j.init = std::move(*init);
  j.target.pidfd = j.init.get();
  j.target.namespaces = kNamespaces;
  j.groups = cgroup::Groups::Existing({}, j.rec.cgroups);
  j.target.cgroup_v2 = BRIG_TRY(j.groups->V2FdToJoin());
  j.target.cgroup_v1 = BRIG_TRY(j.groups->OpenV1Tasks());
  return j;
}

}  // namespace

bool NamesASandbox(const std::string& target) {
  auto live = state::ListLive(state::SandboxDir());
  return live && !Matching(*live, target).empty();
}

Result<int> ExecInSandbox(const SandboxExec& req) {
  auto started = std::chrono::steady_clock::now();
  if (req.argv.empty()) return BadInput("brig exec", req.target, "no command given after --");
  if (req.tty && !isatty(0)) return BadInput("--tty", "", "brig's stdin is not a terminal");
  supervise::HeldSignals signals = BRIG_TRY(supervise::HeldSignals::Hold(supervise::kPassedOn));
  Joining j = BRIG_TRY(Find(req.target));
  std::string workdir = req.cwd.empty() ? j.rec.workdir : req.cwd;
  std::unique_ptr<supervise::Stdio> stdio = BRIG_TRY(supervise::Stdio::Prepare(
      std::nullopt, config::TerminalCodesetOf(environ),
      req.tty ? supervise::TerminalMode::kIfTerminal : supervise::TerminalMode::kNever));
  sys::FdPair errors = BRIG_TRY(sys::FdPair::Pipe(true, "exec errors"));
  sys::UniqueFd err_rd = errors.TakeParentEnd(), err_wr = errors.TakeChildEnd();
  JoinedProcess p;
  p.adopt = true;
  p.in_stage = [&stdio] { stdio->ApplyInChild(); };
  p.become = [&](int sync_fd) { Become(j.rec, req, workdir, err_wr.get(), sync_fd); };
  p.keep = {err_wr.get()};
  Joined joined = BRIG_TRY(Join(j.target, p));
  sys::Child process(joined.pid, std::move(joined.pidfd));
  err_wr.Reset();
  j.target.cgroup_v1.clear();
  j.groups.reset();
  j.init.Reset();
  BRIG_TRY(stdio->Started());
  // Audited before it may run: an audit log that cannot be written stops it, as it stops
  // a run.
  BRIG_TRY(
      audit::Append(j.rec.audit_path, j.rec.id, StartEvent(req, workdir, joined.pid), j.rec.name));
  // A process that failed already has said why (AwaitClose reads it).
  (void)SendMessage(joined.sync.fd(), Msg::kStart);
  Status s = joined.sync.AwaitClose();
  if (s) s = ExecOutcome(err_rd.get(), req.argv[0]);
  Result<int> code =
      s ? supervise::Attend(process, stdio.get(), signals) : Result<int>(std::move(s).error());
  // As brig run: a command that succeeded without its audit is brig's failure.
  if (auto a = audit::Append(j.rec.audit_path, j.rec.id, ExitEvent(joined.pid, code, started),
                             j.rec.name);
      !a && code && *code == 0) {
    return std::move(a).error();
  }
  return code;
}

}  // namespace brig::container
