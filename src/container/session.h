// One sandbox's life on the host, from its resolved plan (config::Sandbox, probed) to its
// outcome. `brig run` reads top to bottom:
//
//   Session::Prepare  everything that can fail before a process exists (session.cc)
//   Launch            brig init cloned and driven through the sync protocol to Ready, the
//                     resolver, proxy and brokers started, the workload let go (sync.h);
//                     without isolation, the command cloned instead (unconfined.cc)
//   Serve             the event loop until the sandbox's last process is gone
//   Collect           output, network summary, usage, the export; every host resource
//                     released in teardown order
//
// then the CLI writes the result (noting its temp in record()) and the session goes: its
// record is removed, or kept for brig gc if something could not be released.
#pragma once

#include <chrono>
#include <memory>

#include "broker/listen.h"
#include "cgroup/groups.h"
#include "config/sandbox.h"
#include "container/channel.h"
#include "container/launch.h"
#include "container/outcome.h"
#include "fs/mount_plan.h"
#include "manifest/manifest.h"
#include "net/network.h"
#include "security/sandbox_ids.h"
#include "security/seccomp.h"
#include "state/record.h"
#include "supervise/loop.h"
#include "supervise/services.h"
#include "supervise/stdio.h"
#include "sys/child.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::container {

// The sandbox's host ids, from brig's range (security/sandbox_ids.h), held until the
// result is destroyed.
Result<security::SandboxIds> TakeSandboxIds();

// The sandbox's mount plan for `sb`, its trees mapped to `ids` (fs::Spec's sandbox_uid),
// with its brokers' unix sockets (bound in `listeners`) placed in it. Session::Prepare
// makes it, and brig run --dry-run with `plan_only` (fs::PrepareMountPlan), so the manifest
// of a dry run lists the same steps.
Result<fs::MountPlan> PlanFilesystem(const config::Sandbox& sb, const security::SandboxIds& ids,
                                     state::Record& record, broker::Listeners& listeners,
                                     bool plan_only);

class Session {
 public:
  // An Error means nothing ran and nothing is left on the host (exit 125).
  static Result<std::unique_ptr<Session>> Prepare(const config::Sandbox& sb);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  // False: the workload did not start, and the outcome says why.
  bool Launch();
  // Returns once the sandbox's first process (brig init, or the unconfined command) is
  // gone and reaped; with it, every process of the sandbox.
  void Serve();
  // Once: what the sandbox did and left, its host resources released.
  Outcome Collect();
  // Whatever brig makes on the host for this sandbox is noted here first (brig gc).
  state::Record& record() { return record_; }
  // What was prepared, as the manifest lists it; only before Launch, which hands the mount
  // plan's trees to brig init.
  manifest::Inputs ManifestInputs() const;

 private:
  explicit Session(const config::Sandbox& sb);
  Status PrepareSandbox();
  Status Describe();
  // session.cc: the confined sandbox.
  bool LaunchInit();
  Result<Launched> CloneInit();
  Status AnswerIdMap();
  Status StartServices();
  bool Failed(Error e);
  bool HandleSyncMessage();
  void OnInitGone();
  // unconfined.cc: a profile without isolation, the command as brig's own child.
  bool LaunchUnconfined();
  void OnUnconfinedGone();
  // Both.
  Status Watch(supervise::Loop& loop);
  void OnSignal(supervise::Loop& loop, int sig);
  void KillAll();
  void OnDenied(const std::string& name, const v1::Denial& d);
  void AuditEvent(v1::AuditEvent e);
  void Warn(Error e);
  void TearDown();

  const config::Sandbox& sb_;
  const std::chrono::steady_clock::time_point started_;
  Outcome out_;
  bool started_workload_ = false, collected_ = false, keep_record_ = false;
  int pending_signal_ = 0;  // forwarded to the sandbox; its grace period is running
  size_t denials_said_ = 0;  // refusals printed as they happened (OnDenied)
  security::SeccompProgram seccomp_, init_filter_;

  // The host resources, in the order they are made. Members are destroyed in reverse, which
  // is the teardown order (TearDown does the same, explicitly, to see each one's error):
  // the child first, so nothing of the sandbox runs while the rest goes; the services
  // before the network whose listeners they use; the network and the cgroups before the
  // mount plan's scratch (an export reads it after the sandbox is gone); the record after
  // everything it notes; the held signals last, so none ends brig in between. The host ids
  // are let go only once nothing of the sandbox runs.
  supervise::HeldSignals signals_;
  state::Record record_;
  security::SandboxIds ids_;
  fs::MountPlan plan_;
  broker::Listeners broker_listeners_;
  std::unique_ptr<cgroup::Groups> group_;
  std::unique_ptr<net::Network> net_;
  // The sandbox's network namespace, opened while init waits where an interface or a
  // broker needs it, and only then.
  sys::UniqueFd netns_;
  // A stat of brig init's pid namespace, taken while init waits: KillAll's way to every
  // process of the sandbox where no cgroup of brig's holds them.
  std::optional<struct stat> pidns_;
  std::unique_ptr<supervise::Stdio> stdio_;
  Channel sync_;  // brig's end of the sync socket
  // Shared by the proxy and the brokers, which hold it: made before them, gone after.
  supervise::Services services_;
  sys::Child child_;  // brig init, or the unconfined command
};

}  // namespace brig::container
