#include "security/ucounts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sys/fd.h"

namespace brig::security {

Status CapUserCounts(const UserCounts& c) {
  struct Cap {
    const char* name;
    uint64_t value;
  };
  const Cap caps[] = {
      {"max_inotify_instances", c.inotify_instances},
      {"max_inotify_watches", c.inotify_watches},
      {"max_fanotify_groups", c.fanotify_groups},
      {"max_fanotify_marks", c.fanotify_marks},
      {"max_cgroup_namespaces", c.namespaces},
      {"max_ipc_namespaces", c.namespaces},
      {"max_mnt_namespaces", c.namespaces},
      {"max_net_namespaces", c.namespaces},
      {"max_pid_namespaces", c.namespaces},
      {"max_time_namespaces", c.namespaces},
      {"max_user_namespaces", c.namespaces},
      {"max_uts_namespaces", c.namespaces},
  };
  for (const auto& cap : caps) {
    std::string path = std::string("/proc/sys/user/") + cap.name;
    sys::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) continue;  // a count this kernel does not keep
      return SysError("open", path);
    }
    std::string v = std::to_string(cap.value);
    if (write(fd.get(), v.data(), v.size()) != static_cast<ssize_t>(v.size())) {
      return SysError("write", path);
    }
  }
  return {};
}

}  // namespace brig::security
