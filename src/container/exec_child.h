// The one exec path of a workload: forked by brig init inside a sandbox, forked into a
// running one by brig exec (container/sandbox_exec.h), or cloned by brig itself for an
// ISOLATION_NONE profile (container/unconfined.cc). Runs in the new child,
// never returns: on a failure it writes the errno on `err_fd` (negated for seccomp) and
// exits with brig/exit.h's code.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <span>

#include "security/caps.h"
#include "security/seccomp.h"

namespace brig::container {

struct ExecSpec {
  const char* path;
  char* const* argv;
  char* const* envp;
  // If the kernel cannot run `path` (ENOEXEC: a script without a #! line), this argv runs
  // it with /bin/sh instead, as execvp(3) and a shell do (ScriptArgv).
  char* const* script_argv;
  const char* workdir;  // chdir here first; "" stays where it is
  std::span<const security::Rlimit> rlimits;
  const security::SeccompProgram* seccomp;  // loaded last, before execve; null: none
  // The start pipe: the child waits on `go_fd` until the parent lets it go. A byte is the
  // go when `parent` is set (brig is the parent, and its death must stop the child, not
  // let it go); otherwise EOF is (brig init closes its end; if init died instead, the pid
  // namespace's end takes this child with it). `go_other` is the inherited write end.
  // -1 for both: already let go (brig exec's process, started over its sync socket).
  int go_fd;
  int go_other;
  int err_fd;
  // Dies with this process (PR_SET_PDEATHSIG), checked against the race; 0: not asked.
  pid_t parent;
};

[[noreturn]] void ExecChild(const ExecSpec& spec);

// What a failed execve with errno `e` is: the command not found (127) or not executable (126).
constexpr ErrorKind ExecErrorKind(int e) {
  return e == ENOENT || e == ENOTDIR ? ErrorKind::kNotFound : ErrorKind::kNotExecutable;
}

}  // namespace brig::container
