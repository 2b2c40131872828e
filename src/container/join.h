// Joining what runs: one new process in the namespaces and cgroups of a running sandbox's
// or OCI container's first process, for both `brig exec`s (container/sandbox_exec.h,
// oci/exec.cc). brig clones a stage child into the target's v2 group (CLONE_INTO_CGROUP);
// the stage child joins the v1 groups itself (cgroup::JoinV1), then every namespace at once
// through the target's pidfd (setns(2)); since a pid namespace is entered only by
// children, it forks the process, reports its pid and is killed once brig holds the
// process's pidfd (so that no one reaps the process first). The process is the front
// end's: it takes its credentials and seccomp filter and execs as that front end's own
// workload does.
//
//   brig exec                             stage child                   process
//   its supplementary groups dropped,
//   PR_SET_CHILD_SUBREAPER (if it adopts),
//   socketpair(SEQPACKET|CLOEXEC)
//   clone3(CLONE_INTO_CGROUP) ──────────▶ StartAsBrigsChild (dies with
//                                         brig, not dumpable, args scrubbed)
//                                         "0" to each v1 tasks file
//                                         setns(pidfd, namespaces)
//                                         every fd closed but those named
//                                         fork ───────────────────────▶ waits for the gate
//                    ◀── kPid {pid}       closes the gate, waits          its front end's steps
//   pidfd_open(pid), then SIGKILL ──────▶ (brig, the subreaper, adopts
//                                         the process)
//   (sandbox: audit) ─── kStart ──▶                                     (sandbox: waits for it)
//                    ◀── kSeccompFd (an OCI filter that notifies: the agent's, sync.h)
//                    ◀── kError, or EOF at execve
//
// Flow::kExec checks that order (sync.h); every wait is bounded by a setup step's time.
#pragma once

#include <sys/types.h>

#include <functional>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "container/channel.h"
#include "sys/fd.h"

namespace brig::container {

// What the process joins. The pidfd is the target's first process, checked to be the one
// its record names (sys::OpenProcessStartedAt), so a pid reused since is never joined.
struct JoinTarget {
  int pidfd = -1;
  int namespaces = 0;                        // CLONE_NEW* to join through the pidfd
  int cgroup_v2 = -1;                        // the v2 group's directory; -1: none
  std::vector<cgroup::TasksFile> cgroup_v1;  // the v1 groups' tasks files
};

// The process's part. Both functions run in brig's children and must not return from the
// process (`become` ends in execve or _exit); errors go over `sync_fd` (SendErrorAndExit).
struct JoinedProcess {
  // First thing in the stage child, before any namespace is joined (the process's stdio
  // onto fds 0-2); may be empty.
  std::function<void()> in_stage;
  // The process, in the target's namespaces, holding only fds 0 .. keep_below-1, the
  // sync socket and `keep`.
  std::function<void(int sync_fd)> become;
  std::vector<int> keep;
  unsigned keep_below = 3;
  // brig is made the subreaper (sys::BecomeSubreaper), so that the process becomes its
  // child when the stage child exits: for a front end that waits for it.
  bool adopt = false;
};

// A process started by Join: its host pid, a pidfd of it (opened as soon as its pid was
// told, so a signal never reaches a pid reused since) and brig's end of the sync socket,
// which tracks it. Its next word, `sync.AwaitClose()`, is EOF once it reached execve (or
// _exited without a word), or its failure, also when that is read after the reset of a
// socket the process left with brig's word unread.
struct Joined {
  pid_t pid = 0;
  sys::UniqueFd pidfd;
  Channel sync;
};

// Clones the stage child, which joins `t` and forks `p`; returns once the stage child has
// reported the process's pid (within a setup step's time; a silent one is killed) and is
// reaped. With `p.adopt`, the process is then brig's child.
Result<Joined> Join(const JoinTarget& t, const JoinedProcess& p);

}  // namespace brig::container
