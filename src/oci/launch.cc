// `brig create`, the parent half (launch.h). Its init is cloned and driven to Ready as brig
// run's is (container/launch.h: CloneInit, DriveToReady), over the same channel (container/
// channel.h), in Flow::kContainer's order; the rest is the OCI front end's. Each wait, on
// either side, is bounded by a setup step's time, and those that span hooks by their
// timeouts too (oci/hooks.h StepWithHooksMs; a hook without one leaves that wait unbounded):
//
//   brig create                                     container init (init.cc)
//   record and cgroups made, exec.fifo (read end held by init),
//   the v1 groups' tasks files opened, the root planned (PlanRootfs, rootfs.h)
//   [a pid namespace joined by path: setns here, for the child]
//   CloneInit: sync socket, clone3(new namespaces
//   | CLONE_INTO_CGROUP) [stage path: brig a
//   subreaper] ───────────────────────────────────▶ "0" to each v1 tasks file (into
//                                                    its groups, cgroup/groups.h)
//                                                    [stage path: setns by path, user
//                                                    first; unshare the new ones]
//                          ◀── kLog ...              (with --debug, until kCreated)
//                          ◀── kNeedIdMap
//   uid_map/gid_map [user namespace: the bind
//   sources opened in init's mount namespace,
//   to init over a socket of their own]
//                          ─── kIdMapDone ──▶
//                          ◀── kPid {pid}            [stage path with a new pid ns: the
//   the stage child reaped, the init it forked       stage child forks pid 1 and exits]
//   held instead
//                                                    cgroup ns, setsid, the plan's
//                                                    mounts and devices
//                          ◀── kReady
//   hooks prestart, createRuntime
//                          ─── kStart {state} ──▶
//                                                    hooks createContainer, pivot_root,
//                                                    the plan's masked/readonly paths,
//                                                    root.readonly, propagation, hostname,
//                                                    sysctl, terminal, credentials and
//                                                    no_new_privs [a filter that notifies:
//                                                    loaded]
//                          ◀── kSeccompFd {listener} [only then]
//   to the seccomp agent (seccomp_agent.h)
//                          ─── kSeccompDone ──▶
//                          ◀── kCreated
//   record: pid + start time; --pid-file
//                          ─── kStart ──▶            waits for a byte on exec.fifo
//   exits                                            (`brig start`), hooks startContainer,
//                                                    seccomp, execve
//   any failure:           ◀── kError {errno, kind, step, subject}; init _exits
#include "oci/launch.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <memory>

#include "cgroup/systemd.h"
#include "container/launch.h"
#include "log/log.h"
#include "oci/cgroups.h"
#include "oci/hooks.h"
#include "oci/init.h"
#include "oci/process.h"
#include "oci/seccomp_agent.h"
#include "oci/spec.h"
#include "oci/state.h"
#include "pod/harden.h"
#include "pod/supervisor.h"
#include "sys/child.h"
#include "sys/fd.h"
#include "sys/id_map.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"

