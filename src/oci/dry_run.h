// `brig create --dry-run` and `brig run --dry-run --bundle` (brig-oci(1)): what create
// would make of a bundle, as one JSON object, made nothing of. Its mount steps are the
// plan the container's init would execute, listed as brig run's manifest lists its own
// (manifest::Mount), so both front ends' dry runs describe mounts one way.
#pragma once

#include <string>

#include "brig/result.h"
#include "oci/launch.h"
#include "proto/brig.pb.h"

namespace brig::oci {

// The plan as the dry run prints it. Pure.
v1::OciPlan Describe(const CreateOptions& o, const CreatePlan& p);

// PlanCreate's plan described, as JSON (proto field names), one line and a newline.
Result<std::string> DryRun(const CreateOptions& o);

}  // namespace brig::oci
