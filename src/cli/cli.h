// The command line: one file per verb, table-driven flags. Verbs return an exit code and
// print nothing themselves on failure; main.cc prints the one error line.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "config/sandbox.h"

namespace brig::cli {

// Exit codes of the output contract (design.md).
inline constexpr int kExitTimeout = 124;
inline constexpr int kExitRefused = 125;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

int ExitCodeFor(ErrorKind kind);
std::string ErrorCodeFor(ErrorKind kind);

// What `brig run`'s flags produce before validation against the host.
struct RunRequest {
  config::Sandbox sandbox;
  std::vector<std::string> pass_env;
  std::vector<std::string> set_env;
  std::string policy_dir;
  bool help = false;
};

// Parses `brig run` arguments (after the verb). Pure: no host access.
Result<RunRequest> ParseRunArgs(const std::vector<std::string>& args);
// Checks the request against the host and fills in what the host decides: workspace owner,
// environment, policy path, sandbox id. Errors are bad input (125).
Status ResolveRun(RunRequest& req, char** host_environ);

std::string RunUsage();
std::string MainUsage();

int RunMain(const std::vector<std::string>& args);

}  // namespace brig::cli
