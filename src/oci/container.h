// The OCI verbs after `create` (runtime.md "Operations", and runc's extras), each on the
// container's locked directory under --root (oci/state.h). Status is read from the host
// every time; a verb that does not fit the status is refused naming it, in runc's words
// where an engine matches on them ("container not running").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "oci/state.h"
#include "proto/oci.pb.h"

namespace brig::oci {

// Lets a created container's process go (exec.fifo), then runs the poststart hooks.
Status Start(const std::string& root, const std::string& id);
// `brig state`: the runtime-spec state as JSON.
Result<std::string> State(const std::string& root, const std::string& id);
// Signals the container's process (`all`: every process in its cgroups). A container that
// is not running (or created, or paused) is refused: "container not running".
Status Kill(const std::string& root, const std::string& id, int sig, bool all);
// Removes a stopped container: kills what is left in its cgroups, removes them, runs the
// poststop hooks, removes its directory. A created one is killed first; a running or
// paused one only with `force`. A missing one is an error, but not with `force`.
Status Delete(const std::string& root, const std::string& id, bool force);
Status Pause(const std::string& root, const std::string& id);
Status Resume(const std::string& root, const std::string& id);
// The pids in the container's cgroups.
Result<std::vector<pid_t>> Pids(const std::string& root, const std::string& id);
// linux.resources again; the record keeps the new values.
Status Update(const std::string& root, const std::string& id, const Resources& r);
// runc's `events --stats` object for the container, one line of JSON.
Result<std::string> Stats(const std::string& root, const std::string& id);
// runc's `events` stream, each event one line of JSON to `emit`: the stats (Stats) at once
// and then every `interval`, and {"type":"oom","id":ID} as soon as the kernel's OOM
// killer has acted in the container's memory group, until the container stops; `once`:
// the stats alone (--stats).
Status Events(const std::string& root, const std::string& id, std::chrono::milliseconds interval,
              bool once, const std::function<void(const std::string&)>& emit);

struct Listed {
  std::string id;
  pid_t pid = 0;
  ContainerStatus status = ContainerStatus::kStopped;
  std::string bundle, rootfs, created;
};
Result<std::vector<Listed>> List(const std::string& root);

}  // namespace brig::oci
