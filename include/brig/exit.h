// The exit codes of brig run's output contract (design.md) and the one table that maps a
// failure's kind to its exit code and its result error_code. brig init and the unconfined
// child use it after fork, so it is constexpr and allocates nothing.
#pragma once

#include <string_view>

#include "brig/result.h"

namespace brig {

// --deny stop: the phase ended at its first egress refusal (error_code egress_denied).
inline constexpr int kExitDenied = 123;
inline constexpr int kExitTimeout = 124;
inline constexpr int kExitRefused = 125;  // brig failed or refused; nothing ran
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;
inline constexpr int kExitOom = 137;  // 128 + SIGKILL, as a shell reports the kill

// A workload killed by signal `sig` ends brig with this code, as a shell's $? says it.
constexpr int ExitCodeForSignal(int sig) { return 128 + sig; }

struct KindCodes {
  int exit_code;
  std::string_view error_code;  // the result's error_code
};

constexpr KindCodes CodesFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound: return {kExitNotFound, "not_found"};
    case ErrorKind::kNotExecutable: return {kExitNotExecutable, "not_executable"};
    case ErrorKind::kPolicy: return {kExitRefused, "policy_denied"};
    case ErrorKind::kInternal: return {kExitRefused, "internal"};
    case ErrorKind::kSetup:
    case ErrorKind::kBadInput: return {kExitRefused, "setup_failed"};
  }
  return {kExitRefused, "internal"};
}

constexpr int ExitCode(ErrorKind kind) { return CodesFor(kind).exit_code; }

}  // namespace brig
