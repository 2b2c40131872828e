// `brig exec` (exec.h): the process joins the container through container::Join (join.h
// draws the order), and then becomes what
// config.json's process and the flags say, as the container's own process does
// (oci/process.h): setsid, its terminal, credentials, seccomp, execve.
#include "oci/exec.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

#include "brig/exit.h"
#include "container/command.h"
#include "container/join.h"
#include "container/process.h"
#include "container/sync.h"
#include "oci/cgroups.h"
#include "oci/launch.h"
#include "oci/process.h"
#include "oci/seccomp_agent.h"
#include "oci/spec.h"
#include "oci/state.h"
#include "pod/harden.h"
#include "supervise/attend.h"
#include "sys/child.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::oci {
namespace {

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
[[noreturn]] void BecomeProcess(const container::ProcessSpec& p, bool terminal,
                                const ConsoleSize& size, int console_fd, int sync_fd) {
  if (setsid() < 0) SendErrorAndExit(sync_fd, SysError("setsid"));
  if (terminal) {
    uid_t owner = p.credentials ? p.credentials->uid : 0;
    if (auto s = SetupConsole(console_fd, size, false, owner); !s) {
      SendErrorAndExit(sync_fd, s.error());
    }
  }
  // Above the fds --preserve-fds hands over, only the sync socket is left, and it goes at
  // execve.
  if (terminal) close(console_fd);
  container::ProcessSpec process = p;
  process.listener_to = sync_fd;
  if (auto s = container::TakeOn(process); !s) {
    SendErrorAndExit(sync_fd, std::move(s).error().Wrap("exec"));
  }
  auto path = container::ResolveCommand(process.args[0], process.env, "");
  if (!path) SendErrorAndExit(sync_fd, std::move(path).error());
  SendErrorAndExit(sync_fd, container::Exec(process, *path));
}

// The process's last word: EOF at its execve, or its failure. One that fails or goes
// silent before its command is killed, and reaped unless `detach` (the engine's shim,
// the subreaper above brig, reaps it then).
Status AwaitCommand(container::Joined& j, bool detach) {
  Status s = j.sync.AwaitClose();
  if (s) return s;
  (void)sys::PidfdSendSignal(j.pidfd.get(), SIGKILL);
  if (!detach) waitpid(j.pid, nullptr, 0);
  return s;
}

// The container exec joins, as its record names it: created or running.
struct Target {
  Container rec;
  std::unique_ptr<cgroup::Groups> cgroups;
  sys::UniqueFd pidfd;  // its process, checked to be the one the record names
  int namespaces = 0;   // CLONE_NEW* of config.json's namespaces
  ContainerStatus status = ContainerStatus::kRunning;
};

Result<Target> OpenTarget(const ExecOptions& o) {
  Target t;
  // The lock is held only while the container is looked at: an attached exec may last, and
  // the engine must still be able to kill or delete the container meanwhile.
  ContainerDir dir = BRIG_TRY(ContainerDir::Open(o.root, o.id));
  t.rec = BRIG_TRY(dir.Read());
  t.cgroups = CgroupsOf(t.rec);
  ContainerStatus& st = t.status;
  st = StatusOf(t.rec, t.cgroups->Frozen());
  // runc's words. With --ignore-paused, the process is started all the same, and waits
  // in the frozen groups, as runc's does, until the container is resumed (or the step's
  // time runs out).
  if (st == ContainerStatus::kPaused && !o.ignore_paused) {
    return Fail("exec", o.id, "cannot exec in a paused container (see --ignore-paused)");
  }
  if (st != ContainerStatus::kRunning && st != ContainerStatus::kCreated &&
      st != ContainerStatus::kPaused) {
    return BadInput("container", o.id,
                    "cannot exec in it (it is " + std::string(StatusName(st)) + ")");
  }
  std::optional<sys::UniqueFd> pidfd = OpenProcess(t.rec);
  if (!pidfd) return Fail("exec", o.id, "container not running");
  t.pidfd = std::move(*pidfd);
  for (const Namespace& n : t.rec.config().linux().namespaces()) {
    if (std::optional<int> f = NamespaceFlag(n.type())) t.namespaces |= *f;
  }
  return t;
}

// --process: a file, or one of brig's own descriptors by its /dev/fd name, as a shell hands
// one (bash's <(...), a pipe) and runc reads it. The descriptor is read, not a path
// followed.
Result<std::string> ReadProcessFile(const std::string& path) {
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    std::string_view n = std::string_view(path).substr(prefix.size());
    int fd = -1;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), fd);
    if (ec != std::errc() || end != n.data() + n.size() || fd < 0 || fcntl(fd, F_GETFD) < 0) {
      return BadInput("--process", path, "names no descriptor brig holds");
    }
    return util::ReadStream(fd, path);
  }
  return util::ReadUserFile(path);
}

}  // namespace

