// A container's seccomp agent (config.md linux.seccomp.listenerPath). The listener of each
// of the container's processes whose filter notifies (SCMP_ACT_NOTIFY) is handed to it the
// moment the filter is loaded, as runc hands it: over a new connection to the agent's unix
// socket, one message holding the process's state as JSON (ContainerProcessState:
// ociVersion, fds ["seccompFd"], pid, metadata = listenerMetadata, the container's state)
// and the listener as SCM_RIGHTS. brig keeps no copy: once the agent closes its own, a
// notified syscall fails with ENOSYS.
#pragma once

#include <sys/types.h>

#include "brig/result.h"
#include "container/channel.h"
#include "oci/state.h"

namespace brig::oci {

// Makes `sync` hand a listener of the process (pid `pid`, or the record's pid where 0: a
// container's init, whose pid the record takes once it is known) to the agent `rec`'s
// config names, with `rec`'s state as `status`.
void HandListenersToAgent(container::Channel& sync, const Container& rec, ContainerStatus status,
                          pid_t pid = 0);

// The message itself, to the agent at `seccomp.listener_path`: for tests and the above.
Status SendToAgent(const brig::v1::SeccompPolicy& seccomp, const State& state, pid_t pid,
                   int listener);

}  // namespace brig::oci
