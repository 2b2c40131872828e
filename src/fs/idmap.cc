// An id map is given to mount_setattr as a user namespace: brig makes one for the call, in
// a child that does nothing but hold it, writes its maps as root, and ends the child.
#include "fs/idmap.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "sys/child.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::fs {
namespace {

// A user namespace whose uid 'from' is host 'to' (one id each way), as an fd.
Result<sys::UniqueFd> UserNamespace(const IdMap& m) {
  int pidfd = -1;
  sys::CloneArgs ca;
  ca.flags = CLONE_NEWUSER | CLONE_PIDFD;
  ca.pidfd = &pidfd;
  ca.exit_signal = SIGCHLD;
  pid_t pid = BRIG_TRY_CTX(sys::Clone3(ca), "id map");
  if (pid == 0) {
    for (;;) pause();  // held until the parent kills it (sys::Child)
  }
  sys::Child holder(pid, sys::UniqueFd(pidfd));
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  auto line = [](uint32_t from, uint32_t to) {
    return std::to_string(from) + " " + std::to_string(to) + " 1\n";
  };
  BRIG_TRY_CTX(util::WriteFile(proc + "uid_map", line(m.from_uid, m.to_uid)), "id map");
  BRIG_TRY_CTX(util::WriteFile(proc + "gid_map", line(m.from_gid, m.to_gid)), "id map");
  sys::UniqueFd ns(open((proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return SysError("open", proc + "ns/user").Wrap("id map");
  return ns;
}

}  // namespace

Result<bool> MapTreeIds(int tree, const IdMap& map, const std::string& subject) {
  sys::UniqueFd ns = BRIG_TRY(UserNamespace(map));
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(ns.get());
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
    if (errno != EINVAL && errno != EOPNOTSUPP) return SysError("mount_setattr", subject);
    return false;
  }
  return true;
}

}  // namespace brig::fs
