// The stdio relay (stdio.h). Nothing here makes the supervisor's loop wait on the caller,
// and nothing changes a description the caller shares: its pipes and terminals are
// reopened (a description of brig's own, nonblocking), a socket is written with
// MSG_DONTWAIT, and files and devices, which never wait on a reader, are written as they
// are. Pipes are spliced where the destination takes it, so bytes stay in the kernel.
#include "supervise/stdio.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sys/syscalls.h"

namespace brig::supervise {
namespace {

constexpr size_t kChunk = 1 << 20;      // at most per splice
constexpr size_t kBuffer = 64 * 1024;   // at most per read, where a splice cannot go
constexpr int kPipeSize = 1 << 20;      // fewer wake-ups: the relay costs per call
constexpr uint64_t kWinchToken = 100;

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

sys::UniqueFd Dup(const sys::UniqueFd& fd) {
  return sys::UniqueFd(fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
}

// A pipe whose read end is brig's (nonblocking) and whose write end is the workload's.
Status MakePipe(sys::UniqueFd& read_end, sys::UniqueFd& write_end) {
  sys::FdPair pipe = BRIG_TRY(sys::FdPair::Pipe(true, "workload output"));
  read_end = pipe.TakeParentEnd();
  write_end = pipe.TakeChildEnd();
  (void)fcntl(read_end.get(), F_SETPIPE_SZ, kPipeSize);
  if (fcntl(read_end.get(), F_SETFL, O_NONBLOCK) < 0) return SysError("fcntl", "workload output");
  return {};
}

// brig runs the workload's terminal only while it is in the foreground of the caller's:
// a background job reading or setting its terminal would be stopped (SIGTTIN, SIGTTOU).
// A terminal that is not brig's controlling one has no job control.
bool InForeground(int fd) {
  pid_t fg = tcgetpgrp(fd);
  return fg < 0 || fg == getpgrp();
}

// brig leads the process group in the foreground of `fd`'s terminal: a shell with job
// control started it as a job of its own. A harness's child shares the harness's group.
bool LeadsForeground(int fd) { return tcgetpgrp(fd) == getpid(); }

// A new pty of the host's devpts, unlocked: its master, and its slave (by the master, not
// by a path in /dev/pts, which names no one in particular).
Status OpenPty(sys::UniqueFd& master, sys::UniqueFd& slave) {
  master.Reset(open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!master) return SysError("open", "/dev/ptmx");
  int unlock = 0;
  if (ioctl(master.get(), TIOCSPTLCK, &unlock) < 0) return SysError("ioctl", "TIOCSPTLCK");
  slave.Reset(ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) return SysError("ioctl", "TIOCGPTPEER");
  return {};
}

}  // namespace

void EnsureStdio() {
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int n = open("/dev/null", O_RDWR);
    if (n >= 0 && n != fd) {
      (void)dup2(n, fd);
      close(n);
    }
  }
}

Result<std::unique_ptr<Stdio>> Stdio::Make(std::optional<uint64_t> limit, TerminalCodeset codeset) {
  std::unique_ptr<Stdio> s(new Stdio());
  s->limit_ = limit;
  s->codeset_ = codeset;
  s->null_.Reset(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!s->null_) return SysError("open", "/dev/null");
  s->ep_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!s->ep_) return SysError("epoll_create1", "stdio relay");
  return s;
}

Result<std::unique_ptr<Stdio>> Stdio::Prepare(std::optional<uint64_t> limit,
                                              TerminalCodeset codeset, TerminalMode mode) {
  std::unique_ptr<Stdio> s = BRIG_TRY(Make(limit, codeset));
  s->terminal_ = mode != TerminalMode::kNever && isatty(0) && InForeground(0) &&
                 (mode != TerminalMode::kAuto || LeadsForeground(0));
  if (s->terminal_) BRIG_TRY_CTX(s->PrepareTerminal(), "terminal");
  if (!s->terminal_) BRIG_TRY_CTX(s->PrepareInput(), "stdin");
  if (!s->terminal_ && mode == TerminalMode::kAlways) {
    BRIG_TRY_CTX(s->PrepareOutputTerminal(), "terminal");
    return s;
  }
  for (int caller : {1, 2}) {
    if (s->terminal_ && isatty(caller)) {
      s->child_[caller] = Dup(s->child_[0]);
      if (!s->child_[caller]) return SysError("fcntl", "terminal");
    } else {
      BRIG_TRY(s->PrepareOutput(caller));
    }
  }
  return s;
}

