// The container's process as config.json's `process` (or `brig exec`'s process.json) says:
// prepared in the parent, where allocating is free and errors exit 125 before anything
// runs; applied in the child that becomes it (container init, or exec's child): the oom
// score, the cwd, the credentials in the kernel's order (security/caps.h: rlimits, the
// bounding set, groups and ids, the other capability sets, no_new_privs), umask, and the
// seccomp filter last, before execve (or before the credentials without no_new_privileges).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "oci/spec.h"
#include "proto/oci.pb.h"
#include "security/caps.h"
#include "security/seccomp.h"
#include "sys/fd.h"

namespace brig::oci {

// SELinux labels (process.selinuxLabel, linux.mountLabel): brig applies none. On a host
// without SELinux there is nothing to apply them to and they are ignored, as runc and crun
// do; on a host with it they are refused, since the label would not hold.
Status CheckSelinuxLabel(std::string_view property, const std::string& label);

struct PreparedProcess {
  std::vector<std::string> args, env;
  std::string cwd;
  std::optional<mode_t> umask;
  security::Credentials credentials;
  std::optional<int> oom_score_adj;
  std::optional<security::SeccompProgram> seccomp;
};

// process.user's ids and additionalGids, process.capabilities, process.rlimits and
// process.noNewPrivileges as the credentials the process takes, its errors naming those
// properties. Pure.
Result<security::Credentials> CredentialsOf(const Process& p);

// Everything that can be checked or computed before a process exists: the credentials,
// and the seccomp program compiled as runc and crun enforce an engine's policy
// (process.cc, AsLibseccompResolves).
Result<PreparedProcess> PrepareProcess(const Process& p,
                                       const std::optional<brig::v1::SeccompPolicy>& seccomp);

// In the child, as root of its user namespace with every capability: the oom score (which
// needs privileges to raise), the cwd (before any filter, which may refuse openat2), then
// the credentials and umask. Loads the seccomp filter before the credentials when
// no_new_privileges is off (loading it then needs CAP_SYS_ADMIN, which they may drop), as
// runc does.
Status ApplyCredentials(const PreparedProcess& p);
// The last step before execve: the filter when no_new_privileges is on.
Status ApplyLastSteps(const PreparedProcess& p);
// --console-socket's unix socket, connected, for SetupConsole.
Result<sys::UniqueFd> ConnectConsoleSocket(const std::string& path);
// process.terminal: a pty of the container's own devpts (/dev/ptmx); its master goes to
// the engine over the connected --console-socket `console_fd` (runc's protocol), its slave
// becomes stdio and the controlling terminal of this (new session's) process, and, with
// `dev_console`, /dev/console.
Status SetupConsole(int console_fd, const ConsoleSize& size, bool dev_console);
// Resolves args[0] as execvp would, in the child's root and cwd (126/127 errors).
Result<std::string> ResolveExecutable(const PreparedProcess& p);
// Replaces the child with the process; returns only on failure.
Error Exec(const std::string& path, const PreparedProcess& p);

// Waits for `pid` (brig's child, or reparented to brig as a subreaper), passing on the
// signals brig gets, and returns its wait status. SIGCHLD must be blocked already, since
// before the process existed, so that its exit cannot be missed.
int WaitForwardingSignals(pid_t pid);

}  // namespace brig::oci
