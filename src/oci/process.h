// The container's process as config.json's `process` (or `brig exec`'s process.json) says:
// prepared in the parent as a container::ProcessSpec, where allocating is free and errors
// exit 125 before anything runs; taken on by the child that becomes it (container init, or
// exec's child) as every front end's process is (container/process.h). Around it, what
// only an OCI process has: its terminal over --console-socket.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "container/process.h"
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

// process.user's ids and additionalGids, process.capabilities, process.rlimits and
// process.noNewPrivileges as the credentials the process takes, its errors naming those
// properties. Pure.
Result<security::Credentials> CredentialsOf(const Process& p);

// Everything that can be checked or computed before a process exists, as the child takes
// it on (container/process.h): the credentials, and the seccomp program compiled as runc
// and crun enforce an engine's policy (process.cc, AsLibseccompResolves).
Result<container::ProcessSpec> PrepareProcess(
    const Process& p, const std::optional<brig::v1::SeccompPolicy>& seccomp);

// --console-socket's unix socket, connected, for SetupConsole.
Result<sys::UniqueFd> ConnectConsoleSocket(const std::string& path);
// process.terminal: a pty of the container's own devpts (/dev/ptmx); its master goes to
// the engine over the connected --console-socket `console_fd` (runc's protocol), its slave
// becomes stdio and the controlling terminal of this (new session's) process, and, with
// `dev_console`, /dev/console.
Status SetupConsole(int console_fd, const ConsoleSize& size, bool dev_console);

// A foreground run or exec of a process with a terminal and no --console-socket: brig
// takes the master itself and relays it, as runc does, over a stream socket pair of its
// own (sys::FdPair::SocketPair): the child end goes where the connected --console-socket
// would (SetupConsole sends the master on it). The master SetupConsole sent on the parent
// end `sock`, if it has sent one; none without a terminal.
Result<sys::UniqueFd> TakeConsole(int sock);

// Waits for `pid` (brig's child, or reparented to brig as a subreaper), passing on the
// signals brig gets, and returns its wait status. SIGCHLD must be blocked already, since
// before the process existed, so that its exit cannot be missed. With a terminal's
// `master` (TakeConsole), it relays brig's stdin to the terminal and the terminal to brig's
// stdout meanwhile, and what is left of the output once the process is gone; where brig's
// stdin is a terminal, it is raw until then and the container's follows its size.
int WaitForwardingSignals(pid_t pid, int master = -1);

}  // namespace brig::oci
