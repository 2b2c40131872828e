// The process a front end starts, and the two steps by which the child that will be it
// takes it on: brig run's workload and an unconfined command (through ExecChild), brig
// exec's process in a sandbox (ExecChild) or in an OCI container, and an OCI container's
// own process (oci/init.cc), which waits for `start` between the two steps.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "config/sandbox.h"
#include "security/caps.h"
#include "security/seccomp.h"

namespace brig::container {

struct ProcessSpec {
  std::vector<std::string> args, env;
  std::string cwd;  // entered inside the root (sys::EnterDirInRoot); "": stays where it is
  // Its ids, groups, capabilities, rlimits and no_new_privs (security::ApplyCredentials).
  // Unset: it has its parent's already (brig init dropped to the sandbox user before it
  // forked; brig exec's stage child took the sandbox's ids), and takes only `rlimits`, which
  // are its own, not its parent's.
  std::optional<security::Credentials> credentials;
  std::vector<security::Rlimit> rlimits;  // only without `credentials`, which carry their own
  std::optional<mode_t> umask;
  std::optional<int> oom_score_adj;
  std::optional<security::SeccompProgram> seccomp;
  // A runtime handler's profile filter (pod/harden.h), loaded just before `seccomp`: both
  // hold, and the stricter answer wins.
  std::optional<security::SeccompProgram> profile_seccomp;
  // Where the filter's listener goes the moment it is loaded, if it has one (an OCI
  // process's that notifies): the sync socket, whose parent hands it to the container's
  // seccomp agent (sync.h HandOverListener). Set in the child.
  int listener_to = -1;
  // Fds 3 .. 3+N-1 go to the process (--preserve-fds): not close-on-exec. Every other above
  // stdio is, whatever its front end kept open until then: nothing of brig's reaches execve.
  int preserved_fds = 0;
  // A file the kernel cannot run (ENOEXEC: a script without a #! line) runs with /bin/sh,
  // as execvp(3) and a shell run it: brig run's and brig exec's commands. An OCI process
  // fails as runc's does.
  bool scripts_via_shell = false;
  // Put before what an error names: "process." names config.json's "process.cwd".
  std::string prefix;
};

// brig run's command as a process: its argv, env, workdir and rlimits, a script run with
// /bin/sh; its parent's credentials, and no filter (the caller adds the workload's).
ProcessSpec WorkloadOf(const config::Sandbox& sb);

// Step one, in the child, as the privileges it was made with still allow: the oom score
// (raising it needs them), the cwd (before any filter, since one written before openat2(2)
// existed refuses it, and as its maker, as runc enters it, so that a user that cannot search
// the directory still starts there), every fd above stdio but the preserved ones made
// close-on-exec (before any filter too), the filter where it must come before the credentials
// (without no_new_privs, loading it needs CAP_SYS_ADMIN, which they may drop, as runc
// loads it), the credentials in the kernel's order (or the rlimits alone), the umask.
// Irreversible; on an error the child must not go on.
Status TakeOn(const ProcessSpec& p);

// Loads the filter now if Exec would load it, so that what the process runs before its
// execve (an OCI startContainer hook, which the image's binaries may serve) runs under it
// too, as runc runs it, and so that an OCI container's listener reaches its agent while
// `create` is there to hand it over; Exec then loads none. Where it is loaded before the
// credentials (FilterFirst), TakeOn has loaded it already.
Status LoadFilterNow(ProcessSpec& p);

// Step two, the last: the filter (with no_new_privs), then execve of `path` (resolved by
// ResolveCommand in the child's root), and /bin/sh for a script where asked. Returns only
// the failure: a step's, or execve's as kNotFound (127) or kNotExecutable (126).
Error Exec(const ProcessSpec& p, const std::string& path);

// What a failed execve with errno `e` is: the command not found (127) or not executable (126).
constexpr ErrorKind ExecErrorKind(int e) {
  return e == ENOENT || e == ENOTDIR ? ErrorKind::kNotFound : ErrorKind::kNotExecutable;
}

}  // namespace brig::container
