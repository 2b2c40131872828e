// A child process held by its pidfd: signalled and reaped through it, never by a pid that
// could have been reused. One that is still unreaped when its owner goes is killed and
// reaped then, so no error path leaves a process of brig's behind.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::sys {

struct ChildExit {
  siginfo_t info{};     // si_code CLD_EXITED (si_status: the code) or CLD_KILLED/DUMPED
  struct rusage usage{};  // of the child and every descendant it reaped
};

class Child {
 public:
  Child() = default;
  Child(pid_t pid, UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  Child(Child&& o) noexcept : pid_(std::exchange(o.pid_, 0)), pidfd_(std::move(o.pidfd_)) {}
  Child& operator=(Child&& o) noexcept {
    if (this != &o) {
      KillAndReap();
      pid_ = std::exchange(o.pid_, 0);
      pidfd_ = std::move(o.pidfd_);
    }
    return *this;
  }
  ~Child() { KillAndReap(); }

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  // Whether there is a child not yet reaped.
  bool held() const { return pidfd_.valid(); }

  Status Signal(int sig) const;
  // Waits for the child to exit and reaps it; the pidfd is closed.
  Result<ChildExit> Reap();
  // SIGKILL, then reap: what every path that gives up on the child does.
  void KillAndReap();
  // Lets the child go on without this owner, which then neither kills nor reaps it.
  void Release() {
    pid_ = 0;
    pidfd_.Reset();
  }

 private:
  pid_t pid_ = 0;
  UniqueFd pidfd_;
};

// A child that only waits until its owner kills it, cloned with `namespaces` (CLONE_NEW*):
// what holds a thing that needs a process to exist (a user namespace while its maps are
// written and it is opened, a systemd scope until the process meant for it is in it).
// Errors name `subject`.
Result<Child> Holder(uint64_t namespaces, const std::string& subject);

// Field 22 of /proc/PID/stat (the start time in clock ticks since boot). Pure; the command
// name in parentheses may hold spaces and parentheses.
std::optional<uint64_t> ParseStartTime(std::string_view stat);
// The start time of `pid` now, or nullopt if there is no such process.
std::optional<uint64_t> StartTimeOf(pid_t pid);
// A pidfd of `pid` if it is still the process that started at `start_time` (a state
// record's), else nullopt: a pid reused since cannot be taken for it. Checked after the
// pidfd is open, so the process checked is the one the pidfd holds.
std::optional<UniqueFd> OpenProcessStartedAt(pid_t pid, uint64_t start_time);

// The processes in the pid namespace whose ns file `ns` is a stat of, as /proc shows them
// to this process; those whose namespace it may not read are left out.
Result<std::vector<pid_t>> PidsInPidNamespace(const struct stat& ns);
// A stat of `pid`'s pid namespace's file (its own, not one its children were made in).
Result<struct stat> PidNamespaceOf(pid_t pid);
// `sig` to each of those processes, each through a pidfd checked to be in the namespace
// still, so a pid reused meanwhile is not signalled: where there is no cgroup to signal
// through (brig run's KillAll, an OCI container's kill --all), and where killing the
// namespace's init alone would end the rest only later.
Status SignalPidNamespace(const struct stat& ns, int sig);

}  // namespace brig::sys
