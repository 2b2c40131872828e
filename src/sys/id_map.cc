#include "sys/id_map.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "sys/fd.h"

namespace brig::sys {
namespace {

Status WriteProcFile(pid_t pid, const char* name, const std::string& data) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  if (write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return SysError("write", path);
  }
  return {};
}

}  // namespace

std::string RenderIdMap(const std::vector<IdMapping>& maps) {
  std::string out;
  for (const IdMapping& m : maps) {
    out += std::to_string(m.inside) + " " + std::to_string(m.host) + " " + std::to_string(m.count) +
           "\n";
  }
  return out;
}

Status WriteIdMaps(pid_t pid, const IdMaps& maps) {
  BRIG_TRY(WriteProcFile(pid, "uid_map", RenderIdMap(maps.uids)));
  if (maps.deny_setgroups) BRIG_TRY(WriteProcFile(pid, "setgroups", "deny"));
  return WriteProcFile(pid, "gid_map", RenderIdMap(maps.gids));
}

Status EnterOwnUserNamespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
    return SysError("unshare", "a user and mount namespace of brig's own");
  }
  return WriteIdMaps(getpid(), {.uids = {{.inside = uid, .host = uid}},
                                .gids = {{.inside = gid, .host = gid}},
                                .deny_setgroups = true});
}

}  // namespace brig::sys
