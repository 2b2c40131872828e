#include "supervise/attend.h"

#include "brig/exit.h"

namespace brig::supervise {

Result<int> Attend(sys::Child& process, Stdio* stdio, const HeldSignals& signals) {
  Loop loop = BRIG_TRY(Loop::Create());
  BRIG_TRY(loop.Watch(process.pidfd(), [&loop] { loop.Stop(); }));
  BRIG_TRY(loop.Watch(signals, [&process](int sig) { (void)process.Signal(sig); }));
  if (stdio) BRIG_TRY(loop.Watch(stdio->fd(), [stdio] { stdio->Handle(); }));
  BRIG_TRY(loop.Run());
  sys::ChildExit exit = BRIG_TRY(process.Reap());
  if (stdio) {
    stdio->Drain();
    stdio->RestoreTerminal();
  }
  if (exit.info.si_code == CLD_EXITED) return exit.info.si_status;
  return ExitCodeForSignal(exit.info.si_status);
}

}  // namespace brig::supervise
