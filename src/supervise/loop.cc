#include "supervise/loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "sys/syscalls.h"

namespace brig::supervise {

Result<HeldSignals> HeldSignals::Hold(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : signals) sigaddset(&mask, s);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) < 0) return SysError("sigprocmask");
  HeldSignals h;
  h.fd_.Reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!h.fd_) return SysError("signalfd");
  return h;
}

int HeldSignals::Next() const {
  struct signalfd_siginfo si;
  if (read(fd_.get(), &si, sizeof si) != sizeof si) return 0;
  return static_cast<int>(si.ssi_signo);
}

Result<Loop> Loop::Create() {
  Loop loop;
  loop.ep_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!loop.ep_) return SysError("epoll_create1");
  return loop;
}

Status Loop::Watch(int fd, Callback fn) {
  BRIG_TRY(sys::EpollWatch(ep_.get(), fd));
  watched_[fd] = std::make_shared<Callback>(std::move(fn));
  return {};
}

void Loop::Unwatch(int fd) {
  if (watched_.erase(fd) > 0) (void)epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

Status Loop::Watch(const HeldSignals& signals, std::function<void(int)> fn) {
  return Watch(signals.fd(), [&signals, fn = std::move(fn)] {
    while (int sig = signals.Next()) fn(sig);
  });
}

Result<int> Loop::At(std::chrono::steady_clock::time_point when, Callback fn) {
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
  int id = t.get();
  BRIG_TRY(Watch(id, [this, id, fn = std::move(fn)] {
    Cancel(id);
    fn();
  }));
  timers_[id] = std::move(t);
  return id;
}

void Loop::Cancel(int timer) {
  Unwatch(timer);
  timers_.erase(timer);
}

Status Loop::Run() {
  stopped_ = false;
  while (!stopped_) {
    struct epoll_event evs[8];
    int n = epoll_wait(ep_.get(), evs, 8, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("epoll_wait");
    for (int i = 0; i < n && !stopped_; ++i) {
      auto it = watched_.find(evs[i].data.fd);
      if (it == watched_.end()) continue;  // unwatched by an earlier callback of this round
      std::shared_ptr<Callback> fn = it->second;
      (*fn)();
    }
  }
  return {};
}

}  // namespace brig::supervise