namespace brig::oci {
namespace {

using container::Msg;

struct Namespaces {
  int clone_flags = 0;  // the new ones, but the cgroup namespace (init unshares it later)
  bool new_user = false, new_cgroup = false, new_pid = false;
  std::vector<std::pair<int, std::string>> joins;  // by path, the user namespace first
  std::string pid_path;                            // joined by the parent, for its child
};

Result<Namespaces> PlanNamespaces(const Spec& spec) {
  Namespaces ns;
  bool mount = false;
  for (const Namespace& n : spec.linux().namespaces()) {
    std::optional<int> flag = NamespaceFlag(n.type());
    if (!flag) return BadInput("linux.namespaces", n.type(), "unknown namespace");
    if (*flag == CLONE_NEWNS) mount = true;
    if (!n.path().empty()) {
      if (*flag == CLONE_NEWPID) {
        ns.pid_path = n.path();
      } else {
        ns.joins.emplace_back(*flag, n.path());
      }
      continue;
    }
    if (*flag == CLONE_NEWUSER) ns.new_user = true;
    if (*flag == CLONE_NEWPID) ns.new_pid = true;
    if (*flag == CLONE_NEWCGROUP) {
      ns.new_cgroup = true;
      continue;
    }
    ns.clone_flags |= *flag;
  }
  if (!mount) {
    return BadInput("linux.namespaces", "mount",
                    "brig needs a mount namespace for the container's root");
  }
  std::stable_partition(ns.joins.begin(), ns.joins.end(),
                        [](const auto& j) { return j.first == CLONE_NEWUSER; });
  return ns;
}

// A stage child makes the new namespaces inside those joined by path, and forks the
// container's pid 1 into a new pid namespace (InitArgs::fork_for_pid).
bool Staged(const Namespaces& ns) { return ns.new_pid && !ns.joins.empty(); }

// A namespace joined by path may be brig's own (the host's): a sysctl of that kind would
// then be the host's, which runc refuses too. (One the container makes is checked by
// ParseSpec.)
Status CheckSysctlsStayInside(const Spec& spec, const Namespaces& ns) {
  for (const auto& [key, value] : spec.linux().sysctl()) {
    std::optional<int> owner = SysctlNamespace(key);
    for (const auto& [flag, path] : ns.joins) {
      if (!owner || flag != *owner) continue;
      if (BRIG_TRY(sys::IsOwnNamespace(path, NamespaceProcName(flag)))) {
        return BadInput("linux.sysctl", key,
                        "its namespace " + path + " is the host's, whose value it would set");
      }
    }
  }
  return {};
}

Status WriteIdMaps(pid_t pid, const Spec& spec) {
  BRIG_TRY_CTX(sys::WriteIdMaps(pid, {.uids = IdMappings(spec.linux().uid_mappings()),
                                      .gids = IdMappings(spec.linux().gid_mappings())}),
               "linux.uidMappings, linux.gidMappings");
  return {};
}

// What create has made so far, each an owner that undoes it unless kept: on any failure
// it all goes again, the process first (design.md, invariant 6).
struct Making {
  std::optional<ContainerDir> dir;
  // --systemd-cgroup: the scope unit, stopped again (after the groups are destroyed) unless
  // kept, and its holder until init is in it.
  struct Unit {
    std::string name;
    bool kept = false;
    ~Unit() {
      if (!name.empty() && !kept) (void)cgroup::systemd::Stop(name);
    }
  } unit;
  std::optional<cgroup::systemd::Scope> scope;
  std::unique_ptr<cgroup::Groups> cgroups;
  // A pod sandbox's supervisor (pod/supervisor.h), ended again unless kept.
  struct Supervisor {
    pod::SupervisorRef ref;
    bool kept = false;
    ~Supervisor() {
      if (!kept) (void)pod::Stop(ref);
    }
  } supervisor;
  container::Launched init;  // container/launch.h

