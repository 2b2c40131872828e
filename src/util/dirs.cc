#include "util/dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include "util/parse.h"

namespace brig::util {
namespace {

struct Dirs {
  bool rootless = false;
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
  if (geteuid() == 0) return {};
  Dirs d;
  d.rootless = true;
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

bool Rootless() { return Chosen().rootless; }
const std::string& RunDir() { return Chosen().run; }
const std::string& CacheDir() { return Chosen().cache; }

}  // namespace brig::util