Result<Process> ExecProcess(const ExecOptions& o, const Process& base) {
  Process p;
  if (!o.process_file.empty()) {
    std::string text = BRIG_TRY(ReadProcessFile(o.process_file));
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
  Target t = BRIG_TRY(OpenTarget(o));
  const Container& rec = t.rec;
  Process p = BRIG_TRY(ExecProcess(o, rec.config().process()));
  // A runtime handler's pod: held to its profile as its container was at create.
  std::optional<pod::Held> held = BRIG_TRY(pod::HeldBy(o.root, rec.config()));
  if (held) pod::HardenProcess(p);
  std::optional<brig::v1::SeccompPolicy> policy;
  if (rec.config().linux().has_seccomp()) policy = rec.config().linux().seccomp();
  container::ProcessSpec prep = BRIG_TRY(PrepareProcess(p, policy));
  if (held) prep.profile_seccomp = BRIG_TRY(pod::ProfileFilter(*held));
  prep.preserved_fds = o.preserve_fds;
  sys::UniqueFd console, relay;
  if (p.terminal() && !o.console_socket.empty()) {
    console = BRIG_TRY(ConnectConsoleSocket(o.console_socket));
  } else if (p.terminal() && o.detach) {
    return BadInput("--tty", "", "needs --console-socket to hand the terminal to when detached");
  } else if (p.terminal()) {
    // brig relays the terminal itself, as runc does.
    sys::FdPair pair = BRIG_TRY(sys::FdPair::SocketPair(SOCK_STREAM, "terminal"));
    console = pair.TakeChildEnd();
    relay = pair.TakeParentEnd();
  }
  std::optional<supervise::HeldSignals> signals;
  if (!o.detach) signals = BRIG_TRY(supervise::HeldSignals::Hold(supervise::kPassedOn));
  // With --cgroup, groups below the container's, as runc places the process.
  sys::UniqueFd sub_v2;
  int v2 = BRIG_TRY(t.cgroups->V2FdToJoin());
  if (!o.cgroups.empty()) {
    sub_v2 = BRIG_TRY(t.cgroups->OpenV2Sub(o.cgroups));
    v2 = sub_v2.get();
  }
  container::JoinTarget target{t.pidfd.get(), t.namespaces, v2,
                               BRIG_TRY(t.cgroups->OpenV1Tasks(o.cgroups))};
  container::JoinedProcess joined;
  joined.adopt = !o.detach;
  joined.become = [&](int sync_fd) {
    BecomeProcess(prep, p.terminal(), p.console_size(), console.get(), sync_fd);
  };
  // What --preserve-fds hands over stays, and the terminal's master until it is set up.
  if (console) joined.keep.push_back(console.get());
  joined.keep_below = 3 + static_cast<unsigned>(o.preserve_fds);
  container::Joined j = BRIG_TRY(container::Join(target, joined));
  HandListenersToAgent(j.sync, rec, t.status, j.pid);
  console.Reset();
  target.cgroup_v1.clear();
  BRIG_TRY(AwaitCommand(j, o.detach));
  pid_t pid = j.pid;
  if (!o.pid_file.empty()) {
    BRIG_TRY_CTX(util::ReplaceFile(o.pid_file, std::to_string(pid)), "--pid-file");
  }
  if (o.detach) return 0;
  sys::Child process(pid, std::move(j.pidfd));
  return AttendProcess(process, relay.get(), *signals);
}

}  // namespace brig::oci