  void Keep() {
    dir->Keep();
    unit.kept = true;
    supervisor.kept = true;
    cgroups->Keep();
    init.init.Release();
  }
};

// At kReady: the prestart and createRuntime hooks, then `start` for init, with the state for
// the hooks it runs itself. The state the spec gives these hooks: "created" is "after step 2
// in the lifecycle" (runtime.md), which the container's environment now is.
Status RunParentHooks(const Container& rec, const Spec& spec, container::Channel& sync) {
  std::string state = StateJson(rec, ContainerStatus::kCreated);
  BRIG_TRY(RunHooks(spec.hooks().prestart(), "hooks.prestart", state));
  BRIG_TRY(RunHooks(spec.hooks().create_runtime(), "hooks.createRuntime", state));
  bool inside = spec.hooks().create_container_size() + spec.hooks().start_container_size();
  if (inside && state.size() > container::kMaxPayload) {
    return BadInput("hooks", "", "the container's state is over 4 KiB for its hooks");
  }
  return sync.Send(Msg::kStart, inside ? state : "");
}

// At kCreated: the record takes init's start time, --pid-file its pid, and init is let go.
// Init no longer dies with brig once it closes its end (init.cc): only then may create
// return, and brig exit.
Status Commit(Making& mk, Container& rec, container::Channel& sync, const std::string& pid_file) {
  std::optional<uint64_t> start = sys::StartTimeOf(rec.pid());
  if (!start) return Fail("container init", "", "exited before it was created");
  rec.set_start_time(*start);
  BRIG_TRY(mk.dir->Write(rec));
  if (!pid_file.empty()) {
    BRIG_TRY_CTX(util::ReplaceFile(pid_file, std::to_string(rec.pid())), "--pid-file");
  }
  BRIG_TRY(sync.Send(Msg::kStart));
  return sync.AwaitClose();
}

// The bind mounts' sources, opened by a process of brig's in init's mount namespace as the
// host's root, to init over `sock` (rootfs.h SendMountSources), which then ends.
// Its error, if any, comes back as text on a pipe.
Status HandMountSources(const sys::Child& init, sys::UniqueFd sock, const RootfsPlan& plan) {
  sys::FdPair pipe = BRIG_TRY(sys::FdPair::Pipe(true, "mount sources"));
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "mount sources");
  if (pid == 0) {
    sys::UniqueFd out = pipe.TakeChildEnd();
    Status st = setns(init.pidfd(), CLONE_NEWNS) < 0
                    ? Status(SysError("setns", "the container's mount namespace"))
                    : SendMountSources(sock.get(), plan);
    if (st) _exit(0);
    std::string text = st.error().Render();
    (void)!write(out.get(), text.data(), text.size());
    _exit(1);
  }
  sock.Reset();
  sys::UniqueFd in = pipe.TakeParentEnd();
  pipe.TakeChildEnd().Reset();
  std::string error;
  int status = sys::ReadAllAndReap(in.get(), pid, error);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail("mount sources", "",
                error.empty() ? "could not be opened in the container's mount namespace" : error);
  }
  return {};
}

// Drives init through the order drawn above, until it waits for `start`.
Status Handshake(Making& mk, Container& rec, const Spec& spec, const Namespaces& ns,
                 const CreateOptions& o, const RootfsPlan& plan, sys::UniqueFd mount_sources) {
  container::Launched& l = mk.init;
  HandListenersToAgent(l.sync, rec, ContainerStatus::kCreating);
  BRIG_TRY(container::DriveToReady(l.sync, l.init, Staged(ns), [&]() -> Status {
    if (ns.new_user) BRIG_TRY(WriteIdMaps(l.init.pid(), spec));
    if (mount_sources) BRIG_TRY(HandMountSources(l.init, std::move(mount_sources), plan));
    log::Debug("init in its cgroups, id map written");
    return {};
  }));
  rec.set_pid(l.init.pid());
  BRIG_TRY(RunParentHooks(rec, spec, l.sync));
  // Init runs the createContainer hooks before it says kCreated.
  container::Message m =
      BRIG_TRY(l.sync.Next(StepWithHooksMs({&spec.hooks().create_container()})));
  if (m.type != Msg::kCreated) {
    return Fail("sync", std::string(container::MsgName(m.type)), "message out of order",
                ErrorKind::kInternal);
  }
  BRIG_TRY(Commit(mk, rec, l.sync, o.pid_file));
  log::Debug("created: pid ", rec.pid());
  return {};
}

// What create takes from the bundle, every property checked before anything is made.
struct Bundle {
  Spec spec;
  std::string rootfs;  // root.path, resolved
  Namespaces ns;
  container::ProcessSpec process;
  std::optional<pod::Held> pod;  // a runtime handler's pod (pod/harden.h)
};

