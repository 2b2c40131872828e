// Resolving a command name to the file execve will run.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::container {

// As execvp(3) would from working directory `workdir` ("": the caller's): argv[0] with a
// '/' is checked as is, relative to `workdir` if it is relative; otherwise each directory
// of PATH in `env` ("K=V" strings) is tried, an empty or relative one from `workdir` too.
// The path returned is the candidate as written, for an execve made from `workdir`.
// Errors are kNotFound (127) or kNotExecutable (126).
Result<std::string> ResolveCommand(const std::string& cmd, const std::vector<std::string>& env,
                                   const std::string& workdir);

// What execvp(3) runs when execve fails with ENOEXEC: "/bin/sh" `path` and argv[1]...
std::vector<std::string> ScriptArgv(const std::string& path, const std::vector<std::string>& argv);

// The NULL-terminated array execve(2) takes, pointing into `strings` (which must outlive it).
std::vector<char*> ExecArray(const std::vector<std::string>& strings);

}  // namespace brig::container
