// What a runtime handler holds each of its pods' containers to (pod/handler.h): the stricter
// of what the pod's own spec asks and what the handler's profile allows, for `create` and
// `exec` alike.
//
//   capabilities      the intersection: a brig profile grants none, so none
//   no_new_privileges on
//   root              read-only
//   seccomp           both filters: the profile's policy is loaded first and the pod's own
//                     (containerd's RuntimeDefault, a localhost profile) after it; the
//                     kernel runs both and the stricter answer wins
//   host namespaces   refused: a pod of a handler has network, pid and ipc namespaces of its
//                     own (no hostNetwork, hostPID, hostIPC), new or joined, never the node's
//   privileged        refused: host devices (linux.devices) or a read-write /sys
#pragma once

#include <optional>
#include <string>

#include "brig/result.h"
#include "config/sandbox.h"
#include "pod/handler.h"
#include "proto/oci.pb.h"
#include "security/seccomp.h"

namespace brig::pod {

// A container of a handler's pod: its plan and its profile resolved with it.
struct Held {
  v1::RuntimeHandler handler;
  Plan plan;
  config::Sandbox sb;
};

// The handler `root` (--root) belongs to and what it makes of `spec`'s annotations; nullopt
// if `root` is no handler's: the container runs as an OCI runtime runs it. Refusals name
// the annotation or the handler's file.
Result<std::optional<Held>> HeldBy(const std::string& root, const oci::Spec& spec);

// Narrows `spec` as drawn above, or refuses it.
Status HardenSpec(oci::Spec& spec);
// Narrows a process (an exec's) as drawn above.
void HardenProcess(oci::Process& p);
// The profile's filter, loaded before the pod's own (container/process.h floor_seccomp).
Result<security::SeccompProgram> ProfileFilter(const Held& held);

// The network namespace config.json names for the pod ("" if none does).
std::string NetnsPath(const oci::Spec& spec);

}  // namespace brig::pod
