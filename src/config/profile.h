// Profiles (policies/profiles/*.textproto): finding, parsing, validating and completing
// them, and turning one plus the per-run options into a Sandbox. A profile fixes the
// posture; the command line may change only Limits and the rootfs/workspace paths
// (design.md, Invariant 2). Pure except for reading files.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/brig.pb.h"

namespace brig::config {

inline constexpr const char* kDefaultProfile = "untrusted-code-read";

// The policies directory: `flag` if given, else the installed one, else the source tree's.
std::string ResolvePolicyDir(const std::string& flag);

// A NAME is looked up as DIR/<kind>/NAME.textproto; anything with a '/' is a path.
Result<std::string> PolicyFilePath(const std::string& dir, const std::string& kind,
                                   const std::string& name_or_path);
// Names of DIR/<kind>/*.textproto, sorted.
std::vector<std::string> ListPolicyNames(const std::string& dir, const std::string& kind);

// Parses and validates a profile; errors name file:line:column or the field.
Result<v1::Profile> ParseProfile(const std::string& text, const std::string& name);
// Loads NAME or PATH from `dir` and fills every default in, so that the result says
// everything the profile decides (brig policy show prints it).
Result<v1::Profile> LoadProfile(const std::string& dir, const std::string& name_or_path);
// The built-in defaults of Limits, filled into unset fields.
void FillDefaults(v1::Profile& profile);

}  // namespace brig::config
