// The supervisor's event loop: one epoll over file descriptors, timers (timerfds) and held
// signals (a signalfd), each with a callback. It knows nothing of sandboxes, sync messages
// or modes: whoever watches something decides what its event means. Single-threaded;
// nothing here blocks except epoll_wait.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <unordered_map>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::supervise {

// Signals held (blocked) from creation on and read through a signalfd. Holding them from
// before the first host resource brig makes keeps any of them from ending brig between
// making something and removing it; blocking them before a clone also keeps one from
// interrupting clone3 (nsjail #168).
class HeldSignals {
 public:
  static Result<HeldSignals> Hold(std::initializer_list<int> signals);
  HeldSignals() = default;
  int fd() const { return fd_.get(); }
  // The next pending signal, 0 if none.
  int Next() const;

 private:
  sys::UniqueFd fd_;
};

class Loop {
 public:
  using Callback = std::function<void()>;
  static Result<Loop> Create();

  // Calls `fn` whenever `fd` is readable, until Unwatch(fd).
  Status Watch(int fd, Callback fn);
  void Unwatch(int fd);
  // Calls `fn` once whenever one of `signals` arrives, with its number.
  Status Watch(const HeldSignals& signals, std::function<void(int)> fn);
  // Calls `fn` once, at `when`. Returns the timer's id, for Cancel.
  Result<int> At(std::chrono::steady_clock::time_point when, Callback fn);
  void Cancel(int timer);
  // Dispatches events until a callback calls Stop().
  Status Run();
  void Stop() { stopped_ = true; }

 private:
  Loop() = default;
  sys::UniqueFd ep_;
  // Shared so a callback may Watch or Unwatch (itself too) while it runs.
  std::unordered_map<int, std::shared_ptr<Callback>> watched_;
  std::unordered_map<int, sys::UniqueFd> timers_;
  bool stopped_ = false;
};

}  // namespace brig::supervise
