// Container init for OCI containers: the child half of `brig create`, which becomes the
// container's process itself (execve of process.args), as runc's and crun's init do. Its
// order, and the parent's half, are drawn in oci/launch.cc. Never returns.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cgroup/cgroup.h"
#include "oci/process.h"
#include "oci/rootfs.h"
#include "proto/oci.pb.h"

namespace brig::oci {

struct InitArgs {
  const Spec* spec;
  const container::ProcessSpec* process;
  RootfsOptions fs;
  RootfsPlan* rootfs_plan = nullptr;  // PlanRootfs(spec, fs), made by `brig create`
  int sync_fd = -1;
  // Where brig hands over the bind mounts' sources, opened in init's mount namespace
  // (rootfs.h SendMountSources); -1: init resolves them itself.
  int mount_sources_fd = -1;
  int fifo_fd = -1;     // exec.fifo's read end: a byte on it is `start`
  int console_fd = -1;  // --console-socket, connected; -1 without a terminal
  int preserve_fds = 0;
  // How long init waits for the parent's word after kReady, while the parent runs the
  // prestart and createRuntime hooks (StepWithHooksMs); -1: no bound.
  int start_wait_ms = -1;
  // The v1 groups' `tasks` files, which init writes itself into first (cgroup::JoinV1);
  // the v2 group it was cloned into.
  const std::vector<cgroup::TasksFile>* cgroup_tasks = nullptr;
  bool new_cgroupns = false;  // unshared once init is in its groups
  bool no_pivot = false;
  bool new_keyring = true;  // a session keyring of its own (runc's default)
  // The stage path (namespaces joined by path): init is cloned into no new namespace,
  // joins these (the user namespace first), unshares `unshare_flags`, and with
  // `fork_for_pid` forks the real init into a new pid namespace, reporting its pid.
  std::vector<std::pair<int, std::string>> joins;
  int unshare_flags = 0;
  bool fork_for_pid = false;
};

[[noreturn]] void ContainerInit(const InitArgs& a);

}  // namespace brig::oci