// The id and --preserve-fds checked, then the bundle read: the first step of Create and
// PlanCreate alike.
Result<Bundle> ReadBundle(const CreateOptions& o) {
  BRIG_TRY(CheckId(o.id));
  BRIG_TRY(CheckPreserved(o.preserve_fds));
  Bundle b;
  b.spec = BRIG_TRY(LoadSpec(o.bundle));
  b.pod = BRIG_TRY(pod::HeldBy(o.root, b.spec));
  if (b.pod) BRIG_TRY(pod::HardenSpec(b.spec));
  const Spec& spec = b.spec;
  if (!spec.has_process()) return BadInput("config.json", "process", "missing");
  std::string root_path = spec.root().path();
  if (root_path.empty() || root_path[0] != '/') root_path = o.bundle + "/" + root_path;
  std::optional<std::string> rootfs = util::RealPath(root_path);
  struct stat st;
  if (!rootfs || stat(rootfs->c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) {
    return BadInput("root.path", root_path, "not a directory");
  }
  b.rootfs = *rootfs;
  b.ns = BRIG_TRY(PlanNamespaces(spec));
  BRIG_TRY(CheckSysctlsStayInside(spec, b.ns));
  BRIG_TRY(CheckSelinuxLabel("linux.mountLabel", spec.linux().mount_label()));
  std::optional<brig::v1::SeccompPolicy> policy;
  if (spec.linux().has_seccomp()) policy = spec.linux().seccomp();
  b.process = BRIG_TRY(PrepareProcess(spec.process(), policy));
  if (b.pod) b.process.profile_seccomp = BRIG_TRY(pod::ProfileFilter(*b.pod));
  b.process.preserved_fds = o.preserve_fds;
  log::Debug("config.json read, process prepared");
  if (spec.process().terminal() && o.console_socket.empty() && o.console_fd < 0) {
    return BadInput("process.terminal", "true",
                    "needs --console-socket to hand the terminal to (or a run without --detach, "
                    "which relays it)");
  }
  return b;
}

bool Has(const Namespaces& ns, bool made, int flag) {
  return made || std::any_of(ns.joins.begin(), ns.joins.end(),
                             [flag](const auto& j) { return j.first == flag; });
}

// What PlanRootfs takes for the bundle, whose groups are `cgroup_dirs`.
RootfsOptions FsOptions(const Bundle& b, const CreateOptions& o,
                        const std::vector<std::string>& cgroup_dirs) {
  const Namespaces& ns = b.ns;
  return {.rootfs = b.rootfs,
          .bundle = o.bundle,
          .userns = Has(ns, ns.new_user, CLONE_NEWUSER) || !util::InHostUserNamespace(),
          .cgroupns = Has(ns, ns.new_cgroup, CLONE_NEWCGROUP),
          .cgroup_dirs = cgroup_dirs};
}

// Container init's arguments but its descriptors, which Create opens.
InitArgs ArgsFor(const Bundle& b, const CreateOptions& o, const cgroup::Groups& cgroups) {
  const Namespaces& ns = b.ns;
  InitArgs args;
  args.spec = &b.spec;
  args.process = &b.process;
  args.fs = FsOptions(b, o, cgroups.dirs());
  args.preserve_fds = o.preserve_fds;
  args.start_wait_ms =
      StepWithHooksMs({&b.spec.hooks().prestart(), &b.spec.hooks().create_runtime()});
  args.new_cgroupns = ns.new_cgroup;
  args.no_pivot = o.no_pivot;
  args.new_keyring = !o.no_new_keyring;
  if (!ns.joins.empty()) {
    // Joined namespaces come first, then the new ones are made from inside them.
    args.joins = ns.joins;
    args.unshare_flags = ns.clone_flags & ~CLONE_NEWPID;
    args.fork_for_pid = Staged(ns);
  }
  return args;
}

std::bitset<1024> g_inherited;

}  // namespace

void RecordInheritedFds() {
  for (int fd = 3; fd < static_cast<int>(g_inherited.size()); ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) g_inherited.set(static_cast<size_t>(fd));
  }
}

bool InheritedFd(int fd) {
  return fd >= 0 && fd < static_cast<int>(g_inherited.size()) &&
         g_inherited.test(static_cast<size_t>(fd));
}

Status CheckPreserved(int n) {
  for (int fd = 3; fd < 3 + n; ++fd) {
    if (!InheritedFd(fd)) {
      return BadInput("--preserve-fds", std::to_string(n),
                      "fd " + std::to_string(fd) + " was not open when brig started");
    }
  }
  return {};
}

