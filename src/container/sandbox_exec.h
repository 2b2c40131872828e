// `brig exec NAME|ID -- CMD` into a running `brig run` sandbox (brig-exec(1)). The process
// joins the sandbox through container::Join (join.h), as an OCI exec joins a container:
// every namespace of brig init's (user, mount, pid, network, IPC, UTS, cgroup) through its
// pidfd, checked against the start time its record names, and its cgroups. It is then
// the sandbox user with no capability and no_new_privs, and execs through ExecChild as
// the workload does: the workload's rlimits and seccomp program (the record's,
// exec_record.h), its working directory inside the root, an environment built from
// nothing. Its stdio is brig's relay, as the workload's is (supervise/stdio.h): it never
// holds the caller's descriptors or terminal.
//
// The sandbox's audit log gets exec_start before the command runs and exec_exit once it
// has ended, appended by this brig, on the host, in the log's one-write-a-line format
// (audit/audit.h): the supervisor has no channel for it to speak through, and the line
// written before the process is let go (kStart) orders it before anything the command
// does.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::container {

struct SandboxExec {
  std::string target;             // the sandbox's id or --name
  std::vector<std::string> argv;  // the command
  std::vector<std::string> env;   // "K=V", config::BuildEnv's
  std::string cwd;                // absolute, inside; "": the workload's working directory
  bool tty = false;               // a terminal of its own (the caller's stdin must be one)
};

// Whether `target` is the id or --name of a live sandbox on this host (state::ListLive):
// `brig exec` is then this, not the OCI verb.
bool NamesASandbox(const std::string& target);

// Runs the command in the sandbox and returns its exit status (128+N for signal N; 126 or
// 127 if it could not be run, as brig run). Errors are brig's (exit 125): nothing ran.
Result<int> ExecInSandbox(const SandboxExec& request);

}  // namespace brig::container
