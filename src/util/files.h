// Small file helpers for the parent side: whole-file reads with errors that name the path.
#pragma once

#include <sys/types.h>

#include <string>

#include "brig/result.h"

namespace brig::util {

Result<std::string> ReadFile(const std::string& path);
// Reads `fd` from `offset` to its end.
Result<std::string> ReadFd(int fd, off_t offset);
// Makes `dir` and its missing parents, 0700 (brig's state under /run/brig).
Status MakeDirs(const std::string& dir);
// Writes `data` to an existing file in one write(2), as proc, sys and cgroup files want.
Status WriteFile(const std::string& path, const std::string& data);
// Writes `data` to `path` atomically: a temporary file beside it, fsync, rename. Concurrent
// writers of the same path each rename a complete file; the last one wins.
Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode = 0644);
// Removes `name` in `dirfd` and, if it is a directory, everything in it, never following a
// symlink (`path` names it in errors). Meant for a tree no one else writes any more.
Status RemoveTreeAt(int dirfd, const std::string& name, const std::string& path);

}  // namespace brig::util