Result<CreatePlan> PlanCreate(const CreateOptions& o) {
  Bundle b = BRIG_TRY(ReadBundle(o));
  CreatePlan p;
  // With --systemd-cgroup, the groups of the scope systemd would make.
  std::string path =
      o.systemd_cgroup
          ? BRIG_TRY(cgroup::systemd::ParsePath(b.spec.linux().cgroups_path(), o.id)).path
          : BRIG_TRY(CleanCgroupsPath(b.spec.linux().cgroups_path(), o.id));
  p.cgroups = BRIG_TRY(cgroup::Groups::Plan(path, b.spec.linux().resources()));
  if (!o.systemd_cgroup && BRIG_TRY(GoesWithoutCgroups(b.spec, p.cgroups))) p.cgroups = {};
  p.rootfs_plan = BRIG_TRY(PlanRootfs(b.spec, FsOptions(b, o, p.cgroups.dirs)));
  p.spec = std::move(b.spec);
  p.rootfs = std::move(b.rootfs);
  p.process = std::move(b.process);
  return p;
}

namespace {

// The container's directory and record, then its cgroups, each noted in the record before it
// is made.
Status MakeRecordAndCgroups(const Bundle& b, const CreateOptions& o, Making& mk, Container& rec) {
  mk.dir = BRIG_TRY(ContainerDir::Create(o.root, o.id));
  rec.set_id(o.id);
  rec.set_bundle(o.bundle);
  rec.set_rootfs(b.rootfs);
  rec.set_created(log::Timestamp(log::Now()));
  *rec.mutable_config() = b.spec;
  std::optional<cgroup::systemd::UnitPath> unit;
  if (o.systemd_cgroup) {
    unit = BRIG_TRY(cgroup::systemd::ParsePath(b.spec.linux().cgroups_path(), o.id));
    rec.set_systemd_unit(unit->unit);
  }
  BRIG_TRY(mk.dir->Write(rec));
  if (unit) {
    mk.unit.name = unit->unit;
    mk.scope = BRIG_TRY(cgroup::systemd::Scope::Start(*unit, b.spec.linux().resources()));
  }
  if (!unit && (util::Rootless() || util::NamespacedRoot())) {
    std::string path = BRIG_TRY(CleanCgroupsPath(b.spec.linux().cgroups_path(), o.id));
    if (BRIG_TRY(GoesWithoutCgroups(
            b.spec, BRIG_TRY(cgroup::Groups::Plan(path, b.spec.linux().resources()))))) {
      mk.cgroups = cgroup::Groups::Existing({}, {});
      log::Debug("record made; no cgroups");
      return {};
    }
  }
  mk.cgroups = BRIG_TRY(CreateCgroups(
      b.spec, o.id,
      [&](const std::vector<cgroup::Groups::Noted>& dirs) {
        for (const auto& d : dirs) {
          *(d.owned ? rec.add_cgroups() : rec.add_joined_cgroups()) = d.dir;
        }
        return mk.dir->Write(rec);
      },
      unit ? &unit->path : nullptr));
  log::Debug("record and cgroups made: ", rec.cgroups_size(), " made, ", rec.joined_cgroups_size(),
             " joined");
  return {};
}

// The descriptors init is given (and its end of the sync socket, container::CloneInit's),
// each above the fds --preserve-fds hands the container.
struct InitFds {
  sys::UniqueFd fifo;     // exec.fifo's read end
  sys::UniqueFd console;  // --console-socket, connected, or brig's own; none without a terminal
};

Result<InitFds> OpenInitFds(const Making& mk, const Spec& spec, const CreateOptions& o) {
  const int min_fd = 3 + o.preserve_fds;
  InitFds f;
  std::string fifo = mk.dir->Path(kExecFifo);
  if (mkfifo(fifo.c_str(), 0600) < 0) return SysError("mkfifo", fifo);
  f.fifo = sys::UniqueFd(open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!f.fifo.valid()) return SysError("open", fifo);
  f.fifo = BRIG_TRY(sys::MoveAbove(std::move(f.fifo), min_fd));
  if (spec.process().terminal() && o.console_fd >= 0) {
    f.console = sys::UniqueFd(fcntl(o.console_fd, F_DUPFD_CLOEXEC, min_fd));
    if (!f.console) return SysError("fcntl", "terminal");
  } else if (spec.process().terminal()) {
    f.console =
        BRIG_TRY(sys::MoveAbove(BRIG_TRY(ConnectConsoleSocket(o.console_socket)), min_fd));
  }
  return f;
}

}  // namespace

