// What a running sandbox's record (state/record.h) says for `brig exec` to join it, as
// "about" lines: written by the Session that runs it (Describe, Launch), read by brig exec
// (container/sandbox_exec.h). Pure both ways, unit-tested.
//
// The record holds the compiled seccomp program itself, not the policy's path and a digest
// to rebuild it by: the exec's process gets the very filter the workload got, whatever
// became of the policy file since, and a run computes no digest it does not need (a run
// without a manifest starts no OpenSSL). The record is root's (/run/brig, 0700), as the
// seccomp cache is.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "config/sandbox.h"
#include "security/caps.h"
#include "security/seccomp.h"
#include "state/record.h"

namespace brig::container {

// A running sandbox as brig exec joins it.
struct ExecRecord {
  std::string id, name;
  pid_t init_pid = 0;       // brig init's host pid
  uint64_t init_start = 0;  // its start time (sys::StartTimeOf): a pid reused is refused
  uid_t uid = 0;            // the sandbox user inside
  gid_t gid = 0;
  std::string workdir;         // where the workload started, inside
  std::string audit_path;      // absolute; empty: no audit log
  security::SeccompProgram seccomp;
  std::vector<security::Rlimit> rlimits;
  std::vector<std::string> cgroups;  // every group of the sandbox, v2 and v1
};

using AboutLines = std::vector<std::pair<std::string, std::string>>;

// The lines a confined sandbox `sb` adds at its start: its user, working directory, audit
// log (made absolute against `cwd`), rlimits, and the seccomp policy with `program`
// compiled from it.
AboutLines ExecAbout(const config::Sandbox& sb, const security::SeccompProgram& program,
                     const std::string& cwd);
// The line Launch adds once brig init runs (with "pid="): its start time.
std::pair<std::string, std::string> InitStartAbout(uint64_t start_time);

// What `rec` says for an exec. Refuses (exit 125) a sandbox that has nothing to join (a
// profile without isolation) or is not started yet, naming it.
Result<ExecRecord> ReadExecRecord(const state::LiveRecord& rec);

// The live sandboxes whose id or --name is `target`.
std::vector<const state::LiveRecord*> Matching(const std::vector<state::LiveRecord>& live,
                                               const std::string& target);
// The live sandbox `target` names: the one of that id, else the one of that --name. A
// name two sandboxes share is refused naming both ids; none is refused too.
Result<const state::LiveRecord*> FindSandbox(const std::vector<state::LiveRecord>& live,
                                             const std::string& target);

}  // namespace brig::container
