// The supervisor's event loop: one epoll over the sandbox's pidfd, the sync socket, a
// signalfd and timerfds. Single-threaded; nothing here blocks except epoll_wait.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <optional>

#include "brig/result.h"
#include "container/sync.h"

namespace brig::supervise {

struct LoopInput {
  int pidfd;
  int sync_fd;
  int signal_fd;  // SIGTERM, SIGINT, SIGHUP
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds grace;
  container::SyncSequence* sequence;
};

struct LoopOutput {
  std::optional<int> workload_status;
  std::optional<Error> error;
  bool timed_out = false;
  int killed_for_signal = 0;
  struct rusage usage {};
};

// Returns when brig init has exited and been reaped.
Result<LoopOutput> Supervise(const LoopInput& in);

}  // namespace brig::supervise
