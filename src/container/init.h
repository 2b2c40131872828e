// brig init: the child half of `brig run`. Pid 1 of the sandbox. Sets the sandbox up in the
// order sync.h draws, forks the workload, then reaps, forwards signals and reports the
// workload's exit. Never returns.
#pragma once

#include "cgroup/cgroup.h"
#include "config/sandbox.h"
#include "fs/mount_plan.h"
#include "net/network.h"
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

// Hides the supervisor's command line and environment from /proc/1 inside (they are
// inherited memory): main() records where they are, init overwrites them.
void RecordProcessArgs(int argc, char** argv);
// Overwrites them with "brig-init": brig's own processes that enter a sandbox or an OCI
// container (its init, exec's child) call it first.
void ScrubProcessArgs();

}  // namespace brig::container
