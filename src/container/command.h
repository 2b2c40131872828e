// Resolving a command name to the file execve will run.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::container {

// argv[0] with a '/' is checked as is; otherwise each directory of PATH in `env` ("K=V"
// strings) is tried. Errors are kNotFound (127) or kNotExecutable (126).
Result<std::string> ResolveCommand(const std::string& cmd, const std::vector<std::string>& env);

// The NULL-terminated array execve(2) takes, pointing into `strings` (which must outlive it).
std::vector<char*> ExecArray(const std::vector<std::string>& strings);

}  // namespace brig::container
