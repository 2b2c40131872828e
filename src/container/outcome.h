// How one sandbox ended: the one outcome type that Session fills from its first step to
// its teardown, and that `brig run` turns into its exit code and result (cli/run.cc), at
// the edge, once.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <optional>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "proto/brig.pb.h"

namespace brig::container {

struct Outcome {
  // Why the sandbox did not run or its workload did not start: brig's refusal (nothing
  // ran), or a setup or exec failure that brig init reported.
  std::optional<Error> error;
  std::optional<int> workload_status;  // wait status of the workload, if it ran and exited
  // Processes the workload left running when it exited, killed as the phase ended with it
  // (0 with --wait-all, which waits for them instead).
  uint32_t left_killed = 0;
  bool timed_out = false;
  int killed_for_signal = 0;  // brig received this signal and killed the sandbox after grace
  bool grace_ended = false;   // ... when the grace period ended (else: at a second signal)
  bool oom_killed = false;    // the memory limit was hit and the sandbox was killed
  // --deny stop: the refusal for which brig ended the phase.
  std::optional<v1::DenialStop> denial_stop;
  int init_signal = 0;        // brig init died of this signal without reporting
  struct rusage usage {};     // of brig init and every process it reaped
  cgroup::Stats cgroup_usage;
  std::chrono::milliseconds duration{0};
  // What went through the sandbox's resolver, proxy and brokers.
  std::optional<v1::NetworkSummary> network;
  // What the workload wrote to stdout and stderr, as relayed (once it ran).
  std::optional<v1::Output> output;
  // --export-changes failed (after the workload ran).
  std::optional<Error> export_error;
  // What brig could not do after the workload ran and that does not change its outcome:
  // a host resource left for brig gc, an audit line not written. One line each; the
  // caller prints them.
  std::vector<std::string> warnings;
};

}  // namespace brig::container
