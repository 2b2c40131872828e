// A user namespace's id maps, written from outside by its owner (user_namespaces(7)): the
// one writer for every namespace brig makes: a sandbox's (container/session.cc), an OCI
// container's (oci/launch.cc), an idmapped mount's (fs/idmap.cc) and brig check's probe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::sys {

// `count` ids from `inside` in the namespace are `host`.. outside it.
struct IdMapping {
  uint32_t inside = 0, host = 0, count = 1;
};

struct IdMaps {
  std::vector<IdMapping> uids, gids;
  // setgroups(2) refused in the namespace for good, written before gid_map (as it must
  // be): no process inside can drop a group to get past a file's group-deny permissions.
  bool deny_setgroups = false;
};

// The maps as uid_map and gid_map take them: one "INSIDE HOST COUNT" line each.
std::string RenderIdMap(const std::vector<IdMapping>& maps);

// Writes process `pid`'s uid_map, setgroups (with deny_setgroups) and gid_map, each in one
// write(2). Errors name the file.
Status WriteIdMaps(pid_t pid, const IdMaps& maps);

// brig without root: moves this process, which must be single-threaded, into a user
// namespace of its own and a mount namespace that namespace owns (mounts from the host's
// come in as slaves, locked together). There it holds the capabilities the host-side steps
// need (detached mounts, the sandbox's id maps) over nothing but what it makes; the
// sandbox's namespaces are made inside it.
// Without `subordinate` the namespace maps this process's uid and gid to themselves,
// written by the process itself: setgroups(2) must then be denied (user_namespaces(7)), so
// its supplementary groups stay. With it, the maps are `subordinate` (the caller's own ids
// and the ranges /etc/subuid and /etc/subgid grant it), written by shadow's set-uid
// helpers `newuidmap` and `newgidmap`, which leave setgroups allowed, and the process
// drops its supplementary groups there.
Status EnterOwnUserNamespace(const std::optional<IdMaps>& subordinate = std::nullopt);

// Where shadow's helpers are (package uidmap); a fixed path, never the caller's PATH.
inline constexpr char kNewUidMap[] = "/usr/bin/newuidmap";
inline constexpr char kNewGidMap[] = "/usr/bin/newgidmap";

}  // namespace brig::sys