Result<pid_t> Create(const CreateOptions& o) {
  Bundle b = BRIG_TRY(ReadBundle(o));
  const Namespaces& ns = b.ns;
  Making mk;
  Container rec;
  BRIG_TRY(MakeRecordAndCgroups(b, o, mk, rec));
  if (b.pod && b.pod->plan.pod.sandbox) {
    mk.supervisor.ref = BRIG_TRY(pod::Start(*b.pod, b.spec.annotations(), pod::NetnsPath(b.spec)));
    rec.set_supervisor_pid(mk.supervisor.ref.pid);
    rec.set_supervisor_start_time(mk.supervisor.ref.start_time);
    BRIG_TRY(mk.dir->Write(rec));
  }
  InitFds fds = BRIG_TRY(OpenInitFds(mk, b.spec, o));
  if (!ns.pid_path.empty()) {
    sys::UniqueFd pidns(open(ns.pid_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!pidns.valid() || setns(pidns.get(), CLONE_NEWPID) < 0) {
      return SysError("setns", "linux.namespaces pid " + ns.pid_path);
    }
  }
  InitArgs args = ArgsFor(b, o, *mk.cgroups);
  RootfsPlan rootfs_plan = BRIG_TRY(PlanRootfs(b.spec, args.fs));
  args.rootfs_plan = &rootfs_plan;
  // Sources the root of a user namespace may not reach are opened by brig, and id-mapped
  // copies made by it, where init makes its own mount namespace (one joined by path resolves
  // them itself).
  sys::UniqueFd sources, sources_child;
  if (!(ns.clone_flags & CLONE_NEWNS) && HasIdmappedSources(rootfs_plan)) {
    return BadInput("mounts", "",
                    "id-mapped mounts need a mount namespace of the container's own, not one "
                    "joined by path");
  }
  if ((ns.clone_flags & CLONE_NEWNS) &&
      (ns.new_user ? HasBindSources(rootfs_plan) : HasIdmappedSources(rootfs_plan))) {
    sys::FdPair pair = BRIG_TRY(sys::FdPair::SocketPair(SOCK_SEQPACKET, "mount sources"));
    sources = pair.TakeParentEnd();
    sources_child = BRIG_TRY(sys::MoveAbove(pair.TakeChildEnd(), 3 + o.preserve_fds));
    args.mount_sources_fd = sources_child.get();
  }
  args.fifo_fd = fds.fifo.get();
  args.console_fd = fds.console.get();
  std::vector<cgroup::TasksFile> tasks = BRIG_TRY(mk.cgroups->OpenV1Tasks());
  args.cgroup_tasks = &tasks;
  // Cloned into its new namespaces, but where some are joined by path: it makes them from
  // inside those (ArgsFor).
  mk.init = BRIG_TRY(container::CloneInit(
      {.namespaces = ns.joins.empty() ? static_cast<uint64_t>(ns.clone_flags) : 0,
       .cgroup_v2 = mk.cgroups->v2_fd(),
       .flow = container::Flow::kContainer,
       .who = "container init",
       .min_fd = 3 + o.preserve_fds,
       .staged = Staged(ns)},
      [&](int sync_fd) {
        args.sync_fd = sync_fd;
        ContainerInit(args);
      }));
  // Init is in the scope's group now: its holder goes.
  if (mk.scope) mk.scope->Release();
  fds.fifo.Reset();
  fds.console.Reset();
  sources_child.Reset();
  tasks.clear();
  BRIG_TRY(Handshake(mk, rec, b.spec, ns, o, rootfs_plan, std::move(sources)));
  mk.Keep();
  return rec.pid();
}

}  // namespace brig::oci
