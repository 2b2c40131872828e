// brig init: the child half of `brig run`. Pid 1 of the sandbox. Sets the sandbox up in the
// order sync.h draws, forks the workload, then reaps, forwards signals and reports the
// workload's exit. Never returns.
#pragma once

#include "cgroup/cgroup.h"
#include "config/sandbox.h"
#include "fs/mount_plan.h"
#include "net/network.h"
#include "security/caps.h"
#include "security/seccomp.h"

namespace brig::container {

struct InitArgs {
  const config::Sandbox* sandbox;
  fs::MountPlan* plan;
  const security::SeccompProgram* seccomp;      // the workload's, loaded last before execve
  const security::SeccompProgram* init_filter;  // init's own, before the workload goes on
  int sync_fd;
  const net::SandboxAddress* address;  // eth0's, with posture allowlist or open; else null
  // The v1 groups' tasks files: init moves itself into them first (cgroup::JoinV1).
  const std::vector<cgroup::TasksFile>* cgroup_tasks;
};

[[noreturn]] void InitMain(const InitArgs& args);

// The first steps of every process brig clones to enter a sandbox or a container (brig
// init, an OCI container's init), once it has closed its copy of brig's end of `sync_fd`
// and before it joins or makes anything there. It dies with its creator, and leaves at once
// if its creator is already gone (its end of `sync_fd` is closed). It is not dumpable: no
// process inside may ptrace it or reach brig's binary through /proc/PID/exe before its
// execve (runc CVE-2019-5736). Its command line and comm say "brig-init", not brig's
// (ScrubProcessArgs). None of its creator's signals is blocked. Which descriptors it keeps
// is its front end's to say (sys::CloseAllExcept), before anything inside can see them.
Status StartAsBrigsChild(int sync_fd);

// Both inits' next steps, once in their groups and namespaces: the id map asked of the
// parent (kNeedIdMap) and waited for (kIdMapDone), then, where there is one to take, the
// ids it maps (`ids`, through security::ApplyCredentials, which leaves the process not
// dumpable) and the parent-death signal armed again, which a change of ids clears. A
// parent that died in between is caught at the next sync read (EOF).
Status TakeIdsFromMap(int sync_fd, const security::Credentials* ids);

// Hides the supervisor's command line and environment from /proc/1 inside (they are
// inherited memory): main() records where they are, init overwrites them.
void RecordProcessArgs(int argc, char** argv);
// Overwrites them with "brig-init": brig's own processes that enter a sandbox or an OCI
// container (its init, exec's child) call it first.
void ScrubProcessArgs();

}  // namespace brig::container
