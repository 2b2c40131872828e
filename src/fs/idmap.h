// Id-mapped mounts (mount_setattr MOUNT_ATTR_IDMAP): a detached tree whose files owned by
// one host uid/gid appear as owned by another, and whose files made through it by the
// other belong to the one on disk. The workspace and the named mounts are mounted so that
// the sandbox user, a host uid of its own, is their owner inside, and what it makes there
// is their owner's on the host (mount_plan.cc).
#pragma once

#include <sys/stat.h>

#include <string>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "fs/spec.h"
#include "sys/fd.h"
#include "sys/id_map.h"

namespace brig::fs {

class IdMapper {
 public:
  // Maps every mount of `tree` (an open_tree(OPEN_TREE_CLONE) copy, not yet attached):
  // files of `map.from_uid`/`from_gid` appear as `to_uid`/`to_gid`, every other id as
  // unmapped (the overflow id, with only "other" permissions). False: the tree's file
  // system (or one mounted under it) cannot be id-mapped, and the tree is as it was.
  Result<bool> Map(int tree, const IdMap& map, const std::string& subject);

 private:
  // The user namespace given to mount_setattr for each map, made at its first use.
  std::vector<std::pair<IdMap, sys::UniqueFd>> namespaces_;
};

// A detached copy (open_tree OPEN_TREE_CLONE, recursively with `recursive`) of the mount at
// `path`, id-mapped through a user namespace of `maps` (an OCI mount's uidMappings and
// gidMappings: a file of id `inside` on disk is seen as `host`), its submounts too with
// `map_recursive`. Errors name `subject`.
Result<sys::UniqueFd> IdmappedClone(const std::string& path, bool recursive,
                                    const sys::IdMaps& maps, bool map_recursive,
                                    const std::string& subject);

// `st` as seen through `map`: its owner's ids are the ones they are mapped to.
struct stat Seen(struct stat st, const IdMap& map);

// The host ids the sandbox user is (MountPlan's sandbox_uid). The spec's sandbox ids, if
// every tree it is given (the workspace, the named mounts) can be mounted id-mapped from
// its owner to them, as `mapper` then does; else, where one's file system cannot be
// (overlayfs; tmpfs before Linux 6.3; NFS), the owner's ids, as before brig gave each
// sandbox ids of its own: what the sandbox makes is still the owner's, and its namespaces
// are still its own ids' (session.cc), so the counts the kernel charges up the namespaces
// stay apart; only those it keeps per host user (pipe buffers, epoll watches, keys) are
// then the owner's.
struct SandboxUser {
  uid_t uid;
  gid_t gid;
};
Result<SandboxUser> ChooseSandboxUser(const Spec& spec, IdMapper& mapper);

}  // namespace brig::fs
