// The launch both front ends share, brig run's Session and brig create (oci/launch.cc): the
// first process of a new sandbox or container, brig's own binary until its execve, cloned
// into its new namespaces and its v2 group and held by its pidfd, then driven over its
// sync channel (channel.h) until it is Ready. What it does then is its front end's.
//
//   brig (CloneInit, DriveToReady)                init (the front end's, given its sync fd)
//   sync socket, the child's end at or above
//   min_fd; brig's supplementary groups
//   dropped; [staged: brig a subreaper]
//   clone3(namespaces | CLONE_PIDFD |
//          CLONE_INTO_CGROUP) [as owner's euid] ─▶ brig's end closed; the front end's init
//                          ◀── kNeedIdMap
//   the front end's answer (id maps, eth0)
//                          ─── kIdMapDone ──▶
//                          ◀── kPid {pid}          [staged: a stage child forked the real
//   the stage child reaped; the init it forked,    init into a new pid namespace, and exits]
//   adopted by brig, held instead
//                          ◀── kReady
//
// Every wait is the channel's: bounded, checked in the flow's order, and a socket lost to
// an init that is gone explained by what it said or how it ended.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "brig/result.h"
#include "container/channel.h"
#include "sys/child.h"

namespace brig::container {

struct InitClone {
  uint64_t namespaces = 0;  // CLONE_NEW* made at the clone
  int cgroup_v2 = -1;       // the v2 group's directory (CLONE_INTO_CGROUP); -1: none
  // The effective uid brig clones as, which then owns the user namespace the clone makes
  // and is charged for what is counted in it (brig run: the sandbox's host uid); none:
  // brig's own.
  std::optional<uid_t> owner;
  Flow flow = Flow::kSandbox;
  std::string who;  // names the init in errors: "brig init", "container init"
  int min_fd = 3;   // the child's end of the sync socket goes at or above it
  // A stage child that forks the real init into a new pid namespace and reports its pid
  // before Ready (an OCI container whose namespaces are joined by path).
  bool staged = false;
};

struct Launched {
  sys::Child init;
  Channel sync;  // brig's end, tracking `init`
};

// Clones the init. `init_main` runs in the child, given its end of the sync socket once
// brig's end is closed there, and never returns.
Result<Launched> CloneInit(const InitClone& c, const std::function<void(int sync_fd)>& init_main);

// Drives `init` over `sync` until it is Ready: `answer_id_map` each time it asks for its
// map, then kIdMapDone; with `staged`, the stage child's hand-over, after which `init` is
// the init it forked. An error is the init's own word, or how it ended, if it is gone.
Status DriveToReady(Channel& sync, sys::Child& init, bool staged,
                    const std::function<Status()>& answer_id_map);

}  // namespace brig::container
