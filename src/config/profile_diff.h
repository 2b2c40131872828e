// `brig policy diff PROFILE PROFILE`: what two resolved profiles (defaults filled in,
// config::LoadProfile) decide differently, field by field. The seccomp policies they name
// are compared syscall by syscall by security::DiffPolicies; this compares everything else
// and the policies' names. Pure.
#pragma once

#include <string>
#include <vector>

#include "proto/brig.pb.h"

namespace brig::config {

// One line per difference, in the profile's field order:
//   "- network.posture: POSTURE_NONE (A)  vs  POSTURE_ALLOWLIST (B)" for a single field,
//   "- filesystem.protected_paths: \".husky\" only in B" for each element of a repeated
//   field that one of them lacks (brokers as one-line text). Empty: they decide alike.
// `description` is not compared: it decides nothing.
std::vector<std::string> DiffProfiles(const v1::Profile& a, const v1::Profile& b);

}  // namespace brig::config
