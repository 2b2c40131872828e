// The walk of a workspace before it is mounted (design.md, Filesystem; brig-profile(5)):
// which paths are hidden (secrets the sandbox never sees), and which files of a read-write
// workspace are hard links to files outside it (held read-only, brig-run(1)).
// A profile's filesystem.hidden_paths entries follow gitignore's rule for where they
// match, with shell globs (fnmatch(3), no FNM_PERIOD: "*" matches a leading dot too) per
// path component:
//   NAME      no "/" (but a trailing one): a name at any depth ("*.pem", ".env*", ".npmrc")
//   NAME/     the same, for directories only (".ssh/")
//   A/B       a "/" inside: a path from the top of the workspace, a glob per component
//             ("config/*.key"); a "**" component matches any number of directories
//             ("**/secrets/*.json", "deploy/**/*.key")
// A match is hidden whole: brig does not look inside a hidden directory. The walk never
// follows a symlink and never leaves the workspace's filesystem. Matching is pure and
// unit-tested; ScanWorkspace reads the tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::fs {

struct HiddenPattern {
  std::vector<std::string> parts;  // the glob per component
  bool dir_only = false;           // written with a trailing "/"
  bool anywhere = false;           // one component: at any depth
  bool globstar = false;           // a "**" component
  bool literal = false;            // anywhere, and no wildcard: compared, not globbed

  // Whether the entry at `path` (components from the workspace's top) matches.
  bool Matches(const std::vector<std::string_view>& path, bool is_dir) const;
};

// Errors are BadInput("hidden path", entry, why): empty, absolute, "..", or "." or empty
// components.
Result<HiddenPattern> ParseHiddenPattern(std::string_view entry);

struct WorkspaceScan {
  // The hidden paths, relative to the workspace, in walk order.
  std::vector<std::string> hidden;
  // With `find_links`: every name the walk found of a regular file that has more names
  // (st_nlink) than the walk found, so at least one outside the workspace (or under a
  // hidden path), in walk order.
  std::vector<std::string> linked_out;
};

// Walks the tree at `dir` (a directory fd). A directory that is gone or replaced by
// something else while brig walks is passed over; any other failure to enter one fails
// the walk, naming it: what brig did not see, it could not hide or hold.
Result<WorkspaceScan> ScanWorkspace(int dir, const std::vector<HiddenPattern>& patterns,
                                    bool find_links);

}  // namespace brig::fs
