// Container init for OCI containers (init.h). Everything here runs in the cloned child:
// until kCreated, errors go back to `brig create` over the sync socket; after it, to the
// container's stderr, which the engine reads.
#include "oci/init.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>

#include "brig/exit.h"
#include "container/command.h"
#include "container/init.h"
#include "container/process.h"
#include "container/sync.h"
#include "log/log.h"
#include "oci/hooks.h"
#include "oci/rootfs.h"
#include "oci/spec.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::oci {
namespace {

using container::Msg;
using container::SendErrorAndExit;

// The stage path: join the namespaces named by path, make the new ones, and, for a new
// pid namespace, fork the process that will be its pid 1.
Status JoinAndUnshare(const InitArgs& a) {
  for (const auto& [flag, path] : a.joins) {
    sys::UniqueFd ns(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) return SysError("open", "namespace " + path);
    if (setns(ns.get(), flag) < 0) return SysError("setns", path);
  }
  if (a.unshare_flags && unshare(a.unshare_flags) < 0) return SysError("unshare", "namespaces");
  return {};
}

Status ForkPidOne(const InitArgs& a) {
  if (unshare(CLONE_NEWPID) < 0) return SysError("unshare", "pid namespace");
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "container init");
  if (pid > 0) {
    std::string p = std::to_string(pid);
    _exit(container::SendMessage(a.sync_fd, Msg::kPid, 0, p) ? 0 : 125);
  }
  return {};
}

Status WriteSysctls(const Spec& spec) {
  for (const auto& [key, value] : spec.linux().sysctl()) {
    std::string path = "/proc/sys/" + key;
    for (size_t i = strlen("/proc/sys/"); i < path.size(); ++i) {
      if (path[i] == '.') path[i] = '/';
    }
    BRIG_TRY_CTX(util::WriteFile(path, value), "linux.sysctl");
  }
  return {};
}

// Everything from the id map to the container's root, before kReady: what the parent's
// prestart and createRuntime hooks see.
Status SetUp(const InitArgs& a) {
  // Into its v1 groups before anything else: before the namespaces it joins or makes (a
  // cgroup namespace's root is the group init is in) and before pid 1 is forked.
  if (a.cgroup_tasks) BRIG_TRY(cgroup::JoinV1(*a.cgroup_tasks));
  if (!a.joins.empty() || a.unshare_flags) BRIG_TRY(JoinAndUnshare(a));
  // In a user namespace, root of it once the map exists, with every capability the
  // namespace gave it, so that what init makes (the mount points, /dev's nodes) belongs to
  // the container's root, not to an unmapped id.
  security::Credentials root;
  root.caps.bounding = root.caps.effective = root.caps.permitted = security::kEveryCapability;
  BRIG_TRY_CTX(container::TakeIdsFromMap(a.sync_fd, a.fs.userns ? &root : nullptr),
               "root in the user namespace");
  if (a.mount_sources_fd >= 0) {
    BRIG_TRY(TakeMountSources(a.mount_sources_fd, *a.rootfs_plan));
    close(a.mount_sources_fd);
  }
  if (a.fork_for_pid) BRIG_TRY(ForkPidOne(a));
  if (a.new_cgroupns && unshare(CLONE_NEWCGROUP) < 0) {
    return SysError("unshare", "cgroup namespace");
  }
  if (setsid() < 0) return SysError("setsid");
  // Keys of the host's session must not be the container's (runc's default).
  if (a.new_keyring) {
    if (auto s = sys::JoinSessionKeyring(); !s && s.error().err != ENOSYS) return s;
  }
  BRIG_TRY(PrepareRootfs(a.fs.rootfs, *a.rootfs_plan));
  log::Debug("mounts made");
  return {};
}

