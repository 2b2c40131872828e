// The OCI verbs after create (container.h): each opens and locks the container's
// directory, reads its record, and reads its status from the host.
#include "oci/container.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <memory>

#include "cgroup/systemd.h"
#include "log/log.h"
#include "oci/cgroups.h"
#include "oci/hooks.h"
#include "pod/supervisor.h"
#include "sys/syscalls.h"

namespace brig::oci {
namespace {

struct Opened {
  ContainerDir dir;
  Container rec;
  std::unique_ptr<cgroup::Groups> cgroups;
  ContainerStatus status;
};

Result<Opened> OpenContainer(const std::string& root, const std::string& id) {
  BRIG_TRY(CheckId(id));
  ContainerDir dir = BRIG_TRY(ContainerDir::Open(root, id));
  Container rec = BRIG_TRY(dir.Read());
  std::unique_ptr<cgroup::Groups> cg = CgroupsOf(rec);
  ContainerStatus status = StatusOf(rec, cg->Frozen());
  return Opened{std::move(dir), std::move(rec), std::move(cg), status};
}

Error NotIn(const std::string& id, ContainerStatus s, std::string_view what) {
  return BadInput("container", id,
                  std::string(what) + " (it is " + std::string(StatusName(s)) + ")");
}

bool HasCgroups(const Opened& c) { return c.rec.cgroups_size() + c.rec.joined_cgroups_size() > 0; }

// A container made without cgroups (brig without root, none delegated: GoesWithoutCgroups)
// cannot be frozen, limited or counted: the verb that would is refused, saying so.
Status NeedsCgroups(const Opened& c, std::string_view what) {
  if (HasCgroups(c)) return {};
  return Fail(std::string(what), c.rec.id(),
              "the container has no cgroup (brig, not root, was delegated none to make it)");
}

// Where the container has no groups, its processes are those of the pid namespace its
// process made (all of them, as the namespace's init's death kills them): that
// namespace, or none once the process is gone. A container with neither cannot tell its
// own.
Result<std::optional<struct stat>> OwnPidNamespace(const Opened& c) {
  bool own_pid_ns = false;
  for (const Namespace& ns : c.rec.config().linux().namespaces()) {
    own_pid_ns |= ns.type() == "pid" && ns.path().empty();
  }
  if (!own_pid_ns) {
    return Fail("container", c.rec.id(),
                "has neither a cgroup nor a pid namespace of its own to tell its processes by");
  }
  std::optional<sys::UniqueFd> pidfd = OpenProcess(c.rec);
  if (!pidfd) return std::optional<struct stat>();
  return std::optional(BRIG_TRY(sys::PidNamespaceOf(c.rec.pid())));
}

// The processes of the container: its groups' members, or its pid namespace's.
Result<std::vector<pid_t>> Members(const Opened& c) {
  if (HasCgroups(c)) return c.cgroups->Pids();
  std::optional<struct stat> ns = BRIG_TRY(OwnPidNamespace(c));
  if (!ns) return std::vector<pid_t>{};
  return sys::PidsInPidNamespace(*ns);
}

// Waits until the process behind `pidfd` has exited (it may stay a zombie of its parent).
void AwaitExit(int pidfd) {
  struct pollfd p = {pidfd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

}  // namespace

Status Start(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status != ContainerStatus::kCreated) {
    return NotIn(id, c.status, "cannot be started: only a created container can");
  }
  std::string fifo = c.dir.Path(kExecFifo);
  sys::UniqueFd fd(open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENXIO) return Fail("start", id, "the container's process is gone");
    return SysError("open", fifo);
  }
  if (write(fd.get(), "0", 1) != 1) return SysError("write", fifo);
  fd.Reset();
  (void)unlink(fifo.c_str());
  c.rec.set_started(true);
  BRIG_TRY(c.dir.Write(c.rec));
  std::string state = StateJson(c.rec, ContainerStatus::kRunning);
  RunHooksWarning(c.rec.config().hooks().poststart(), "hooks.poststart", state);
  return {};
}

Result<std::string> State(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  return StateJson(c.rec, c.status);
}

Status Kill(const std::string& root, const std::string& id, int sig, bool all) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  // --all signals whatever the container's groups still hold, even once its process has
  // stopped (runc's kill --all), which may be nothing.
  if ((c.status == ContainerStatus::kStopped && !all) || c.status == ContainerStatus::kCreating) {
    return Fail("kill", id, "container not running");
  }
  if (all && !HasCgroups(c)) {
    // As brig run's KillAll without a group: each process checked to be in the namespace.
    std::optional<struct stat> ns = BRIG_TRY(OwnPidNamespace(c));
    return ns ? sys::SignalPidNamespace(*ns, sig) : Status();
  }
  if (all) {
    for (pid_t pid : BRIG_TRY(c.cgroups->Pids())) {
      auto pidfd = sys::PidfdOpen(pid, "container " + id);
      if (!pidfd) continue;  // gone meanwhile
      (void)sys::PidfdSendSignal(pidfd->get(), sig);
    }
    return {};
  }
  std::optional<sys::UniqueFd> pidfd = OpenProcess(c.rec);
  if (!pidfd) return Fail("kill", id, "container not running");
  return sys::PidfdSendSignal(pidfd->get(), sig);
}

