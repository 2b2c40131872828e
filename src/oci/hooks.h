// config.json's hooks (config.md "POSIX-platform Hooks"): each run in order, with the
// container's state as JSON on its stdin, in the namespaces of whoever calls RunHooks
// (the runtime's for prestart, createRuntime, poststart and poststop; the container's
// for createContainer and startContainer, from container init).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "brig/result.h"
#include "proto/oci.pb.h"

namespace brig::oci {

// Runs every hook of `hooks` (the stage named `stage`, e.g. "hooks.prestart"). A hook
// that exits non-zero, is killed, or outlives its timeout (then killed) is an error
// naming the stage, its index and its path; the hooks after it do not run.
Status RunHooks(const google::protobuf::RepeatedPtrField<Hook>& hooks, std::string_view stage,
                const std::string& state_json);
// poststart and poststop: every hook runs, and each failure is a warning in the log (the
// spec: the remaining hooks and the lifecycle go on).
void RunHooksWarning(const google::protobuf::RepeatedPtrField<Hook>& hooks,
                     std::string_view stage, const std::string& state_json);

// How long a wait of brig's that spans the hooks of `stages` may take: a setup step's time
// (container::kSetupStepTimeoutMs) and every hook's timeout, or -1 (no bound) if a hook
// has none, whose time the specification leaves open.
int StepWithHooksMs(
    std::initializer_list<const google::protobuf::RepeatedPtrField<Hook>*> stages);

}  // namespace brig::oci
