#include "util/dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "util/files.h"
#include "util/parse.h"

namespace brig::util {
namespace {

struct Dirs {
  bool rootless = false;
  bool namespaced_root = false;
  std::string run = "/run/brig";
  std::string cache = "/var/cache/brig";
};

Dirs& Chosen() {
  static Dirs dirs;
  return dirs;
}

Result<std::string> UserRuntimeDir(char** environ) {
  std::string_view v = EnvLookup(environ, "XDG_RUNTIME_DIR").value_or("");
  const std::string what = "XDG_RUNTIME_DIR";
  if (v.empty()) {
    return BadInput(what, "",
                    "not set; brig keeps an ordinary user's state there (a login "
                    "session sets it, as /run/user/UID)");
  }
  std::string dir(v);
  if (dir[0] != '/') return BadInput(what, dir, "not an absolute path");
  struct stat st;
  if (lstat(dir.c_str(), &st) < 0) return SysError(what, dir).WithKind(ErrorKind::kBadInput);
  if (!S_ISDIR(st.st_mode)) return BadInput(what, dir, "not a directory");
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return BadInput(what, dir, "not a directory of this user's own with mode 0700");
  }
  return dir;
}

}  // namespace

Status ChooseDirs(char** environ) {
  Dirs d;
  if (geteuid() == 0) {
    // uid 0 of a user namespace other than the host's (rootless podman runs its runtime
    // so) is root of nothing outside it: where the namespace's user has a runtime
    // directory and does not say it is root, that user's directories are brig's, as runc
    // chooses its own state directory.
    // The environment first: root's own runs (sudo's USER=root, a daemon's empty
    // XDG_RUNTIME_DIR) read no /proc file for it.
    if (EnvLookup(environ, "USER").value_or("") == "root" ||
        EnvLookup(environ, "XDG_RUNTIME_DIR").value_or("").empty() || InHostUserNamespace()) {
      return {};
    }
    d.namespaced_root = true;
  } else {
    d.rootless = true;
  }
  d.run = BRIG_TRY(UserRuntimeDir(environ)) + "/brig";
  std::string_view cache = EnvLookup(environ, "XDG_CACHE_HOME").value_or("");
  std::string_view home = EnvLookup(environ, "HOME").value_or("");
  if (!cache.empty() && cache[0] == '/') {
    d.cache = std::string(cache) + "/brig";
  } else if (!home.empty() && home[0] == '/') {
    d.cache = std::string(home) + "/.cache/brig";
  } else {
    // Nowhere of the user's to keep caches across runs: they live with the state.
    d.cache = d.run + "/cache";
  }
  Chosen() = std::move(d);
  return {};
}

bool InHostUserNamespace() {
  auto map = ReadFile("/proc/self/uid_map");
  if (!map) return true;
  std::istringstream in(*map);
  unsigned long inside = 1, outside = 1, count = 0;
  in >> inside >> outside >> count;
  return inside == 0 && outside == 0 && count == 4294967295UL;
}

bool Rootless() { return Chosen().rootless; }
bool NamespacedRoot() { return Chosen().namespaced_root; }
const std::string& RunDir() { return Chosen().run; }
const std::string& CacheDir() { return Chosen().cache; }

}  // namespace brig::util