Status Delete(const std::string& root, const std::string& id, bool force) {
  auto opened = OpenContainer(root, id);
  if (!opened && force) {
    // A forced delete always wins: whatever holds the container's directory (a create
    // that hangs in a hook, a verb stuck on the container), the container's processes
    // die first, which ends what waits on them, and the lock is tried once more.
    if (auto rec = ContainerDir::Peek(root, id)) {
      (void)CgroupsOf(*rec)->Destroy();
      if (!rec->systemd_unit().empty()) (void)cgroup::systemd::Stop(rec->systemd_unit());
      (void)pod::Stop({rec->supervisor_pid(), rec->supervisor_start_time()});
      if (std::optional<sys::UniqueFd> pidfd = OpenProcess(*rec)) {
        (void)sys::PidfdSendSignal(pidfd->get(), SIGKILL);
      }
      opened = OpenContainer(root, id);
    }
  }
  if (!opened) {
    // runc's: a forced delete of a container that is not there is done (containerd's shim
    // cleans up so).
    if (force && opened.error().Render().find("does not exist") != std::string::npos) return {};
    return std::move(opened).error();
  }
  Opened& c = *opened;
  bool live = c.status == ContainerStatus::kRunning || c.status == ContainerStatus::kPaused;
  if (live && !force) {
    return NotIn(id, c.status, "cannot be deleted: stop it first, or use --force");
  }
  if (std::optional<sys::UniqueFd> pidfd = OpenProcess(c.rec)) {
    (void)sys::PidfdSendSignal(pidfd->get(), SIGKILL);
    if (c.status == ContainerStatus::kPaused) (void)c.cgroups->Freeze(false);
    AwaitExit(pidfd->get());
  }
  BRIG_TRY_CTX(c.cgroups->Destroy(), "cgroups");
  if (!c.rec.systemd_unit().empty()) BRIG_TRY(cgroup::systemd::Stop(c.rec.systemd_unit()));
  BRIG_TRY(pod::Stop({c.rec.supervisor_pid(), c.rec.supervisor_start_time()}));
  std::string state = StateJson(c.rec, ContainerStatus::kStopped);
  RunHooksWarning(c.rec.config().hooks().poststop(), "hooks.poststop", state);
  return c.dir.Remove();
}

Status Pause(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status != ContainerStatus::kRunning) {
    return NotIn(id, c.status, "cannot be paused: it is not running");
  }
  BRIG_TRY(NeedsCgroups(c, "pause"));
  return c.cgroups->Freeze(true);
}

Status Resume(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status != ContainerStatus::kPaused) {
    return NotIn(id, c.status, "cannot be resumed: it is not paused");
  }
  return c.cgroups->Freeze(false);
}

Result<std::vector<pid_t>> Pids(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status == ContainerStatus::kStopped) return std::vector<pid_t>{};
  return Members(c);
}

Status Update(const std::string& root, const std::string& id, const Resources& r) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status == ContainerStatus::kStopped) {
    return NotIn(id, c.status, "cannot be updated: it has stopped");
  }
  BRIG_TRY(NeedsCgroups(c, "update"));
  BRIG_TRY(c.cgroups->Update(r));
  // systemd's own copy of what it knows, which a daemon-reload writes to the scope again.
  if (!c.rec.systemd_unit().empty())
    BRIG_TRY(cgroup::systemd::SetProperties(c.rec.systemd_unit(), r));
  c.rec.mutable_config()->mutable_linux()->mutable_resources()->MergeFrom(r);
  return c.dir.Write(c.rec);
}

Result<std::string> Stats(const std::string& root, const std::string& id) {
  Opened c = BRIG_TRY(OpenContainer(root, id));
  if (c.status == ContainerStatus::kStopped) return NotIn(id, c.status, "container not running");
  BRIG_TRY(NeedsCgroups(c, "events"));
  return StatsJson(id, c.cgroups->ReadStats());
}

Status Events(const std::string& root, const std::string& id, std::chrono::milliseconds interval,
              bool once, const std::function<void(const std::string&)>& emit) {
  // The groups are watched without the container's lock, which delete needs.
  std::unique_ptr<cgroup::Groups> groups;
  {
    Opened c = BRIG_TRY(OpenContainer(root, id));
    if (c.status == ContainerStatus::kStopped) return NotIn(id, c.status, "container not running");
    BRIG_TRY(NeedsCgroups(c, "events"));
    groups = std::move(c.cgroups);
  }
  sys::UniqueFd oom = BRIG_TRY(groups->WatchOom());
  uint64_t kills = groups->OomKills().value_or(0);
  for (bool first = true;; first = false) {
    auto stats = Stats(root, id);
    if (!stats && !first) return {};  // the container has stopped: the stream ends
    emit(BRIG_TRY(std::move(stats)));
    if (once) return {};
    struct pollfd p = {oom.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(interval.count())) > 0) {
      char drain[4096];
      while (read(oom.get(), drain, sizeof drain) > 0) {
      }
    }
    // Counted, not taken from the event alone: memory.events changes for other reasons,
    // and a group brig did not make is not watched at all.
    if (uint64_t now = groups->OomKills().value_or(0); now > kills) {
      kills = now;
      emit("{\"type\":\"oom\",\"id\":\"" + log::JsonEscape(id) + "\"}");
    }
  }
}

Result<std::vector<Listed>> List(const std::string& root) {
  std::vector<Listed> out;
  for (const std::string& id : BRIG_TRY(ListIds(root))) {
    auto c = OpenContainer(root, id);
    if (!c) continue;  // deleted meanwhile
    out.push_back(
        {id, c->rec.pid(), c->status, c->rec.bundle(), c->rec.rootfs(), c->rec.created()});
  }
  return out;
}

}  // namespace brig::oci
