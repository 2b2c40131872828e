// A child process held by its pidfd: signalled and reaped through it, never by a pid that
// could have been reused. One that is still unreaped when its owner goes is killed and
// reaped then, so no error path leaves a process of brig's behind.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <utility>

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

}  // namespace brig::sys
