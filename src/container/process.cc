#include "container/process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/command.h"
#include "container/sync.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::container {
namespace {

bool HasFilter(const ProcessSpec& p) { return p.seccomp || p.profile_seccomp; }

// Whether the filters load before the credentials: only where they leave no_new_privs off.
bool FilterFirst(const ProcessSpec& p) {
  return HasFilter(p) && p.credentials && !p.credentials->no_new_privs;
}

// The filters, and a listener, if the process's own has one, handed over at once: the next
// notified syscall waits until an agent holds it.
Status LoadFilter(const ProcessSpec& p) {
  if (p.profile_seccomp) {
    int none = BRIG_TRY(security::LoadSeccomp(*p.profile_seccomp));
    if (none >= 0) close(none);
  }
  if (!p.seccomp) return {};
  int listener = BRIG_TRY(security::LoadSeccomp(*p.seccomp));
  if (listener < 0) return {};
  if (p.listener_to < 0) {
    close(listener);
    return Fail("seccomp", "listener", "no one to hand it to", ErrorKind::kInternal);
  }
  return HandOverListener(p.listener_to, listener);
}

}  // namespace

ProcessSpec WorkloadOf(const config::Sandbox& sb) {
  ProcessSpec p;
  p.args = sb.argv;
  p.env = sb.env;
  p.cwd = sb.workdir;
  p.rlimits = security::RlimitList(sb.rlimits);
  p.scripts_via_shell = true;
  return p;
}

Status TakeOn(const ProcessSpec& p) {
  if (p.oom_score_adj) {
    BRIG_TRY(util::WriteFile("/proc/self/oom_score_adj", std::to_string(*p.oom_score_adj)));
  }
  if (!p.cwd.empty()) BRIG_TRY(sys::EnterDirInRoot(p.cwd, p.prefix + "cwd"));
  for (int fd = 3; fd < 3 + p.preserved_fds; ++fd) {
    if (fcntl(fd, F_SETFD, 0) < 0) return SysError("fcntl", "preserved fd " + std::to_string(fd));
  }
  BRIG_TRY(sys::CloseRangeCloexec(static_cast<unsigned>(3 + p.preserved_fds)));
  if (FilterFirst(p)) BRIG_TRY(LoadFilter(p));
  if (p.credentials) {
    BRIG_TRY(security::ApplyCredentials(*p.credentials));
  } else {
    BRIG_TRY(security::ApplyRlimits(p.rlimits, p.prefix));
  }
  if (p.umask) umask(*p.umask);
  return {};
}

Status LoadFilterNow(ProcessSpec& p) {
  if (!HasFilter(p) || FilterFirst(p)) return {};
  BRIG_TRY(LoadFilter(p));
  p.seccomp.reset();
  p.profile_seccomp.reset();
  return {};
}

Error Exec(const ProcessSpec& p, const std::string& path) {
  if (HasFilter(p) && !FilterFirst(p)) {
    if (auto s = LoadFilter(p); !s) return std::move(s).error();
  }
  std::vector<char*> argv = ExecArray(p.args), envp = ExecArray(p.env);
  execve(path.c_str(), argv.data(), envp.data());
  int e = errno;
  if (e == ENOEXEC && p.scripts_via_shell) {
    std::vector<std::string> script = ScriptArgv(path, p.args);
    std::vector<char*> script_argv = ExecArray(script);
    execve(script_argv[0], script_argv.data(), envp.data());
  }
  errno = e;
  Error err = SysError("execve", p.args[0]);
  err.kind = ExecErrorKind(e);
  return err;
}

}  // namespace brig::container
