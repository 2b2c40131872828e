// A user namespace's id maps, written from outside by its owner (user_namespaces(7)): the
// one writer for every namespace brig makes: a sandbox's (container/session.cc), an OCI
// container's (oci/launch.cc), an idmapped mount's (fs/idmap.cc) and brig check's probe.
#pragma once

#include <sys/types.h>

#include <cstdint>
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

}  // namespace brig::sys
