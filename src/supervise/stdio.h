// The workload's stdin, stdout and stderr, and the supervisor's relay of them to the
// caller's (design.md, Process model). The workload never holds the caller's descriptors:
// its output goes into pipes (or a terminal of its own when the caller's stdin is a
// terminal) that brig copies to its own fds 1 and 2, at most --output-limit bytes each,
// through the terminal filter where one is a terminal. Owns the caller's terminal modes
// while the sandbox runs, and puts them back.
#pragma once

#include <termios.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "brig/result.h"
#include "proto/brig.pb.h"
#include "supervise/terminal_filter.h"
#include "sys/fd.h"

namespace brig::supervise {

// Makes sure brig's fds 0-2 are open (on /dev/null if the caller closed them), so nothing
// brig opens later lands there and is taken for the caller's stdio. Call first thing.
void EnsureStdio();

// Whether the workload gets a terminal of its own (a pty of the host's devpts). Where it
// relays the caller's terminal (stdin a terminal in the foreground), the caller's is raw
// while the workload runs: what is typed, ^C included, goes to the workload.
enum class TerminalMode {
  kNever,       // pipes (brig run --no-tty; brig exec without --tty)
  kIfTerminal,  // the caller's terminal relayed when stdin is one (brig exec --tty)
  // As kIfTerminal, and only when brig also leads the terminal's foreground process group:
  // a job an interactive shell started (`brig run -- bash`), never the child of a harness,
  // whose own ^C must reach it (brig run's default).
  kAuto,
  // kIfTerminal; and where stdin is no terminal, a pty for stdout and stderr (colour and
  // line buffering), their output merged on the caller's stdout, stdin as kNever has it,
  // and no controlling terminal (brig run --tty).
  kAlways,
};

class Stdio {
 public:
  // Reads what brig's fds 0-2 are and makes the workload's. `limit`: bytes relayed per
  // output stream; the rest is read and dropped. `codeset`: how the caller's terminals
  // decode, for their filters. `mode`: whether the workload gets a terminal. Before the
  // clone.
  static Result<std::unique_ptr<Stdio>> Prepare(std::optional<uint64_t> limit,
                                                TerminalCodeset codeset, TerminalMode mode);
  // The relay of a terminal made elsewhere, whose `master` brig holds: an OCI process's,
  // sent over its console socket. The caller's stdin goes to it as to brig run's (a socket
  // or a closed fd sends nothing), and its output to the caller's stdout, whatever that
  // is, with no limit. With stdin a terminal in the foreground, as above: raw while it
  // runs, and its size followed. Nothing of it goes to a child: call Started() at once.
  static Result<std::unique_ptr<Stdio>> ForTerminal(sys::UniqueFd master, TerminalCodeset codeset);
  Stdio(const Stdio&) = delete;
  Stdio& operator=(const Stdio&) = delete;
  ~Stdio();

  // In the cloned child: the workload's descriptors onto 0, 1 and 2, every other fd of
  // this object closed. Async-signal-safe (no allocation).
  void ApplyInChild() const;
  // In the parent, after the clone: drops the child's ends (so the sandbox's end closes
  // every write end) and, with a terminal, puts the caller's into raw mode.
  Status Started();
  // Readable when the relay has work; the supervisor's loop calls Handle() then.
  int fd() const { return ep_.get(); }
  void Handle();
  // After every process of the sandbox is gone: relays what is left in the pipes.
  void Drain();
  // One line of brig's own ("brig: LINE") on the caller's stderr while the relay runs, as
  // a raw terminal needs it ended. Never waits: a line the caller's stderr cannot take now
  // is dropped (what it said is in the result too).
  void Say(const std::string& line);
  // Puts the caller's terminal back as it was (also done on destruction); idempotent.
  void RestoreTerminal();
  v1::Output Summary() const;

 private:
  // One direction: from `src` (a pipe's read end, the terminal's master, or the caller's
  // terminal) to a caller's descriptor, the master, or /dev/null.
  struct Stream {
    enum class Kind { kSplice, kBuffered, kSend };
    sys::UniqueFd src;
    int dst = -1;           // borrowed: the caller's, or null_
    sys::UniqueFd dst_own;  // the caller's pipe or terminal reopened nonblocking, or a master
    Kind kind = Kind::kBuffered;
    int caller = 0;          // 1 or 2: the caller's fd it stands for in the summary and limit
    bool pollable = true;    // the destination has a reader to wait for (pipe, socket, tty)
    bool done = true;
    std::string pending;
    std::optional<TerminalFilter> filter;  // the destination is a terminal
    uint64_t bytes = 0, dropped = 0;
    bool truncated = false;
    uint32_t src_events = 0, dst_events = 0;
    int dst_fd() const { return dst_own ? dst_own.get() : dst; }
  };
  enum class Want { kNothing, kSource, kDestination };

  Stdio() = default;
  static Result<std::unique_ptr<Stdio>> Make(std::optional<uint64_t> limit,
                                             TerminalCodeset codeset);
  Status PrepareTerminal();
  Status PrepareOutputTerminal();
  Status Relay(int to);
  Status PrepareOutput(int caller);
  Status PrepareInput();
  void TakeTypeahead();
  void Aim(Stream& s, int caller_fd, bool from_pipe);
  Want Pump(Stream& s);
  Want Discard(Stream& s);
  Want Flush(Stream& s);
  Want Broken(Stream& s);
  void PumpAll();
  void Resize();

  std::optional<uint64_t> limit_;
  TerminalCodeset codeset_ = TerminalCodeset::kUnknown;
  // In the child: what becomes its 0, 1 and 2.
  std::array<sys::UniqueFd, 3> child_;
  // The workload's stdout pipe, its stderr pipe, its terminal's output, the caller's input
  // to its terminal.
  std::array<Stream, 4> streams_;
  sys::UniqueFd master_;  // the workload's terminal, if it has one
  sys::UniqueFd null_;    // where output past the limit goes
  sys::UniqueFd ep_;
  sys::UniqueFd winch_;  // SIGWINCH, with a terminal
  bool terminal_ = false;  // the caller's stdin is a terminal the workload's relays
  bool output_pty_ = false;  // kAlways without one: the workload's stdout and stderr are a pty
  bool raw_ = false;
  struct termios saved_ {};
};

}  // namespace brig::supervise
