// Profiles (policies/profiles/*.textproto): finding, parsing, validating and completing
// them with the built-in defaults (limits.h). Turning one and a run's overrides into a
// plan is config::Resolve's (resolve.h). Pure except for reading files.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/brig.pb.h"
#include "util/dirs.h"

namespace brig::config {

// The policies directory: `flag` if given, else the installed one, else the source tree's.
std::string ResolvePolicyDir(const std::string& flag);

// A NAME is looked up as DIR/<kind>/NAME.textproto; anything with a '/' is a path. Pure:
// refuses only a name that cannot be one.
Result<std::string> PolicyPath(const std::string& dir, const std::string& kind,
                               const std::string& name_or_path);
// Whether `path`, which PolicyPath gave for `name_or_path`, can be read; a NAME that is not
// there is refused with the names that are.
Status CheckPolicyFile(const std::string& path, const std::string& kind,
                       const std::string& name_or_path);
// PolicyPath, then CheckPolicyFile.
Result<std::string> PolicyFilePath(const std::string& dir, const std::string& kind,
                                   const std::string& name_or_path);
// Names of DIR/<kind>/*.textproto, sorted.
std::vector<std::string> ListPolicyNames(const std::string& dir, const std::string& kind);

// Parses and validates a profile; errors name file:line:column and the field.
Result<v1::Profile> ParseProfile(const std::string& text, const std::string& name);
// Parses a profile and appends every validation error to `errors`, each at the
// file:line:column of its field where the text has one. A syntax error stops the parse
// (protobuf's parser stops at the first) and is the result's error.
Result<v1::Profile> ParseProfileAll(const std::string& text, const std::string& name,
                                    std::vector<Error>& errors);
// The seccomp policy file a profile names, as brig run finds it: a NAME in DIR/seccomp, an
// absolute path as is, and a relative path with a '/' beside the profile's own file
// `profile_path`. Pure, as PolicyPath.
Result<std::string> SeccompPolicyPath(const std::string& dir, const std::string& profile_path,
                                      const std::string& policy);
// Loads NAME or PATH from `dir` and fills every default in, so that the result says
// everything the profile decides (brig policy show prints it).
Result<v1::Profile> LoadProfile(const std::string& dir, const std::string& name_or_path);
// The same, with the file it read and that file's text (the manifest's sha256 is of it).
struct LoadedProfile {
  v1::Profile profile;
  std::string path, text;
};
// With a `cache_dir`, the parsed profile comes from there when an entry holds exactly
// this text (util/trusted_cache.h), and is stored there otherwise: parsing text builds
// protobuf's descriptors, most of a millisecond of every start. Validated either way.
Result<LoadedProfile> LoadProfileFile(const std::string& dir, const std::string& name_or_path,
                                      const std::string& cache_dir = "");
// brig run's profile cache (not --dry-run's, which writes nothing).
inline std::string ProfileCacheDir() { return util::RunDir() + "/profiles"; }
// The built-in defaults of Limits (limits.h), filled into unset fields.
void FillDefaults(v1::Profile& profile);

// Why `target` cannot be a mount's target inside (not absolute and normalised, or on what
// brig mounts itself or the root's system directories), or "": a profile's named mount's
// and brig run --ro-bind's alike.
std::string MountTargetProblem(const std::string& target);

}  // namespace brig::config
