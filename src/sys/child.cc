#include "sys/child.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "sys/syscalls.h"

namespace brig::sys {

Status Child::Signal(int sig) const { return PidfdSendSignal(pidfd_.get(), sig); }

Result<ChildExit> Child::Reap() {
  ChildExit e;
  int r;
  do {
    r = static_cast<int>(syscall(SYS_waitid, P_PIDFD, pidfd_.get(), &e.info, WEXITED, &e.usage));
  } while (r < 0 && errno == EINTR);
  if (r < 0) return SysError("waitid", std::to_string(pid_));
  pidfd_.Reset();
  return e;
}

void Child::KillAndReap() {
  if (!pidfd_) return;
  (void)Signal(SIGKILL);
  (void)Reap();
}

std::optional<uint64_t> ParseStartTime(std::string_view stat) {
  // "PID (COMM) STATE PPID ...": COMM is whatever the process named itself, ')' and spaces
  // included, so the fields start after the last ')'. STATE is field 3, the start time 22.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  int field = 2;
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = std::min(rest.find(' '), rest.size());
    if (++field == 22) {
      std::string_view f = rest.substr(0, end);
      if (!f.empty() && f.back() == '\n') f.remove_suffix(1);
      uint64_t v = 0;
      auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (ec != std::errc() || ptr != f.data() + f.size()) return std::nullopt;
      return v;
    }
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

std::optional<uint64_t> StartTimeOf(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  char buf[1024];  // the fields up to the start time fit, whatever the command's name
  ssize_t n = read(fd.get(), buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseStartTime(std::string_view(buf, static_cast<size_t>(n)));
}

std::optional<UniqueFd> OpenProcessStartedAt(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return std::nullopt;
  auto pidfd = PidfdOpen(pid, std::to_string(pid));
  if (!pidfd || StartTimeOf(pid) != start_time) return std::nullopt;
  return std::move(*pidfd);
}

Result<Child> Holder(uint64_t namespaces, const std::string& subject) {
  int pidfd = -1;
  pid_t pid = BRIG_TRY_CTX(Clone3(CloneArgs::Held(namespaces, &pidfd)), subject);
  if (pid == 0) {
    for (;;) pause();
  }
  return Child(pid, UniqueFd(pidfd));
}

namespace {

bool InNamespace(const std::string& pid, const struct stat& ns) {
  struct stat st;
  std::string path = "/proc/" + pid + "/ns/pid";
  return stat(path.c_str(), &st) == 0 && st.st_dev == ns.st_dev && st.st_ino == ns.st_ino;
}

}  // namespace

Result<std::vector<pid_t>> PidsInPidNamespace(const struct stat& ns) {
  DIR* proc = opendir("/proc");
  if (!proc) return SysError("opendir", "/proc");
  std::vector<pid_t> pids;
  while (dirent* e = readdir(proc)) {
    pid_t p = 0;
    std::string_view name = e->d_name;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), p);
    if (ec != std::errc() || end != name.data() + name.size() || p <= 0) continue;
    if (InNamespace(std::string(name), ns)) pids.push_back(p);
  }
  closedir(proc);
  return pids;
}

Result<struct stat> PidNamespaceOf(pid_t pid) {
  std::string own = "/proc/" + std::to_string(pid) + "/ns/pid";
  struct stat target;
  if (stat(own.c_str(), &target) < 0) return SysError("stat", own);
  return target;
}

Status SignalPidNamespace(const struct stat& ns, int sig) {
  for (pid_t p : BRIG_TRY(PidsInPidNamespace(ns))) {
    auto pidfd = PidfdOpen(p, std::to_string(p));
    // Checked again through the pidfd's process: a pid reused since is not signalled.
    if (pidfd && InNamespace(std::to_string(p), ns)) (void)PidfdSendSignal(pidfd->get(), sig);
  }
  return {};
}

}  // namespace brig::sys
