// The parent half of `brig run`: prepares everything that can fail before any process
// exists (mount plan, seccomp program), clones brig init into new namespaces, drives the
// sync protocol and supervises the sandbox to its end.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <optional>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "proto/brig.pb.h"
#include "config/sandbox.h"

namespace brig::container {

struct Outcome {
  std::optional<int> workload_status;  // wait status of the workload, if it ran and exited
  std::optional<Error> error;          // setup or exec failure reported by init
  bool timed_out = false;
  int killed_for_signal = 0;  // brig received this signal and killed the sandbox after grace
  bool oom_killed = false;    // the memory limit was hit and the sandbox was killed
  int init_signal = 0;        // brig init died of this signal without reporting
  struct rusage usage {};     // of brig init and every process it reaped
  cgroup::Usage cgroup_usage;
  std::chrono::milliseconds duration{0};
  // What went through the sandbox's resolver and proxy (postures allowlist and open).
  std::optional<v1::NetworkSummary> network;
  // What the workload wrote to stdout and stderr, as relayed (once it ran).
  std::optional<v1::Output> output;
  // --export-changes failed (after the workload ran).
  std::optional<Error> export_error;
};

// Runs one sandbox, its plan resolved and probed (config/resolve.h, config/probe.h), to
// completion. An Error return means nothing ran (exit 125); failures
// after the clone are reported inside the Outcome.
Result<Outcome> Run(const config::Sandbox& sb);

}  // namespace brig::container
