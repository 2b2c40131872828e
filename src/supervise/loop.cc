// Supervision of a running sandbox: timeout, signal forwarding with a grace period, the
// workload's exit report, and the final reap of brig init (which takes the whole pid
// namespace with it).
#include "supervise/loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::supervise {
namespace {

Result<sys::UniqueFd> TimerAt(std::chrono::steady_clock::time_point when) {
  sys::UniqueFd t(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!t) return SysError("timerfd_create");
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  if (ns <= 0) ns = 1;
  struct itimerspec its = {};
  its.it_value.tv_sec = ns / 1000000000;
  its.it_value.tv_nsec = ns % 1000000000;
  if (timerfd_settime(t.get(), TFD_TIMER_ABSTIME, &its, nullptr) < 0) {
    return SysError("timerfd_settime");
  }
  return t;
}

// Applies one message from init. Returns false once the socket has nothing more to say.
bool HandleSync(const LoopInput& in, LoopOutput& out) {
  auto m = container::RecvMessage(in.sync_fd, 0);
  if (!m) return false;
  if (auto s = in.sequence->Accept(m->type); !s) {
    if (!out.error) out.error = s.error();
    return true;
  }
  if (m->type == container::Msg::kWorkloadExit) out.workload_status = m->err;
  if (m->type == container::Msg::kError && !out.error) out.error = container::DecodeError(*m);
  return true;
}

}  // namespace

Result<LoopOutput> Supervise(const LoopInput& in) {
  LoopOutput out;
  sys::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep) return SysError("epoll_create1");
  sys::UniqueFd timeout = BRIG_TRY(TimerAt(in.deadline));
  sys::UniqueFd grace;
  BRIG_TRY(sys::EpollWatch(ep.get(), in.pidfd));
  bool sync_open = in.sync_fd >= 0;
  if (sync_open) BRIG_TRY(sys::EpollWatch(ep.get(), in.sync_fd));
  BRIG_TRY(sys::EpollWatch(ep.get(), in.signal_fd));
  BRIG_TRY(sys::EpollWatch(ep.get(), timeout.get()));
  for (int fd : in.extra_fds) BRIG_TRY(sys::EpollWatch(ep.get(), fd));
  int oom_fd = in.group ? in.group->oom_event_fd() : -1;
  if (oom_fd >= 0) BRIG_TRY(sys::EpollWatch(ep.get(), oom_fd));
  int pending_signal = 0;

  // The cgroup kills every process of the sandbox at once. Without one, killing brig init
  // takes its whole pid namespace, and an unconfined workload leads its own process group
  // (it called setsid), which is as far as no isolation reaches.
  auto kill_all = [&] {
    if (in.group && in.group->Kill()) return;
    if (in.direct_pid > 0) (void)kill(-in.direct_pid, SIGKILL);
    (void)sys::PidfdSendSignal(in.pidfd, SIGKILL);
  };
  for (;;) {
    struct epoll_event evs[8];
    int n = epoll_wait(ep.get(), evs, 8, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("epoll_wait");
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == in.pidfd) {
        // Init is gone, and with it every process of its pid namespace. Drain what it
        // said last, then reap it.
        while (sync_open && HandleSync(in, out)) {
        }
        // An unconfined workload's leftovers end with the phase: its cgroup's, or else its
        // process group's (its pid is still held by the unreaped zombie here, so the group
        // cannot be another's).
        if (in.direct_pid > 0 && !(in.group && in.group->Kill())) {
          (void)kill(-in.direct_pid, SIGKILL);
        }
        siginfo_t si = {};
        if (syscall(SYS_waitid, P_PIDFD, in.pidfd, &si, WEXITED, &out.usage) < 0) {
          return SysError("waitid", "brig init");
        }
        if (in.direct_pid > 0) {
          out.workload_status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
                                                         : si.si_status & 0x7f;
        } else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
          out.init_signal = si.si_status;
        }
        return out;
      }
      if (fd == in.sync_fd) {
        if (!HandleSync(in, out)) {
          sync_open = false;
          (void)epoll_ctl(ep.get(), EPOLL_CTL_DEL, in.sync_fd, nullptr);
        }
      } else if (in.on_extra &&
                 std::find(in.extra_fds.begin(), in.extra_fds.end(), fd) != in.extra_fds.end()) {
        in.on_extra(fd);
      } else if (fd == oom_fd) {
        // v1 has no memory.oom.group: one OOM kill ends the whole sandbox here instead.
        out.oom_event = true;
        kill_all();
        (void)epoll_ctl(ep.get(), EPOLL_CTL_DEL, oom_fd, nullptr);
      } else if (fd == timeout.get()) {
        out.timed_out = true;
        kill_all();
        (void)epoll_ctl(ep.get(), EPOLL_CTL_DEL, timeout.get(), nullptr);
      } else if (fd == in.signal_fd) {
        struct signalfd_siginfo si;
        if (read(in.signal_fd, &si, sizeof si) != sizeof si) continue;
        int sig = static_cast<int>(si.ssi_signo);
        if (pending_signal != 0) {
          // A second signal: the caller is impatient, end it now.
          out.killed_for_signal = pending_signal;
          kill_all();
          continue;
        }
        pending_signal = sig;
        (void)sys::PidfdSendSignal(in.pidfd, sig);
        grace = BRIG_TRY(TimerAt(std::chrono::steady_clock::now() + in.grace));
        BRIG_TRY(sys::EpollWatch(ep.get(), grace.get()));
      } else if (grace && fd == grace.get()) {
        out.killed_for_signal = pending_signal;
        kill_all();
        (void)epoll_ctl(ep.get(), EPOLL_CTL_DEL, grace.get(), nullptr);
      }
    }
  }
}

}  // namespace brig::supervise
