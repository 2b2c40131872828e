// `brig exec`: a new process in a running container (runc exec): its namespaces joined
// through the container process's pidfd, its cgroups, its seccomp policy, and the
// process settings of --process FILE or of the flags over config.json's process.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "brig/result.h"
#include "cgroup/groups.h"
#include "proto/oci.pb.h"

namespace brig::oci {

struct ExecOptions {
  std::string root, id;
  std::string process_file;    // --process: a Process object as JSON; else the fields below
  std::vector<std::string> args;
  std::vector<std::string> env;  // added to config.json's
  std::string cwd;
  std::string user;              // UID[:GID]
  std::vector<uint32_t> additional_gids;
  std::vector<std::string> caps;  // added to config.json's
  bool tty = false, no_new_privs = false;
  std::string console_socket, pid_file;
  int preserve_fds = 0;
  bool detach = false;
  bool ignore_paused = false;  // start it in a paused container, to run once it is resumed
  std::vector<cgroup::Groups::Sub> cgroups;  // --cgroup: groups below the container's
};

// The process the flags describe, over config.json's process (runc's defaults: its env,
// cwd, user, capabilities, rlimits and no_new_privileges, the flags added or replacing).
Result<Process> ExecProcess(const ExecOptions& o, const Process& base);

// Starts the process. Detached: returns 0 once it runs (the pid file names it, and the
// engine's shim, the subreaper above brig, reaps it). Attached: brig waits for it,
// passing on the signals it gets, and returns its exit status (128+N for signal N).
Result<int> Exec(const ExecOptions& o);

}  // namespace brig::oci
