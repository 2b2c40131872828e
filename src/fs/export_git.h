// git.diff for --export-changes (fs/export.h): of the paths a copy changed, the ones `git
// status` would show, as a patch `git apply` takes in the source, and the ones the
// repository's own ignore rules leave out. git runs in a child of brig's, in a mount
// namespace of its own, as the workspace's owner, and reads no configuration of the
// workspace's (its .git/config may name a program for core.fsmonitor, a hook, a diff
// driver, textconv or a filter, which would run on the host) nor the host's: only a git
// dir brig writes and the -c settings in export_git.cc. What it sees:
//   /tmp       a tmpfs of the child's own: git/ (that git dir; the source's index and
//              info/exclude reached through o/), w/ (the work tree: the copy's .gitignore
//              files at their paths, read by brig without following a symlink)
//   /tmp/o     the source, /tmp/n the export's files/: read-only clones of the trees brig
//              opened, so no path is looked up again on the host
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::fs {

// A path the copy changed: whether the source and the copy have it as a file or symlink.
struct GitPath {
  std::string path;
  bool old_exists = false, new_exists = false;
};

struct GitTrees {
  int source = -1;  // the workspace (the copy's lower layer)
  int files = -1;   // the export's files/
  int merged = -1;  // the copy as the sandbox left it: where its .gitignore files are read
  int upper = -1;   // the copy's changes (the overlay's upper layer): its new git objects
  uid_t uid = 0;    // the workspace's owner, as whom git runs
  gid_t gid = 0;
};

struct GitChanges {
  std::string patch;                 // git.diff
  std::vector<std::string> ignored;  // the paths of `paths` left out of it, in its order
  // The commits the copy made on top of the source's HEAD, where its HEAD moved: as `git
  // format-patch --stdout` writes them (commits.mbox, for git am) and as a bundle of the
  // ref "sandbox" (commits.bundle, for git fetch). Empty where there are none.
  std::string mbox, bundle;
};

// The commit a repository's HEAD names, read by brig from `root`/.git (HEAD, then the ref
// it names, loose or packed), never following a symlink: 40 or 64 hex digits, or nothing.
// The files are the sandbox's: the parsers below are pure, and fuzzed.
std::optional<std::string> HeadCommit(int root);

// An object name: 40 (sha1) or 64 (sha256) lowercase hex digits.
bool IsObjectHash(std::string_view h);
// HEAD's first line: a detached commit (hash) or "ref: refs/..." (ref, of [A-Za-z0-9/._-],
// no "..", not ending in '/'); nothing else.
struct GitHead {
  std::string hash, ref;
};
std::optional<GitHead> ParseHead(std::string_view text);
// `ref`'s commit in a packed-refs file ("HASH REF" lines), if it is there.
std::optional<std::string> PackedRef(std::string_view packed, std::string_view ref);

// Classifies `paths` with `git check-ignore` (the index's tracked files are never ignored,
// as in git status) and diffs the rest with `git diff --no-index --binary`, source against
// copy. Ignore rules: the .gitignore files of the copy, the source's .git/info/exclude;
// never a core.excludesFile (the repository's config is not read, nor the host user's).
// Then, where the copy's HEAD is another commit than the source's, the commits between as
// GitChanges' mbox and bundle: brig copies the objects the sandbox added (regular files,
// no symlink followed) into its own git dir, which reaches the source's as alternates and
// has one ref, brig's; nothing of the copy's refs, config or hooks is read or applied.
Result<GitChanges> DiffForGit(const GitTrees& trees, const std::vector<GitPath>& paths);

}  // namespace brig::fs
