#include "sys/id_map.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "sys/child.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

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

// The arguments newuidmap and newgidmap take: PID, then INSIDE HOST COUNT per mapping.
std::vector<std::string> HelperArgs(pid_t pid, const std::vector<IdMapping>& maps) {
  std::vector<std::string> args = {std::to_string(pid)};
  for (const IdMapping& m : maps) {
    args.insert(args.end(),
                {std::to_string(m.inside), std::to_string(m.host), std::to_string(m.count)});
  }
  return args;
}

// The helpers can only map another process's namespace, from outside it: a holder makes
// the namespace and is there while they map it; brig joins it (its owner's uid holds every
// capability there), and the holder is killed and reaped when it goes.
Status EnterMappedByHelpers(const IdMaps& maps) {
  Child holder = BRIG_TRY(Holder(CLONE_NEWUSER, "brig's user namespace"));
  BRIG_TRY(RunProgram(kNewUidMap, HelperArgs(holder.pid(), maps.uids), "brig's user namespace"));
  BRIG_TRY(RunProgram(kNewGidMap, HelperArgs(holder.pid(), maps.gids), "brig's user namespace"));
  std::string ns = "/proc/" + std::to_string(holder.pid()) + "/ns/user";
  UniqueFd fd(open(ns.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError("open", ns);
  if (setns(fd.get(), CLONE_NEWUSER) < 0) return SysError("setns", ns);
  if (unshare(CLONE_NEWNS) < 0) return SysError("unshare", "a mount namespace of brig's own");
  return DropSupplementaryGroups();
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

Status EnterOwnUserNamespace(const std::optional<IdMaps>& subordinate) {
  if (subordinate) return EnterMappedByHelpers(*subordinate);
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