Result<std::unique_ptr<Stdio>> Stdio::ForTerminal(sys::UniqueFd master, TerminalCodeset codeset) {
  std::unique_ptr<Stdio> s = BRIG_TRY(Make(std::nullopt, codeset));
  s->terminal_ = isatty(0) && InForeground(0);
  if (s->terminal_ && tcgetattr(0, &s->saved_) < 0) return SysError("tcgetattr", "stdin");
  if (fcntl(master.get(), F_SETFL, O_NONBLOCK) < 0) return SysError("fcntl", "terminal");
  s->master_ = std::move(master);
  BRIG_TRY_CTX(s->Relay(1), "terminal");
  return s;
}

// The workload's terminal: a new pty of the host's devpts, opened here so the sandbox
// needs no access to a ptmx of the host, set up as the caller's terminal is (modes, size).
Status Stdio::PrepareTerminal() {
  if (tcgetattr(0, &saved_) < 0) return SysError("tcgetattr", "stdin");
  BRIG_TRY(OpenPty(master_, child_[0]));
  if (tcsetattr(child_[0].get(), TCSANOW, &saved_) < 0) return SysError("tcsetattr", "pty");
  // What the workload writes to its terminal goes to the caller's, or to whichever of
  // stdout and stderr is one; with neither, only the echo of what was typed is lost.
  return Relay(isatty(1) ? 1 : isatty(2) ? 2 : -1);
}

// --tty without a terminal on stdin: a pty for the workload's stdout and stderr, in the
// kernel's default modes, its size the caller's stdout's or stderr's if one is a terminal.
// It is never the workload's controlling terminal (stdin is no terminal: exec_child.cc),
// so nothing in the sandbox waits on it for input; its output goes to the caller's stdout.
Status Stdio::PrepareOutputTerminal() {
  BRIG_TRY(OpenPty(master_, child_[1]));
  child_[2] = Dup(child_[1]);
  if (!child_[2]) return SysError("fcntl", "terminal");
  struct winsize ws;
  for (int fd : {1, 2}) {
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0) {
      (void)ioctl(master_.get(), TIOCSWINSZ, &ws);
      break;
    }
  }
  output_pty_ = true;
  Stream& out = streams_[2];
  out.src = Dup(master_);
  if (!out.src) return SysError("fcntl", "terminal");
  out.done = false;
  Aim(out, 1, false);
  return {};
}

