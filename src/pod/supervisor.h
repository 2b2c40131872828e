// A pod's supervisor (design.md, OCI mode, "Pods get brig's sandbox"): the pod's resolver,
// proxy and brokers, and the writer of its audit on the node, from the sandbox container's
// `create` to its `delete`. It is `brig run`'s egress and broker services (egress/service.h,
// broker/service.h) with no workload of its own to launch: the pod's containers join the
// network namespace it serves.
//
//   brig create (sandbox container)              the supervisor (brig's image afresh)
//   handler and annotations planned
//   fork, exec ──── the plan (a memfd) ──────▶   setsid; the pod planned again from the
//                                                handler, profile and annotations;
//                                                its record (brig list, brig gc);
//                                                the node's netns held for the floor;
//                                                setns into the pod's (CNI's, named in
//                                                config.json), which must not be the node's;
//                                                listeners on the pod's 127.0.0.1, the
//                                                rules (rules.h), brokers' ports
//                         ◀── "ok" or the error  serves until SIGTERM, then removes its
//   the pause container created                  table, writes sandbox_exit, exits
//   ...
//   brig delete: Stop (SIGTERM, then SIGKILL)
//
// Its upstream sockets carry brig's mark and leave from the pod's own namespace, so the
// cluster's CNI and NetworkPolicy still apply on top. Killed, it leaves its rules in the
// pod's namespace, which then refuse everything (the listeners they redirect to are gone):
// the pod fails closed, its record is left for brig gc, and delete still ends the sandbox.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "brig/result.h"
#include "config/sandbox.h"
#include "pod/handler.h"
#include "pod/harden.h"

namespace brig::pod {

struct SupervisorRef {
  pid_t pid = 0;
  uint64_t start_time = 0;  // /proc/PID/stat's, so a reused pid is never taken for it
};

// The id of the pod's supervisor in brig's records (brig list): "brig-pod-" and the first
// 12 hex digits of the sandbox container's id.
std::string RecordId(const std::string& sandbox_id);

// Starts the supervisor and waits until it serves or has failed (its error; nothing left):
// a fresh image of brig's (/proc/self/exe, argv[0] "brig-pod"), handed the handler, the
// profile as loaded and the pod's annotations, from which it plans the pod again; `netns`:
// the network namespace config.json names.
Result<SupervisorRef> Start(const Held& held, const Annotations& annotations,
                            const std::string& netns);

// main()'s first question: is this process the supervisor's image (argv[0])? Then
// SupervisorMain is all it runs.
bool IsSupervisorImage(const char* argv0);
int SupervisorMain();

// Ends the supervisor if it is still that process: SIGTERM, and SIGKILL if it has not gone
// within a few seconds. One already gone is not an error.
Status Stop(const SupervisorRef& s);

}  // namespace brig::pod
