// brig's global options, which come before the verb as runc's do (`brig --debug run ...`):
// containerd and podman pass them in runc's spelling.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "log/log.h"

namespace brig::cli {

struct GlobalFlags {
  bool debug = false;     // --debug: debug and info lines too
  std::string log_path;   // --log FILE: instead of stderr
  log::Format log_format = log::Format::kText;  // --log-format text|json
  std::string root;  // --root DIR: the OCI containers' state (default oci::DefaultRoot())
  bool systemd_cgroup = false;  // --systemd-cgroup: the OCI verbs' systemd cgroup driver
};

// Parses the global options at the front of `args`; returns the index of the verb (or of
// --help, --version, or args.size()). Pure. Errors are bad input naming the option.
Result<size_t> ParseGlobalFlags(const std::vector<std::string>& args, GlobalFlags& out);

// The rows of the global options for `brig --help`.
std::string GlobalUsage();

}  // namespace brig::cli
