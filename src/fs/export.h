// --export-changes: what a sandbox changed in its copy workspace, written out on the host
// after the sandbox is gone. The overlay's upper layer holds exactly the changes: every file
// the sandbox wrote or created (copied up whole), the directories on their way, and a
// whiteout for each path it deleted. brig reads that layer itself, by fd, never following a
// link the sandbox made, and writes:
//   DIR/files/       each changed or new regular file and symlink at its path (modes
//                    kept, set-id bits dropped); a directory for each new one
//   DIR/deleted      each deleted path, one a line, relative to the workspace (a deleted
//                    directory is one line); "\n" and "\\" in a name are escaped
//   DIR/git.diff     when the source has .git: `git diff --binary` of every changed path
//                    outside .git that git status would show, source against copy, which
//                    `git apply` takes in the source (export_git.h: git runs as the
//                    workspace's owner and reads no configuration of the workspace's)
//   DIR/commits.mbox, DIR/commits.bundle
//                    with git.diff, where the copy's HEAD is another commit than the
//                    source's: the commits since, as `git format-patch --stdout` writes
//                    them (for git am) and as a bundle of the ref "sandbox" (for git fetch);
//                    the copy's refs and hooks are never read or applied
//   DIR/ignored.txt  with git.diff: the changed files that the repository's ignore rules
//                    (the copy's .gitignore files, the source's .git/info/exclude; a
//                    tracked file is never ignored) leave out of git.diff, still in files/:
//                    one a line, "SIZE<tab>PATH", SIZE in bytes, PATH escaped as in deleted
// DIR and everything in it belong to `owner` (brig run --export-owner; by default the
// workspace's owner, or brig's caller for a workspace of root's), DIR with the source
// directory's permission bits: the owner applies the patch. git runs as the workspace's
// owner, with no capability even where that is root (export_git.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "state/record.h"

namespace brig::fs {

// `scratch` is the copy's scratch space (its "upper" dir), `merged` the copy as the sandbox
// saw it, `source` the workspace; `dest` is created and must not exist, and is written
// whole or not at all: into DEST.partial-PID (root's, 0700, until it is complete), noted in
// `record` first so brig gc removes it if brig is killed on the way, then renamed.
// `protected_paths` are left out: the sandbox cannot have changed them, and what the upper
// layer has there is brig's own placeholder. So are the whiteouts brig made at the `hidden`
// paths (what the sandbox made there is exported).
Status ExportChanges(state::Record& record, int scratch, int merged, const std::string& source,
                     const std::string& dest, const std::vector<std::string>& protected_paths,
                     const std::vector<std::string>& hidden, std::pair<uid_t, gid_t> owner);

}  // namespace brig::fs
