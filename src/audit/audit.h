// The audit log: JSON lines written by the supervisor only (design.md, Invariant 5). Each
// event opens, appends and closes, so no process of the sandbox ever holds the file.
#pragma once

#include <string>

#include "brig/result.h"
#include "proto/brig.pb.h"

namespace brig::audit {

// Stamps `event` with the current time, `sandbox_id` and `name` (--name) and appends it to `path`
// as one line (one write(2) on an O_APPEND fd: concurrent writers do not interleave within it). An
// empty path writes nothing.
Status Append(const std::string& path, const std::string& sandbox_id, v1::AuditEvent event,
              const std::string& name);

}  // namespace brig::audit
