// The control files of cgroup groups, read and written for both front ends: brig run's
// sandbox groups (cgroup/cgroup.h) and an OCI container's (cgroup/groups.h). Every limit
// either sets is written by WriteControl, one write of the planner's (cgroup/resources.h);
// the readers take what the kernel reports (the facts the planner needs, usage, stats).
#pragma once

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

// What the planner needs to know about the groups `routes` names, read from them.
HostFacts ReadFacts(const Routes& routes);
// One write of the plan; the error names the property and the file.
Status WriteControl(const ControlWrite& w);

}  // namespace brig::cgroup
