// Hidden paths (design.md, Filesystem; brig-profile(5)): secrets a workspace may hold that
// the sandbox never sees. A profile's filesystem.hidden_paths entries are shell globs
// (fnmatch(3), no FNM_PERIOD: "*" matches a leading dot too):
//   NAME      a name at the top of the workspace ("*.pem", ".env*"); one with no wildcard
//             (".npmrc", ".git-credentials") at any depth too
//   NAME/     the same, for directories only (".ssh/")
//   A/B       a path from the top of the workspace, a glob per component ("config/*.key")
// A match is hidden whole: brig does not look inside a hidden directory. The walk never
// follows a symlink and never leaves the workspace's filesystem. Matching is pure and
// unit-tested; FindHidden reads the tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::fs {

struct HiddenPattern {
  std::vector<std::string> parts;  // the glob per component
  bool dir_only = false;           // written with a trailing "/"
  bool anywhere = false;           // one component without wildcards: at any depth

  // Whether the entry at `path` (components from the workspace's top) matches.
  bool Matches(const std::vector<std::string_view>& path, bool is_dir) const;
};

// Errors are BadInput("hidden path", entry, why): empty, absolute, "..", or "." or empty
// components.
Result<HiddenPattern> ParseHiddenPattern(std::string_view entry);

// The hidden paths of the tree at `dir` (a directory fd), relative to it, in walk order.
// Unreadable directories are passed over: what brig cannot read, the sandbox's user cannot
// either.
Result<std::vector<std::string>> FindHidden(int dir, const std::vector<HiddenPattern>& patterns);

}  // namespace brig::fs
