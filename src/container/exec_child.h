// The child of a process brig run's side starts: forked by brig init inside a sandbox,
// forked into a running one by brig exec (container/sandbox_exec.h), or cloned by brig
// itself for an ISOLATION_NONE profile (container/unconfined.cc). It takes its process on
// as every front end's does (container/process.h). Never returns: on a failure it writes
// the errno on `err_fd` (negated for seccomp) and exits with brig/exit.h's code.
#pragma once

#include <sys/types.h>

#include <string>

#include "container/process.h"

namespace brig::container {

// How the child is let go and how it reports.
struct ExecStart {
  // The start pipe: the child waits on `go_fd` until the parent lets it go. A byte is the
  // go when `dies_with_parent` (brig is the parent, and its death must stop the child, not
  // let it go); otherwise EOF is (brig init closes its end; if init died instead, the pid
  // namespace's end takes this child with it). `go_other` is the inherited write end.
  // -1 for both: already let go (brig exec's process, started over its sync socket).
  int go_fd;
  int go_other;
  int err_fd;
  // Dies with its parent (PR_SET_PDEATHSIG), checked against the race: its parent must
  // still be `parent`, as the child sees it, and, where `parent_socket` is given, still
  // hold the other end of that socket. (brig exec, which adopted its process, is outside
  // the sandbox's pid namespace, where it shows as 0, as would a subreaper above it that
  // took the process over: its sync socket tells them apart.)
  bool dies_with_parent;
  pid_t parent;
  int parent_socket = -1;
};

// Once let go: a new session (with stdin's terminal, the workload's own pty, as its
// controlling one), then `p` taken on and run (container/process.h), `path` resolved by the
// parent.
[[noreturn]] void ExecChild(const ProcessSpec& p, const std::string& path, const ExecStart& s);

}  // namespace brig::container
