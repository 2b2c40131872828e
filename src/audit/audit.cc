// Appending audit events as JSON lines.
#include "audit/audit.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fd.h"
#include "util/proto_json.h"

namespace brig::audit {

Status Append(const std::string& path, const std::string& sandbox_id, v1::AuditEvent event,
              const std::string& name) {
  if (path.empty()) return {};
  *event.mutable_time() = google::protobuf::util::TimeUtil::GetCurrentTime();
  event.set_sandbox_id(sandbox_id);
  event.set_name(name);
  std::string line = util::ProtoJson(event) + '\n';
  // Never through a symlink, and never waiting on a FIFO: the audit log is a regular file.
  sys::UniqueFd fd(open(path.c_str(),
                        O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd) return SysError("open audit log", path);
  struct stat st;
  if (fstat(fd.get(), &st) < 0) return SysError("stat audit log", path);
  if (!S_ISREG(st.st_mode)) return Fail("open audit log", path, "not a regular file");
  ssize_t n;
  do {
    n = write(fd.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size())) return SysError("write audit log", path);
  return {};
}

}  // namespace brig::audit
