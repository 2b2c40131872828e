// The confined sandbox's session: prepare, launch through the sync protocol, serve, collect.
// Everything that can be refused is refused in Prepare, before clone3; after it, every path
// ends in reaping brig init (sys::Child), so no process of the sandbox survives brig.
#include "container/session.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <malloc.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "container/channel.h"
#include "container/exec_record.h"
#include "container/init.h"
#include "container/launch.h"
#include "egress/denials.h"
#include "fs/export.h"
#include "log/log.h"
#include "net/sealed_net.h"
#include "security/init_filter.h"
#include "security/seccomp_cache.h"
#include "sys/id_map.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"

namespace brig::container {
namespace {

constexpr uint64_t kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                 CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

// Maps the sandbox user to its host ids: the sandbox's own (security/sandbox_ids.h), or the
// workspace's owner where the mount plan could not map the trees it writes to them
// (fs::MountPlan's sandbox_uid). One id each, never host 0. setgroups(2) is denied first
// (it must be, before gid_map): nothing inside can drop a group to get past a file's
// group-deny permissions. Init came without supplementary groups (CloneInit).
Status WriteIdMaps(pid_t pid, uid_t uid, gid_t gid) {
  if (uid == 0 || gid == 0) {
    return Fail("id map", "", "refusing to map host root", ErrorKind::kInternal);
  }
  return sys::WriteIdMaps(pid, {.uids = {{.inside = config::kSandboxUid, .host = uid}},
                                .gids = {{.inside = config::kSandboxGid, .host = gid}},
                                .deny_setgroups = true});
}

}  // namespace

Session::Session(const config::Sandbox& sb)
    : sb_(sb), started_(std::chrono::steady_clock::now()) {}

Result<std::unique_ptr<Session>> Session::Prepare(const config::Sandbox& sb) {
  std::unique_ptr<Session> s(new Session(sb));
  if (sb.isolated) {
    s->seccomp_ =
        BRIG_TRY(security::CompileSeccompFile(sb.seccomp_policy, security::SeccompCacheDir()));
    s->init_filter_ = BRIG_TRY(security::CompileInitFilter(security::SeccompCacheDir()));
    log::Debug("seccomp: '", sb.seccomp_policy, "' and init's filter compiled");
  }
  s->signals_ = BRIG_TRY(supervise::HeldSignals::Hold({SIGTERM, SIGINT, SIGHUP}));
  s->record_ = BRIG_TRY(state::Record::Create(state::SandboxDir(), sb.id));
  BRIG_TRY(s->Describe());
  if (sb.isolated && util::Rootless()) {
    std::string warning;
    BRIG_TRY(security::EnterCallersNamespace(&warning));
    if (!warning.empty()) s->out_.warnings.push_back(warning);
  }
  if (sb.isolated) {
    s->ids_ = BRIG_TRY(TakeSandboxIds());
    log::Debug("host ids: uid ", s->ids_.uid(), ", gid ", s->ids_.gid());
    BRIG_TRY(s->PrepareSandbox());
  }
  if (util::Rootless() && sb.cgroup_layout.v2) {
    BRIG_TRY(cgroup::TakeDelegated(sb.cgroup_layout, sb.cgroup_plan, sb.id));
  }
  s->group_ = BRIG_TRY(cgroup::Groups::ForSandbox(
      sb.cgroup_layout, sb.cgroup_plan, sb.id, sb.limits,
      [&record = s->record_](const std::vector<cgroup::Groups::Noted>& dirs) -> Status {
        for (const auto& d : dirs) BRIG_TRY(record.Add("cgroup", d.dir));
        return {};
      }));
  log::Debug("cgroups made for ", sb.id);
  if (sb.network && util::Rootless()) {
    s->net_ = net::SealedNet::Prepare(*sb.network);
  } else if (sb.network) {
    s->net_ = BRIG_TRY(net::SandboxNet::Prepare(sb.id, *sb.network, s->record_));
  }
  if (sb.network) log::Debug("network prepared: port and lease for ", sb.id);
  s->stdio_ =
      BRIG_TRY(supervise::Stdio::Prepare(sb.output_limit, sb.terminal_codeset, sb.terminal));
  return s;
}

Result<security::SandboxIds> TakeSandboxIds() {
  if (util::Rootless()) return security::SandboxIds::Caller();
  security::IdRange range = BRIG_TRY(security::ReadIdRange());
  return security::SandboxIds::Take(range);
}

Result<fs::MountPlan> PlanFilesystem(const config::Sandbox& sb, const security::SandboxIds& ids,
                                     state::Record& record, broker::Listeners& listeners,
                                     bool plan_only) {
  fs::Spec spec = sb.fs;
  spec.owner_uid = sb.host_uid;
  spec.owner_gid = sb.host_gid;
  spec.sandbox_uid = ids.uid();
  spec.sandbox_gid = ids.gid();
  fs::MountPlan plan = BRIG_TRY_CTX(fs::PrepareMountPlan(spec, record, plan_only), "filesystem");
  log::Debug("mount plan prepared: ", plan.steps.size(), " steps; the sandbox user is host uid ",
             plan.sandbox_uid, plan.sandbox_uid == ids.uid() ? "" : " (its files' owner)");
  if (sb.brokers.empty()) return plan;
  BRIG_TRY_CTX(broker::ListenUnix(sb.brokers, listeners), "brokers");
  for (broker::Placed& p : listeners.placed) {
    plan.AddFileBind(p.path, std::move(p.tree), std::move(p.source));
  }
  listeners.placed.clear();
  return plan;
}

// The mount plan, and the brokers' unix sockets bound and placed in it.
Status Session::PrepareSandbox() {
  plan_ = BRIG_TRY(PlanFilesystem(sb_, ids_, record_, broker_listeners_, false));
  return {};
}

manifest::Inputs Session::ManifestInputs() const {
  return manifest::Inputs{sb_, plan_, sb_.isolated ? &seccomp_ : nullptr,
                          net_ ? net_->port_rules() : nullptr};
}

Session::~Session() {
  if (!collected_) (void)Collect();
  if (keep_record_) record_.Keep();
}

// What `brig list` shows of the sandbox while it runs (state/record.h, kAboutKind).
Status Session::Describe() {
  // A profile given by a path is shown whole: brig list runs in another directory.
  std::string profile = sb_.profile;
  if (profile.find('/') != std::string::npos) {
    profile = util::RealPath(sb_.profile_path).value_or(sb_.profile_path);
  }
  BRIG_TRY(record_.Describe({{"name", sb_.name},
                             {"profile", profile},
                             {"posture", sb_.posture_name},
                             {"brig_pid", std::to_string(getpid())}}));
  if (!sb_.isolated) return {};
  // What brig exec takes to join the sandbox (exec_record.h).
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return SysError("getcwd", "brig");
  for (const auto& [key, value] : ExecAbout(sb_, seccomp_, cwd)) {
    BRIG_TRY(record_.Add(state::kAboutKind, key + "=" + value));
  }
  return {};
}

bool Session::Launch() {
  if (!(sb_.isolated ? LaunchInit() : LaunchUnconfined())) return false;
  if (auto s = record_.Add(state::kAboutKind, "pid=" + std::to_string(child_.pid())); !s) {
    Warn(std::move(s).error());
  }
  // Checked by brig exec against the pid's process before it joins it: a pid reused since
  // init died is never taken for it.
  std::optional<uint64_t> start = sys::StartTimeOf(child_.pid());
  if (!sb_.isolated || !start) return true;
  auto [key, value] = InitStartAbout(*start);
  if (auto s = record_.Add(state::kAboutKind, key + "=" + value); !s) Warn(std::move(s).error());
  return true;
}

// brig's own failure: the sandbox is ended, the error is the outcome.
bool Session::Failed(Error e) {
  child_.KillAndReap();
  if (!out_.error) out_.error = std::move(e);
  return false;
}

// Brig init, cloned (container/launch.h) into the sandbox's namespaces, which belong to its
// own host uid, not to root, and into its v2 group. Without root brig is that uid already.
Result<Launched> Session::CloneInit() {
  std::vector<cgroup::TasksFile> tasks = BRIG_TRY(group_->OpenV1Tasks());
  std::optional<uid_t> owner;
  if (!util::Rootless()) owner = ids_.uid();
  Launched l = BRIG_TRY(container::CloneInit(
      {.namespaces = kNamespaces,
       .cgroup_v2 = group_->v2_fd(),
       .owner = owner,
       .flow = Flow::kSandbox,
       .who = "brig init"},
      [&](int sync_fd) {
        stdio_->ApplyInChild();
        InitMain(InitArgs{&sb_, &plan_, &seccomp_, &init_filter_, sync_fd,
                          net_ ? &net_->address() : nullptr, &tasks});
      }));
  plan_.steps.clear();  // the detached trees now live on only in the child
  return l;
}

bool Session::LaunchInit() {
  auto launched = CloneInit();
  if (!launched) return Failed(std::move(launched).error());
  child_ = std::move(launched->init);
  sync_ = std::move(launched->sync);
  if (auto s = stdio_->Started(); !s) return Failed(std::move(s).error());
  if (auto s = DriveToReady(sync_, child_, false, [this] { return AnswerIdMap(); }); !s) {
    // Init failed (and said why) or went silent; either way it ends here.
    log::Debug("sync: init failed: ", s.error().Render());
    child_.KillAndReap();
    if (group_->OomKills().value_or(0) > 0) {
      return Failed(Fail("brig init", "", "killed by the OOM killer while setting up: the "
                         "memory limit is too small for the sandbox to start"));
    }
    return Failed(std::move(s).error());
  }
  if (auto s = StartServices(); !s) return Failed(std::move(s).error());
  if (auto s = sync_.Send(Msg::kStart); !s) return Failed(std::move(s).error());
  log::Debug("sync: Start sent; serving");
  // What setting up used and freed (the profile, the plan, libnftables' scripts) goes back
  // to the kernel: the supervisor lives as long as the sandbox, one per sandbox.
  malloc_trim(0);
  started_workload_ = true;
  return true;
}

// The id maps (and eth0) while init waits (it is in all its groups by then: it joined
// the v1 ones itself before it asked).
Status Session::AnswerIdMap() {
  // Held from now, for the interface and the brokers' ports: once init has its ids it is no
  // longer dumpable, and without root brig may then no longer open what /proc shows of it.
  if (net_ || !sb_.brokers.empty()) {
    std::string ns = "/proc/" + std::to_string(child_.pid()) + "/ns/net";
    netns_.Reset(open(ns.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns_) return SysError("open", ns);
  }
  // And the pid namespace's identity, for KillAll where no cgroup kills through.
  std::string pidns = "/proc/" + std::to_string(child_.pid()) + "/ns/pid";
  if (struct stat st; stat(pidns.c_str(), &st) == 0) pidns_ = st;
  BRIG_TRY(WriteIdMaps(child_.pid(), plan_.sandbox_uid, plan_.sandbox_gid));
  log::Debug("id map written: ", config::kSandboxUid, " -> ", plan_.sandbox_uid);
  if (net_) BRIG_TRY(net_->Attach(netns_.get()));
  return {};
}

// The resolver, proxy and brokers serve from before the workload's first packet; the
// brokers' TCP ports are made in the sandbox's network namespace now that init has brought
// loopback up.
Status Session::StartServices() {
  supervise::Services::Where where{
      .brokers = std::move(broker_listeners_),
      .broker_netns = netns_.get(),
      .attribution = sb_.id + "/" + std::to_string(sb_.attempt),
      .denied = [this](const std::string& name, const v1::Denial& d) { OnDenied(name, d); }};
  if (net_) {
    where.listeners = &net_->listeners();
    where.peer = net_->peer();
    where.subnet = net_->address().subnet;
  }
  services_ = BRIG_TRY(supervise::Services::Start(
      {.egress = sb_.egress, .budget = sb_.egress_budget.value_or(0), .brokers = sb_.brokers},
      std::move(where), [this](v1::AuditEvent e) { AuditEvent(std::move(e)); }));
  return {};
}

void Session::AuditEvent(v1::AuditEvent e) {
  if (auto s = audit::Append(sb_.audit_path, sb_.id, std::move(e), sb_.name); !s) {
    Warn(std::move(s).error());
  }
}

// A warning that repeats the last one (an audit log that keeps failing) is said once.
void Session::Warn(Error e) {
  std::string line = e.Render();
  if (out_.warnings.empty() || out_.warnings.back() != line) out_.warnings.push_back(line);
}

void Session::Serve() {
  if (!child_.held()) return;
  auto loop = supervise::Loop::Create();
  Status s = loop ? Watch(*loop) : Status(std::move(loop).error());
  if (s) s = loop->Run();
  if (!s) Failed(std::move(s).error());
}

// Everything the loop serves: the sandbox's end, its deadline, the caller's signals, a v1
// OOM kill, the sync socket, the output relay, the resolver and proxy, the brokers.
Status Session::Watch(supervise::Loop& loop) {
  BRIG_TRY(loop.Watch(child_.pidfd(), [this, &loop] {
    sb_.isolated ? OnInitGone() : OnUnconfinedGone();
    loop.Stop();
  }));
  BRIG_TRY(loop.At(started_ + sb_.timeout, [this] {
    out_.timed_out = true;
    KillAll();
  }));
  BRIG_TRY(loop.Watch(signals_, [this, &loop](int sig) { OnSignal(loop, sig); }));
  if (int oom = group_->oom_event_fd(); oom >= 0) {
    // v1 has no memory.oom.group: one OOM kill ends the whole sandbox here instead.
    BRIG_TRY(loop.Watch(oom, [this, &loop, oom] {
      out_.oom_killed = true;
      KillAll();
      loop.Unwatch(oom);
    }));
  }
  if (sync_) BRIG_TRY(loop.Watch(sync_.fd(), [this, &loop] {
    if (!HandleSyncMessage()) loop.Unwatch(sync_.fd());
  }));
  BRIG_TRY(loop.Watch(stdio_->fd(), [this] { stdio_->Handle(); }));
  BRIG_TRY(services_.Watch(loop));
  return {};
}

// The caller's signal goes to the sandbox, which has the grace period to end; a second
// one, or the grace period's end, kills it.
void Session::OnSignal(supervise::Loop& loop, int sig) {
  auto kill = [this] {
    out_.killed_for_signal = pending_signal_;
    KillAll();
  };
  if (pending_signal_ != 0) return kill();
  pending_signal_ = sig;
  (void)child_.Signal(sig);
  auto grace_ended = [this, kill] {
    out_.grace_ended = true;
    kill();
  };
  if (auto t = loop.At(std::chrono::steady_clock::now() + sb_.grace, grace_ended); !t) kill();
}

// A name's first refusal for a reason, as it happens (issue 32): said in the summary's
// words, at most as many lines as the summary has for names, so that a client that
// retries quietly does not hide why; with --deny stop, the first one ends the phase.
void Session::OnDenied(const std::string& name, const v1::Denial& d) {
  if (collected_) return;  // the services' close, at teardown: the summary tells
  auto say = [this](const std::string& line) {
    stdio_->Say(line);
    log::Mirror(log::Level::kWarn, line);
  };
  if (denials_said_ < egress::kMaxDenialLines) {
    say(egress::DenialLine(name, d));
  } else if (denials_said_ == egress::kMaxDenialLines) {
    say("further refusals are in the summary at exit");
  }
  ++denials_said_;
  if (!sb_.deny_stop || out_.denial_stop || !egress::StopsThePhase(d.reason())) return;
  v1::DenialStop& stop = out_.denial_stop.emplace();
  stop.set_name(name);
  stop.set_reason(d.reason());
  stop.set_detail(d.detail());
  KillAll();
}

// The cgroup kills every process of the sandbox at once. Without one, each process of its
// pid namespace is killed (killing brig init alone would take the rest only later); an
// unconfined command leads its own process group (it called setsid), which is as far as
// no isolation reaches.
void Session::KillAll() {
  if (group_->Kill()) return;
  if (!sb_.isolated) (void)kill(-child_.pid(), SIGKILL);
  if (pidns_) (void)sys::SignalPidNamespace(*pidns_, SIGKILL);
  (void)child_.Signal(SIGKILL);
}

// Applies one message from init. False once the socket has nothing more to say.
bool Session::HandleSyncMessage() {
  auto m = sync_.Poll();
  if (!m) {
    if (!out_.error) out_.error = std::move(m).error();
    return true;
  }
  if (!*m) return false;
  const Message& msg = **m;
  if (msg.type == Msg::kWorkloadExit) {
    out_.workload_status = msg.err;
    out_.left_killed = LeftKilled(msg);
  }
  if (msg.type == Msg::kError && !out_.error) out_.error = DecodeError(msg);
  return true;
}

// Init is gone, and with it every process of its pid namespace. What it said last, then
// its reaping.
void Session::OnInitGone() {
  while (HandleSyncMessage()) {
  }
  auto exit = child_.Reap();
  log::Debug("teardown: brig init reaped");
  if (!exit) return (void)Failed(std::move(exit).error().Wrap("brig init"));
  out_.usage = exit->usage;
  if (exit->info.si_code == CLD_KILLED || exit->info.si_code == CLD_DUMPED) {
    out_.init_signal = exit->info.si_status;
  }
}

Outcome Session::Collect() {
  collected_ = true;
  child_.KillAndReap();  // only if Serve did not reap it: brig's own failure
  out_.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  if (started_workload_) {
    // Every writer is gone with the sandbox: the rest of its output, then the terminal.
    stdio_->Drain();
    out_.output = stdio_->Summary();
  }
  if (stdio_) stdio_->RestoreTerminal();
  TearDown();
  return std::move(out_);
}

// The host resources in teardown order (session.h), each one's failure a warning that
// leaves the record for brig gc. The workload's outcome stands whatever fails here.
void Session::TearDown() {
  // Every connection, both sides, ends with the sandbox. The network goes first: closing
  // brig's netfilter socket at exit waits for the kernel to retire this last transaction
  // (an RCU grace period), which the cgroup's removal and the result's writing then
  // overlap.
  services_.Close();
  out_.network = services_.Summary();
  auto left = [this](std::string_view what, Status s) {
    log::Debug("teardown: ", what, s ? "" : ": ", s ? "" : s.error().Render());
    if (s) return;
    out_.warnings.push_back(s.error().Render() + " (brig gc removes what is left)");
    keep_record_ = true;
  };
  if (net_) left("network", net_->Teardown());
  if (started_workload_) {
    out_.cgroup_usage = group_->ReadStats();
    out_.oom_killed |= out_.cgroup_usage.oom_kills.value_or(0) > 0;
  }
  if (group_) left("cgroups", group_->Destroy());
  // The sandbox is gone; its copy's changes are still in brig's scratch space.
  if (started_workload_ && !sb_.fs.export_changes.empty()) {
    if (auto s = fs::ExportChanges(record_, plan_.copy_scratch.get(), plan_.copy_merged.get(),
                                   sb_.fs.workspace, sb_.fs.export_changes, plan_.protected_paths,
                                   plan_.hidden, *sb_.fs.export_owner);
        !s) {
      out_.export_error = std::move(s).error();
    }
    log::Debug("teardown: changes exported", out_.export_error ? " (failed)" : "");
  }
  left("mount plan", plan_.Finish());
}

}  // namespace brig::container
