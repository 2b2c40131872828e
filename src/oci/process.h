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
#include "supervise/loop.h"
#include "sys/child.h"
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
// the engine over the connected --console-socket `console_fd` (runc's protocol), its slave,
// owned by `owner` (process.user.uid), becomes stdio and the controlling terminal of this
// (new session's) process, and, with `dev_console`, /dev/console.
Status SetupConsole(int console_fd, const ConsoleSize& size, bool dev_console, uid_t owner);

// A foreground run or exec (no --detach) of `process`: brig passes on the signals `signals`
// holds and, where the process has a terminal and no --console-socket, relays it as
// `brig run` relays the workload's (supervise::Stdio::ForTerminal), as runc does. That
// terminal's master comes over a stream socket pair of brig's own
// (sys::FdPair::SocketPair), whose child end went where a connected --console-socket would
// (SetupConsole sends the master on it), and whose parent end is `relay` (-1: no
// terminal). The process's exit status as a shell gives it (supervise::Attend).
Result<int> AttendProcess(sys::Child& process, int relay, const supervise::HeldSignals& signals);

}  // namespace brig::oci
