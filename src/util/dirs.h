// Where brig keeps what it makes. Root's: /run/brig and /var/cache/brig. An ordinary
// user's (brig without root): $XDG_RUNTIME_DIR/brig, and $XDG_CACHE_HOME/brig or
// ~/.cache/brig, which are the user's own, so one user's runs never meet another's.
#pragma once

#include <string>

#include "brig/result.h"

namespace brig::util {

// Chooses them for this process, once, before anything is made: root's when the effective
// uid is 0 (but see NamespacedRoot), else the user's from `environ`. Fails, naming the variable,
// where a user's cannot be: no XDG_RUNTIME_DIR (a login session sets it), or one that is not an
// absolute path to a directory of the user's own with mode 0700.
Status ChooseDirs(char** environ);

// Whether brig runs without root: ChooseDirs found an effective uid other than 0. Fixed
// then, for brig and every process it forks (whose euid may change, or read as the
// overflow uid in a new user namespace before its map is written).
bool Rootless();
// Whether brig is uid 0 of a user namespace other than the host's, whose user has a runtime
// directory (rootless podman runs its runtime so): brig's directories are then that user's,
// as an ordinary user's are, and it may create no cgroup the host has not delegated.
bool NamespacedRoot();
// Whether this process's user namespace is the host's: its uid_map maps every id to itself.
// Elsewhere, uid 0 makes no device node (mknod) and mounts no filesystem the namespace's
// owner could not.
bool InHostUserNamespace();
// /run/brig, or $XDG_RUNTIME_DIR/brig.
const std::string& RunDir();
// /var/cache/brig, or $XDG_CACHE_HOME/brig (~/.cache/brig).
const std::string& CacheDir();

}  // namespace brig::util
