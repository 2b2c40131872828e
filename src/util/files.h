// Small file helpers for the parent side: whole-file reads with errors that name the path.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::util {

// For brig's own files (/proc, cgroups, its state). A file the user hands brig goes
// through ReadUserFile.
Result<std::string> ReadFile(const std::string& path);
// How far a user's file is read: more than any profile, policy or credential holds.
inline constexpr size_t kMaxUserFile = 4 << 20;
// Whether a user's file may be reached through a symlink at its own name.
enum class FinalLink { kRefuse, kFollow };
// A file the user hands brig (a profile, a seccomp policy, a header's credential file):
// opened without blocking (a FIFO with no writer would stall brig past its timeout), and
// without following a symlink at its name unless `link` says so; refused unless it is a
// regular file; read up to `max_bytes` (a path of /dev/zero would never end).
Result<std::string> ReadUserFile(const std::string& path, size_t max_bytes = kMaxUserFile,
                                 FinalLink link = FinalLink::kRefuse);
// Reads `fd` from `offset` to its end.
Result<std::string> ReadFd(int fd, off_t offset);
// Reads a stream (a pipe, a terminal: stdin) to EOF, refusing more than `max_bytes`.
Result<std::string> ReadStream(int fd, const std::string& name, size_t max_bytes = kMaxUserFile);
// Makes `dir` and its missing parents, 0700 (brig's state under /run/brig).
Status MakeDirs(const std::string& dir);

// `path` with every symlink resolved and made absolute (realpath(3)); nullopt with errno
// set if it cannot be, for the caller's own SysError.
std::optional<std::string> RealPath(const std::string& path);
// Whether the normalised absolute path `path` is `dir` or lies under it, by components
// ("/a/bc" is not under "/a/b"; everything is under "/").
bool PathWithin(const std::string& path, const std::string& dir);
// Writes `data` to an existing file in one write(2), as proc, sys and cgroup files want.
Status WriteFile(const std::string& path, const std::string& data);
// Writes `data` to `path` atomically: a temporary file beside it, fsync, rename. Concurrent
// writers of the same path each rename a complete file; the last one wins.
Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode = 0644);
// The same, without flushing to disk: what a reboot ends anyway (an OCI container's
// record and pid files under /run) needs a reader never to see half a file, not durability;
// an fsync on every record write costs milliseconds on a busy disk.
Status ReplaceFile(const std::string& path, const std::string& data, mode_t mode = 0644);
// Called with the path of a temporary file before it is created, to note it where brig gc
// finds it (the sandbox's record) if brig is killed before it is renamed or removed.
using NoteTemp = std::function<Status(const std::string& temp)>;
// WriteFileAtomic for a path the user names (--result): the temporary file (PATH.tmpPID)
// is noted with `note_temp` (if given), then created exclusively, never through a symlink,
// FIFO or device left at its name; the rename is refused unless `path` is a regular file or
// nothing, so a FIFO, symlink or device node there (/dev/null) is never replaced.
Status WriteUserFileAtomic(const std::string& path, const std::string& data,
                           const NoteTemp& note_temp, mode_t mode = 0644);
// The names in the directory `dirfd` (but "." and ".."), sorted; none if it cannot be read.
std::vector<std::string> ListDir(int dirfd);
// Removes `name` in `dirfd` and, if it is a directory, everything in it, never following a
// symlink (`path` names it in errors). Meant for a tree no one else writes any more.
Status RemoveTreeAt(int dirfd, const std::string& name, const std::string& path);
// Gives `name` in `dirfd` and, if it is a directory, everything in it to uid:gid, never
// following a symlink (a symlink itself is chowned). Meant for a tree brig made and no one
// else can reach yet: children first, so the tree is no one else's until its top is.
Status ChownTreeAt(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                   const std::string& path);

}  // namespace brig::util
