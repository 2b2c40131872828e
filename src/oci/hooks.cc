// Running config.json's hooks (hooks.h): fork, the state on a pipe as stdin, execve, and a
// wait on the child's pidfd bounded by the hook's timeout.
#include "oci/hooks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "container/command.h"
#include "container/sync.h"
#include "log/log.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::oci {
namespace {

// A hook's timeout in milliseconds, at most INT_MAX (poll's); -1 without one.
int64_t TimeoutMs(const Hook& h) {
  return h.has_timeout() ? std::min<int64_t>(int64_t{h.timeout()} * 1000, INT_MAX) : -1;
}

Status RunHook(const Hook& h, const std::string& subject, const std::string& state_json) {
  std::vector<std::string> args(h.args().begin(), h.args().end());
  if (args.empty()) args.push_back(h.path());
  std::vector<std::string> env(h.env().begin(), h.env().end());
  std::vector<char*> argv = container::ExecArray(args), envp = container::ExecArray(env);
  sys::FdPair state = BRIG_TRY(sys::FdPair::Pipe(false, subject));
  sys::UniqueFd wr = state.TakeParentEnd(), rd = state.TakeChildEnd();
  int pidfd = -1;
  pid_t pid = BRIG_TRY_CTX(sys::Clone3(sys::CloneArgs::Held(0, &pidfd)), subject);
  if (pid == 0) {
    // The state on stdin, the engine's stdout and stderr, and nothing else: no descriptor
    // of brig's, nor one brig was left by its caller.
    if (dup2(rd.get(), 0) < 0 || !sys::CloseAllExcept({}, 3)) _exit(127);
    // Nor the signals a foreground run holds for the container (supervise::kPassedOn).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(h.path().c_str(), argv.data(), envp.data());
    _exit(127);
  }
  sys::UniqueFd child(pidfd);
  rd.Reset();
  // A hook that does not read its stdin gets EPIPE here, which is not its failure. SIGPIPE
  // is ignored only meanwhile: container init's own disposition passes to the container.
  sighandler_t old = signal(SIGPIPE, SIG_IGN);
  (void)!write(wr.get(), state_json.data(), state_json.size());
  signal(SIGPIPE, old);
  wr.Reset();
  int timeout_ms = static_cast<int>(TimeoutMs(h));
  struct pollfd pfd = {child.get(), POLLIN, 0};
  int rc;
  do {
    rc = poll(&pfd, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    (void)sys::PidfdSendSignal(child.get(), SIGKILL);
    waitpid(pid, nullptr, 0);
    return Fail(subject, h.path(), "timed out after " + std::to_string(h.timeout()) + " s");
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return SysError("wait", subject);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFSIGNALED(status)) {
    // strsignal's words as runc's Go prints them: "killed by signal 31 (bad system call)".
    std::string name = strsignal(WTERMSIG(status));
    if (!name.empty()) name[0] = static_cast<char>(tolower(static_cast<unsigned char>(name[0])));
    return Fail(subject, h.path(),
                "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + name + ")");
  }
  return Fail(subject, h.path(), "exited with status " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace

Status RunHooks(const google::protobuf::RepeatedPtrField<Hook>& hooks, std::string_view stage,
                const std::string& state_json) {
  for (int i = 0; i < hooks.size(); ++i) {
    // In runc's words first ("error running hook #0: ..."), which its callers look for.
    BRIG_TRY_CTX(RunHook(hooks[i], std::string(stage) + "[" + std::to_string(i) + "]", state_json),
                 "error running hook #" + std::to_string(i));
  }
  return {};
}

void RunHooksWarning(const google::protobuf::RepeatedPtrField<Hook>& hooks,
                     std::string_view stage, const std::string& state_json) {
  for (int i = 0; i < hooks.size(); ++i) {
    std::string subject = std::string(stage) + "[" + std::to_string(i) + "]";
    if (auto s = RunHook(hooks[i], subject, state_json); !s) {
      log::Warn(s.error().Render(), ", ignoring");
    }
  }
}

int StepWithHooksMs(
    std::initializer_list<const google::protobuf::RepeatedPtrField<Hook>*> stages) {
  int64_t ms = container::kSetupStepTimeoutMs;
  for (const auto* hooks : stages) {
    for (const Hook& h : *hooks) {
      if (TimeoutMs(h) < 0) return -1;
      ms += TimeoutMs(h);
    }
  }
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

}  // namespace brig::oci
