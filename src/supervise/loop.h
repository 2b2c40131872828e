// The supervisor's event loop: one epoll over the sandbox's pidfd, the sync socket, a
// signalfd and timerfds. Single-threaded; nothing here blocks except epoll_wait.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "container/sync.h"

namespace brig::supervise {

struct LoopInput {
  int pidfd;
  int sync_fd;    // -1 when the child is the workload itself (profile none)
  int signal_fd;  // SIGTERM, SIGINT, SIGHUP
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds grace;
  container::SyncSequence* sequence;
  // The workload itself, without brig init (profile none): its status is its own wait
  // status, and killing it means killing its process group.
  pid_t direct_pid = 0;
  // The sandbox's cgroup, if it has one: kills go through it, so none can miss a process.
  cgroup::Group* group = nullptr;
  // More sockets of the supervisor's (the network listeners), and what to do when one of
  // them is readable.
  std::vector<int> extra_fds;
  std::function<void(int)> on_extra;
};

struct LoopOutput {
  std::optional<int> workload_status;
  std::optional<Error> error;
  bool timed_out = false;
  int killed_for_signal = 0;
  bool oom_event = false;  // a v1 memory group reported an OOM kill; the sandbox was ended
  int init_signal = 0;     // the signal brig init died of, if one killed it
  struct rusage usage {};
};

// Returns when brig init has exited and been reaped.
Result<LoopOutput> Supervise(const LoopInput& in);

}  // namespace brig::supervise