// After the parent's hooks: the container's hooks, its root, its name, sysctls, terminal
// and the process's credentials; a filter that notifies is loaded now (runc 1.1 loads it
// there too), for its listener goes to the agent through `create`.
Status Finish(const InitArgs& a, container::ProcessSpec& process, const std::string& state) {
  BRIG_TRY(RunHooks(a.spec->hooks().create_container(), "hooks.createContainer", state));
  BRIG_TRY(EnterRootfs(a.fs.rootfs, a.no_pivot));
  log::Debug("root entered");
  const Spec& s = *a.spec;
  if (!s.hostname().empty() && sethostname(s.hostname().data(), s.hostname().size()) < 0) {
    return SysError("sethostname", s.hostname());
  }
  if (!s.domainname().empty() &&
      setdomainname(s.domainname().data(), s.domainname().size()) < 0) {
    return SysError("setdomainname", s.domainname());
  }
  // Before readonlyPaths makes /proc/sys read-only.
  BRIG_TRY(WriteSysctls(s));
  BRIG_TRY(FinishRootfs(*a.rootfs_plan));
  if (s.linux().has_personality()) {
    unsigned long p = BRIG_TRY(PersonalityValue(s.linux().personality()));
    if (personality(p) < 0) return SysError("personality", "linux.personality");
  }
  if (s.process().terminal()) {
    BRIG_TRY_CTX(
        SetupConsole(a.console_fd, s.process().console_size(), true, s.process().user().uid()),
        "process.terminal");
  }
  BRIG_TRY(SealRootfs(*a.rootfs_plan));
  // Every descriptor brig had goes now, not at execve: the container's lock (an flock on
  // its directory, which a copy held here would keep while init waits for `start`), the
  // record, the cgroups' and the console socket (runc CVE-2024-21626). Before the
  // credentials, whose seccomp filter (without no_new_privileges) may refuse close_range.
  // What --preserve-fds hands over stays, and goes to the container without FD_CLOEXEC
  // (container::TakeOn).
  BRIG_TRY(sys::CloseAllExcept({a.sync_fd, a.fifo_fd}, 3 + a.preserve_fds));
  BRIG_TRY_CTX(container::TakeOn(process), "process");
  if (process.seccomp && security::HasListener(*process.seccomp)) {
    BRIG_TRY_CTX(container::LoadFilterNow(process), "process");
  }
  return {};
}

// Until `start` writes its byte on exec.fifo. A writer that left without one is not
// `start` (only root reaches the fifo): init gives up.
bool WaitForStart(int fifo_fd) {
  struct pollfd p = {fifo_fd, POLLIN, 0};
  for (;;) {
    int rc = poll(&p, 1, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return false;
    char c;
    ssize_t n = read(fifo_fd, &c, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return n == 1;
  }
}

[[noreturn]] void Fatal(const Error& e) {
  std::string line = "brig: " + e.Render() + "\n";
  (void)!write(2, line.data(), line.size());
  _exit(ExitCode(e.kind));
}

// First thing in the clone, which has a copy of every descriptor brig held: the lock on
// the container's directory, brig's end of the sync socket, its cgroup directories. A
// copy of brig's end would keep init waiting for a message that never comes, and the
// lock with it, once brig was killed: every verb on the container, and `list`, then
// waited for ever. Only what init uses stays; then the first steps of every process brig
// clones (container::StartAsBrigsChild). Init dies with its creator until `create` is done
// with it (ContainerInit clears that).
Status DropWhatBrigHeld(const InitArgs& a) {
  std::vector<int> keep = {a.sync_fd, a.fifo_fd, a.console_fd, a.mount_sources_fd};
  if (a.cgroup_tasks) {
    for (const cgroup::TasksFile& t : *a.cgroup_tasks) keep.push_back(t.fd.get());
  }
  BRIG_TRY(sys::CloseAllExcept(std::move(keep), 3 + a.preserve_fds));
  return container::StartAsBrigsChild(a.sync_fd);
}

}  // namespace

void ContainerInit(const InitArgs& a) {
  int fd = a.sync_fd;
  if (auto s = DropWhatBrigHeld(a); !s) {
    SendErrorAndExit(fd, std::move(s).error().Wrap("container init"));
  }
  container::ForwardLogs(fd);
  if (auto s = SetUp(a); !s) {
    SendErrorAndExit(fd, std::move(s).error().Wrap("container init"));
  }
  if (auto s = container::SendMessage(fd, Msg::kReady); !s) _exit(125);
  // Meanwhile the parent runs the prestart and createRuntime hooks.
  auto go = container::Expect(fd, Msg::kStart, a.start_wait_ms);
  if (!go) _exit(125);
  container::ProcessSpec process = *a.process;
  process.listener_to = fd;
  if (auto s = Finish(a, process, go->payload); !s) {
    SendErrorAndExit(fd, std::move(s).error().Wrap("container init"));
  }
  auto path = container::ResolveCommand(process.args[0], process.env, "");
  if (!path) SendErrorAndExit(fd, std::move(path).error());
  container::StopForwardingLogs();
  if (auto s = container::SendMessage(fd, Msg::kCreated); !s) _exit(125);
  // The parent has written the container's record; EOF means it died before: give up.
  if (!container::Expect(fd, Msg::kStart, container::kSetupStepTimeoutMs)) _exit(125);
  // The container outlives `create` from here; closing the socket tells it so.
  if (prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0) _exit(125);
  close(fd);
  if (!WaitForStart(a.fifo_fd)) _exit(125);
  close(a.fifo_fd);
  if (a.spec->hooks().start_container_size() > 0) {
    // The hooks run as the process would, under its filter too.
    if (auto s = container::LoadFilterNow(process); !s) Fatal(s.error());
    if (auto s = RunHooks(a.spec->hooks().start_container(), "hooks.startContainer", go->payload);
        !s) {
      Fatal(s.error());
    }
  }
  Fatal(container::Exec(process, *path));
}

}  // namespace brig::oci
