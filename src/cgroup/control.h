// The control files of cgroup groups (cgroup/groups.h), read and written for both front
// ends: brig run's sandbox groups and an OCI container's. Every limit either sets is
// written by WriteControl, one write of the planner's (cgroup/resources.h); the readers
// take what the kernel reports (the facts the planner needs, usage, stats).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "cgroup/resources.h"

namespace brig::cgroup {

bool Exists(const std::string& path);
// A control file's text without its trailing newline; nullopt if it cannot be read.
std::optional<std::string> ReadTrimmed(const std::string& path);
// A control file's space-separated words (cgroup.controllers, cgroup.subtree_control).
std::vector<std::string> Words(const std::string& path);
// A number file; "max" is UINT64_MAX.
std::optional<uint64_t> Number(const std::string& path);
// The value of `key` in "key value" lines (cpu.stat, memory.events, cgroup.events).
std::optional<std::string> KeyedIn(std::string_view text, std::string_view key);
std::optional<uint64_t> Keyed(const std::string& path, std::string_view key);

// `dir` and those of its ancestors that do not exist, outermost first: the directories to
// make for a group.
std::vector<std::string> MissingDirs(const std::string& dir);
// The pids in `dir`'s cgroup.procs.
Result<std::vector<pid_t>> ReadProcs(const std::string& dir);
// Freezes (or thaws) the v1 freezer group `dir` and waits until it reads FROZEN. A group
// with tasks still forking may stay FREEZING a while: the write is repeated, as runc does;
// after 10 s it is thawed again and the freeze fails.
Status FreezeV1(const std::string& dir, bool frozen);

// A pause between re-reads of a v1 group, which has no events: short at first, then
// longer, never more than 10 ms.
class Backoff {
 public:
  void Wait();

 private:
  std::chrono::microseconds pause_{50};
};

// What the planner needs to know about the groups `routes` names, read from them.
HostFacts ReadFacts(const Routes& routes);
// One write of the plan; the error names the property and the file.
Status WriteControl(const ControlWrite& w);

}  // namespace brig::cgroup
