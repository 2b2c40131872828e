// A process brig waits on in the foreground: brig exec's, and an OCI run's or exec's
// without --detach. brig stays between the caller and the process until it ends, passing
// on what the caller sends it: signals, and, where there is a relay, stdin and the window's
// size.
#pragma once

#include <signal.h>

#include <initializer_list>

#include "brig/result.h"
#include "supervise/loop.h"
#include "supervise/stdio.h"
#include "sys/child.h"

namespace brig::supervise {

// The signals a foreground process gets from its caller through brig, as runc passes them
// on; SIGWINCH resizes a relayed terminal instead (Stdio). Hold them before the process
// exists, so that one sent meanwhile is passed on, not brig's end.
constexpr std::initializer_list<int> kPassedOn = {SIGINT,  SIGTERM, SIGHUP,
                                                  SIGQUIT, SIGUSR1, SIGUSR2};

// Passes on each of `signals` to `process` and relays `stdio` (none: the process holds the
// caller's own descriptors) until the process ends; then relays what its output still
// holds, puts the caller's terminal back and reaps it. Its exit status as a shell gives
// it: the code, or 128 + N for signal N.
Result<int> Attend(sys::Child& process, Stdio* stdio, const HeldSignals& signals);

}  // namespace brig::supervise