// master_ relayed: what the workload writes to it goes to the caller's `to` (-1: nowhere),
// and what the caller types, to it. Where the caller's stdin is a terminal, the workload's
// follows its size.
Status Stdio::Relay(int to) {
  if (terminal_) {
    Resize();
    // Window changes arrive as SIGWINCH; the workload's mask is reset before its execve.
    sigset_t winch;
    sigemptyset(&winch);
    sigaddset(&winch, SIGWINCH);
    if (sigprocmask(SIG_BLOCK, &winch, nullptr) < 0) return SysError("sigprocmask", "SIGWINCH");
    winch_.Reset(signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!winch_) return SysError("signalfd", "SIGWINCH");
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u64 = kWinchToken;
    if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, winch_.get(), &ev) < 0) {
      return SysError("epoll_ctl", "SIGWINCH");
    }
  }
  Stream& out = streams_[2];
  out.src = Dup(master_);
  if (!out.src) return SysError("fcntl", "terminal");
  out.done = false;
  if (to > 0) {
    Aim(out, to, false);
  } else {
    out.dst = null_.get();
  }
  // A socket cannot be reopened, and so sends nothing (as it gives the workload nothing
  // without a terminal); a terminal always can.
  Stream& in = streams_[3];
  in.src.Reset(open(FdPath(0).c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  if (!in.src) return terminal_ ? SysError("open", "stdin") : Status{};
  in.dst_own = Dup(master_);
  if (!in.dst_own) return SysError("fcntl", "terminal");
  in.done = false;
  return {};
}

// Without a terminal, the workload reads what the caller's stdin holds through a
// description of its own, read-only: it cannot write to the caller's file, move the
// caller's offset (a regular file's is copied at start; the caller's does not advance) or
// set flags on the caller's description. A terminal in the background, a socket or a
// closed fd gives it /dev/null.
Status Stdio::PrepareInput() {
  struct stat st;
  if (!isatty(0) && fstat(0, &st) == 0 && !S_ISSOCK(st.st_mode)) {
    // Nonblocking, so a FIFO with no writer yet does not hold the open.
    child_[0].Reset(open(FdPath(0).c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    if (child_[0] && fcntl(child_[0].get(), F_SETFL, 0) < 0) child_[0].Reset();
    off_t at = S_ISREG(st.st_mode) ? lseek(0, 0, SEEK_CUR) : 0;
    if (child_[0] && at > 0 && lseek(child_[0].get(), at, SEEK_SET) < 0) child_[0].Reset();
  }
  if (!child_[0]) child_[0].Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!child_[0]) return SysError("open", "/dev/null");
  return {};
}

Status Stdio::PrepareOutput(int caller) {
  Stream& s = streams_[caller - 1];
  BRIG_TRY(MakePipe(s.src, child_[caller]));
  s.done = false;
  Aim(s, caller, true);
  return {};
}

// How the caller's `caller_fd` is written without waiting on its reader. A terminal gets
// what the terminal filter passes, so the bytes go through brig.
void Stdio::Aim(Stream& s, int caller_fd, bool from_pipe) {
  s.caller = caller_fd;
  s.dst = caller_fd;
  s.kind = from_pipe ? Stream::Kind::kSplice : Stream::Kind::kBuffered;
  s.pollable = false;
  struct stat st;
  if (fstat(caller_fd, &st) < 0) {
    s.dst = null_.get();
  } else if (S_ISSOCK(st.st_mode)) {
    s.pollable = true;
    s.kind = Stream::Kind::kSend;
  } else if (S_ISFIFO(st.st_mode) || isatty(caller_fd)) {
    // If the reopen fails, writes may wait on the caller's reader, as the workload's did.
    s.dst_own.Reset(open(FdPath(caller_fd).c_str(),
                         O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    s.pollable = static_cast<bool>(s.dst_own);
  }
  if (s.dst == caller_fd && isatty(caller_fd)) {
    s.filter.emplace(codeset_);
    s.kind = Stream::Kind::kBuffered;
  }
}

void Stdio::ApplyInChild() const {
  for (int fd = 0; fd < 3; ++fd) (void)dup2(child_[fd].get(), fd);
  for (const auto& c : child_) close(c.get());
  for (const Stream& s : streams_) {
    if (s.src) close(s.src.get());
    if (s.dst_own) close(s.dst_own.get());
  }
  for (const sys::UniqueFd* f : {&master_, &null_, &ep_, &winch_}) {
    if (*f) close(f->get());
  }
}

Status Stdio::Started() {
  for (auto& c : child_) c.Reset();
  // A caller that stops reading (`brig run ... | head -1`) is an EPIPE, not brig's death;
  // the workload's own dispositions are reset before its execve.
  signal(SIGPIPE, SIG_IGN);
  if (terminal_) {
    struct termios t = saved_;
    t.c_cc[VEOF] = _POSIX_VDISABLE;
    t.c_lflag &= ~ECHO;
    if (tcsetattr(0, TCSANOW, &t) < 0) return SysError("tcsetattr", "stdin");
    raw_ = true;
    TakeTypeahead();
    cfmakeraw(&t);
    if (tcsetattr(0, TCSANOW, &t) < 0) return SysError("tcsetattr", "stdin");
  }
  PumpAll();
  return {};
}

// What was typed before brig took the caller's terminal is still in its line discipline,
// in lines, where an end of file (VEOF, ^D) is kept as a NUL byte with a mark. Going raw
// drops the mark and leaves the NUL to be read: the workload got a NUL where its caller
// had typed ^D, and its terminal echoed ^@ (as under `script` with no terminal on its
// stdin, which types ^D as it starts). So brig turns VEOF and echo off first (a ^D typed
// from then on is a plain byte, as in raw mode), reads what is queued a line at a time, an
// end of file as a read of nothing, and passes each on as the workload's terminal's VEOF,
// which is the caller's.
void Stdio::TakeTypeahead() {
  // Only a terminal in lines has marks; out of them, a read of nothing is just that.
  if (!(saved_.c_lflag & ICANON)) return;
  Stream& in = streams_[3];
  char buf[kBuffer];
  // The line discipline holds at most 4096 bytes, and so at most that many marks.
  for (int i = 0; i < 4096; ++i) {
    ssize_t n = read(in.src.get(), buf, sizeof buf);
    if (n > 0) {
      in.pending.append(buf, static_cast<size_t>(n));
    } else if (n == 0 && saved_.c_cc[VEOF] != _POSIX_VDISABLE) {
      in.pending += static_cast<char>(saved_.c_cc[VEOF]);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

void Stdio::RestoreTerminal() {
  if (!raw_) return;
  (void)tcsetattr(0, TCSANOW, &saved_);
  raw_ = false;
}

Stdio::~Stdio() { RestoreTerminal(); }

void Stdio::Resize() {
  struct winsize ws;
  if (ioctl(0, TIOCGWINSZ, &ws) == 0) (void)ioctl(master_.get(), TIOCSWINSZ, &ws);
}

void Stdio::Handle() {
  epoll_event evs[8];
  int n = epoll_wait(ep_.get(), evs, 8, 0);
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 != kWinchToken) continue;
    struct signalfd_siginfo si;
    while (read(winch_.get(), &si, sizeof si) == sizeof si) {
    }
    Resize();
  }
  PumpAll();
}

void Stdio::PumpAll() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    Want w = s.done ? Want::kNothing : Pump(s);
    sys::EpollInterest(ep_.get(), s.src.get(), 2 * i, s.src_events,
                       w == Want::kSource ? uint32_t{EPOLLIN} : 0u);
    sys::EpollInterest(ep_.get(), s.dst_fd(), 2 * i + 1, s.dst_events,
                       w == Want::kDestination ? uint32_t{EPOLLOUT} : 0u);
  }
}

void Stdio::Drain() {
  Stream& in = streams_[3];
  if (!in.done) {
    in.done = true;
    sys::EpollInterest(ep_.get(), in.src.get(), 6, in.src_events, 0);
    sys::EpollInterest(ep_.get(), in.dst_fd(), 7, in.dst_events, 0);
  }
  // No writer is left: what the pipes hold is all there is (a descriptor of theirs passed
  // out of the sandbox cannot make this wait).
  for (size_t i = 0; i < 3; ++i) {
    Stream& s = streams_[i];
    while (!s.done && Pump(s) == Want::kDestination) {
      struct pollfd p = {s.dst_fd(), POLLOUT, 0};
      (void)poll(&p, 1, -1);
    }
  }
}

Stdio::Want Stdio::Pump(Stream& s) {
  char buf[kBuffer];
  for (;;) {
    if (s.done) return Want::kNothing;
    if (!s.pending.empty()) {
      if (Want w = Flush(s); w != Want::kNothing) return w;
      continue;
    }
    size_t room = kChunk;
    if (s.caller > 0 && limit_) {
      // What the filter holds is written later, so it counts now: the filter never writes
      // more than it is fed, and the stream never passes the limit.
      uint64_t used = s.bytes + (s.filter ? s.filter->held() : 0);
      if (used >= *limit_) return Discard(s);
      room = std::min<uint64_t>(room, *limit_ - used);
    }
    ssize_t n;
    if (s.kind == Stream::Kind::kSplice && !s.pollable) {
      // A file or a device: it cannot be waited on, and a nonblocking splice to it may
      // still say EAGAIN. Moving only what the pipe holds keeps the splice from waiting
      // on the workload.
      int queued = 0;
      if (ioctl(s.src.get(), FIONREAD, &queued) < 0 || queued == 0) {
        // Empty, or the end: a read of one byte tells which (and keeps the byte).
        n = read(s.src.get(), buf, 1);
        if (n > 0) s.pending.assign(buf, 1);
        if (n < 0 && errno == EAGAIN) return Want::kSource;
        if (n == 0 || (n < 0 && errno != EINTR)) s.done = true;
        continue;
      }
      n = splice(s.src.get(), nullptr, s.dst_fd(), nullptr,
                 std::min(room, static_cast<size_t>(queued)), SPLICE_F_MOVE);
      if (n > 0) {
        s.bytes += static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINVAL) {
        s.kind = Stream::Kind::kBuffered;
        continue;
      }
      if (n < 0 && errno != EINTR) return Broken(s);
      continue;
    }
    if (s.kind == Stream::Kind::kSplice) {
      n = splice(s.src.get(), nullptr, s.dst_fd(), nullptr, room,
                 SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0) {
        s.bytes += static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        // The source is empty or the destination full; which, the pipe says.
        int queued = 0;
        bool full = ioctl(s.src.get(), FIONREAD, &queued) == 0 && queued > 0;
        return full ? Want::kDestination : Want::kSource;
      }
      // An O_APPEND file, a destination without splice: copy instead.
      if (n < 0 && errno == EINVAL) {
        s.kind = Stream::Kind::kBuffered;
        continue;
      }
      if (n < 0 && errno != EINTR) return Broken(s);
    } else {
      n = read(s.src.get(), buf, std::min(room, sizeof buf));
      if (n > 0 && s.filter) s.filter->Feed({buf, static_cast<size_t>(n)}, s.pending);
      if (n > 0 && !s.filter) s.pending.assign(buf, static_cast<size_t>(n));
      if (n < 0 && errno == EAGAIN) return Want::kSource;
    }
    // End of file: no writer is left (a terminal's master says EIO once the last slave
    // is closed).
    if (n == 0 || (n < 0 && errno != EINTR)) s.done = true;
  }
}

Stdio::Want Stdio::Flush(Stream& s) {
  while (!s.pending.empty()) {
    ssize_t n = s.kind == Stream::Kind::kSend
                    ? send(s.dst_fd(), s.pending.data(), s.pending.size(),
                           MSG_DONTWAIT | MSG_NOSIGNAL)
                    : write(s.dst_fd(), s.pending.data(), s.pending.size());
    if (n > 0) {
      s.bytes += static_cast<uint64_t>(n);
      s.pending.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      return Want::kDestination;
    } else if (n < 0 && errno != EINTR) {
      return Broken(s);
    }
  }
  return Want::kNothing;
}

void Stdio::Say(const std::string& line) {
  std::string text = "brig: " + line + (raw_ ? "\r\n" : "\n");
  const Stream* to = nullptr;
  for (const Stream& s : streams_) {
    if (s.caller == 2 && s.dst == 2) to = &s;
  }
  ssize_t n;
  if (to && to->kind == Stream::Kind::kSend) {
    n = send(to->dst_fd(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } else if (to) {
    n = write(to->dst_fd(), text.data(), text.size());
  } else {
    // No relay of brig's own stderr (it is the workload's terminal's, or merged on
    // stdout): reached as Aim reaches a caller's fd, without waiting on its reader.
    Stream direct;
    Aim(direct, 2, false);
    n = direct.kind == Stream::Kind::kSend
            ? send(direct.dst_fd(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL)
            : write(direct.dst_fd(), text.data(), text.size());
  }
  (void)n;
}

// Nobody reads this stream any more: the workload's next write gets EPIPE, as it would
// have written to the caller's closed pipe itself (`brig run -- yes | head -1` ends).
Stdio::Want Stdio::Broken(Stream& s) {
  s.done = true;
  s.pending.clear();
  if (s.src_events) (void)epoll_ctl(ep_.get(), EPOLL_CTL_DEL, s.src.get(), nullptr);
  s.src_events = 0;
  s.src.Reset();
  return Want::kNothing;
}

// Past the limit: what the workload writes is read and dropped, so its writes still
// succeed and its outcome is its own; the result says the stream was cut.
Stdio::Want Stdio::Discard(Stream& s) {
  s.truncated = true;
  char buf[kBuffer];
  for (;;) {
    ssize_t n = splice(s.src.get(), nullptr, null_.get(), nullptr, kChunk, SPLICE_F_NONBLOCK);
    if (n < 0 && errno == EINVAL) n = read(s.src.get(), buf, sizeof buf);
    if (n > 0) {
      s.dropped += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return Want::kSource;
    s.done = true;
    return Want::kNothing;
  }
}

v1::Output Stdio::Summary() const {
  v1::Output o;
  for (const Stream& s : streams_) {
    if (s.caller == 1) {
      o.set_stdout_bytes(s.bytes);
      o.set_stdout_dropped(s.dropped);
      o.set_stdout_truncated(s.truncated);
    } else if (s.caller == 2) {
      o.set_stderr_bytes(s.bytes);
      o.set_stderr_dropped(s.dropped);
      o.set_stderr_truncated(s.truncated);
    }
  }
  o.set_truncated(o.stdout_truncated() || o.stderr_truncated());
  o.set_terminal(terminal_ || output_pty_);
  o.set_limit_bytes(limit_.value_or(0));
  return o;
}

}  // namespace brig::supervise
