// A copy workspace's scratch space under --copy-dir with a size cap the kernel enforces
// (--disk-size): an ext4 file system in a sparse file of that size, on a loop device. Past
// the cap, writes inside get ENOSPC. The file has no name (O_TMPFILE in brig's directory
// under --copy-dir), so nothing opens it by path and nothing of it is left once the loop
// device lets go; the device clears itself when its last user, the overlay, is gone.
// Neither ever enters the sandbox: it sees only the overlay.
#pragma once

#include <cstdint>
#include <string>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::fs {

// What a disk image needs of the host and of the file system under `dir` (--copy-dir),
// checked before anything is made: mkfs.ext4, loop devices, ext4 in the kernel, and a file
// system that holds an unnamed file. Errors are bad input that name what is missing.
Status CheckDiskImage(const std::string& dir);

// Makes an image of `size` bytes in the directory `dir` (`path` names it), formats it,
// attaches it to a loop device and returns its file system, detached (nosuid, nodev,
// noexec). The image and the device go when the last mount of it does.
Result<sys::UniqueFd> NewDiskImage(int dir, const std::string& path, uint64_t size);

}  // namespace brig::fs
