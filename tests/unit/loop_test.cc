// supervise::Loop: fds, timers and held signals dispatched to callbacks, and the child
// handle that kills and reaps whatever it still holds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "supervise/loop.h"
#include "sys/child.h"
#include "sys/syscalls.h"

namespace brig::supervise {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  sys::UniqueFd rd, wr;
  Pipe() {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    rd.Reset(p[0]);
    wr.Reset(p[1]);
  }
};

TEST(Loop, CallsAReadableFdsCallbackAndStopsWhenAskedTo) {
  auto loop = Loop::Create();
  ASSERT_TRUE(loop) << loop.error().Render();
  Pipe p;
  std::string got;
  ASSERT_TRUE(loop->Watch(p.rd.get(), [&] {
    char c;
    while (read(p.rd.get(), &c, 1) == 1) got += c;
    if (got == "ab") loop->Stop();
  }));
  ASSERT_EQ(write(p.wr.get(), "ab", 2), 2);
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(got, "ab");
}

TEST(Loop, TimersFireInTheirOrderAndACancelledOneNever) {
  auto loop = Loop::Create();
  ASSERT_TRUE(loop);
  std::vector<int> fired;
  auto now = Clock::now();
  auto cancelled = loop->At(now + std::chrono::milliseconds(1), [&] { fired.push_back(0); });
  ASSERT_TRUE(cancelled);
  loop->Cancel(*cancelled);
  ASSERT_TRUE(loop->At(now + std::chrono::milliseconds(20), [&] {
    fired.push_back(2);
    loop->Stop();
  }));
  ASSERT_TRUE(loop->At(now + std::chrono::milliseconds(2), [&] { fired.push_back(1); }));
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

TEST(Loop, ACallbackMayUnwatchAnotherFdReadyInTheSameRound) {
  auto loop = Loop::Create();
  ASSERT_TRUE(loop);
  Pipe a, b, done;
  int calls = 0;
  // Whichever runs first unwatches the other, then asks for a stop on the next round.
  auto unwatch_other = [&](int self, int other) {
    char c;
    (void)!read(self, &c, 1);
    ++calls;
    loop->Unwatch(other);
    (void)!write(done.wr.get(), "x", 1);
  };
  ASSERT_TRUE(loop->Watch(a.rd.get(), [&] { unwatch_other(a.rd.get(), b.rd.get()); }));
  ASSERT_TRUE(loop->Watch(b.rd.get(), [&] { unwatch_other(b.rd.get(), a.rd.get()); }));
  ASSERT_TRUE(loop->Watch(done.rd.get(), [&] { loop->Stop(); }));
  ASSERT_EQ(write(a.wr.get(), "x", 1), 1);
  ASSERT_EQ(write(b.wr.get(), "x", 1), 1);
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(calls, 1);
}

TEST(Loop, HeldSignalsArriveAsCallbacks) {
  auto held = HeldSignals::Hold({SIGUSR2});
  ASSERT_TRUE(held) << held.error().Render();
  auto loop = Loop::Create();
  ASSERT_TRUE(loop);
  int got = 0;
  ASSERT_TRUE(loop->Watch(*held, [&](int sig) {
    got = sig;
    loop->Stop();
  }));
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(got, SIGUSR2);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  sigprocmask(SIG_UNBLOCK, &s, nullptr);
}

Result<sys::Child> Spawn(bool exit_at_once) {
  int pidfd = -1;
  sys::CloneArgs ca;
  ca.flags = CLONE_PIDFD;
  ca.pidfd = &pidfd;
  ca.exit_signal = SIGCHLD;
  pid_t pid = BRIG_TRY(sys::Clone3(ca));
  if (pid == 0) {
    if (exit_at_once) _exit(7);
    for (;;) pause();
  }
  return sys::Child(pid, sys::UniqueFd(pidfd));
}

TEST(Child, ReapReportsTheExitAndLetsGo) {
  auto c = Spawn(true);
  ASSERT_TRUE(c) << c.error().Render();
  auto e = c->Reap();
  ASSERT_TRUE(e) << e.error().Render();
  EXPECT_EQ(e->info.si_code, CLD_EXITED);
  EXPECT_EQ(e->info.si_status, 7);
  EXPECT_FALSE(c->held());
}

TEST(Child, OneStillHeldIsKilledAndReapedWhenItGoes) {
  pid_t pid;
  {
    auto c = Spawn(false);
    ASSERT_TRUE(c) << c.error().Render();
    pid = c->pid();
  }
  // Reaped: the pid is no child of this process any more.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace brig::supervise
