// Seccomp policies as a security team reads them (`brig policy explain/export/diff`): the
// rationale of each rule, one row per syscall, the OCI/Docker JSON form and a syscall-by-
// syscall comparison. Pure: no files, no libseccomp context; src/cli/policy.cc reads files.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/brig.pb.h"

namespace brig::security {

// Parses a text-format policy (errors name file:line:column, as ParseSeccompPolicy) and
// puts each rule's rationale into its `comment`: the `#` lines immediately above the
// rule's `syscalls {`, joined into one line. A rule that sets `comment` itself keeps it.
Result<v1::SeccompPolicy> ParsePolicyWithRationale(const std::string& text,
                                                   const std::string& name);

// "name:line:column" of the first rule of a text-format policy that names `syscall`, or
// "" if none does: CompileSeccomp names the syscall of a rule it refuses, not its place.
std::string RuleLocation(const std::string& text, const std::string& name,
                         const std::string& syscall);

// Parses OCI `linux.seccomp` or Docker/podman profile JSON, read as it applies to an
// x86_64 process that holds no capabilities, which is what a brig sandbox is:
//   - unknown fields ("archMap", "defaultErrno", "errno", ...) are ignored;
//   - a rule whose includes.caps names any capability does not apply, and a rule with
//     excludes.caps applies (brig grants no capabilities);
//   - a rule whose includes.arches does not name amd64 (x86_64), or whose excludes.arches
//     does, does not apply;
//   - includes.minKernel is assumed to be met;
//   - names that are not x86_64 system calls (chown32, socketcall, ...) are dropped, and
//     so is a rule left without names; Docker's older single "name" is accepted.
// Any other includes/excludes key is an error: a condition brig does not understand must
// not be guessed.
Result<v1::SeccompPolicy> ParseOciSeccompJson(const std::string& json, const std::string& name);

// "ALLOW", "ERRNO(EPERM)", "ERRNO(ENOSYS)", "KILL_PROCESS", "TRACE(1)", ...
std::string ActionText(v1::SeccompAction action, bool has_errno, uint32_t errno_ret);
// "arg0 & 0x7e020000 == 0", "arg0 == 16", "arg2 != 0".
std::string ConditionText(const v1::SeccompArg& arg);
// A rule's comparisons as libseccomp applies them: joined with " && " when every
// argument index differs, with " || " when one repeats (the compiler then adds one rule
// per comparison, see seccomp.cc). Empty for an unconditional rule.
std::string ConditionsText(const v1::SeccompRule& rule);

struct ExplainRow {
  std::string syscall, action, conditions, rationale;
};
// One row per syscall of each rule, sorted by syscall name (rules of one syscall in
// policy order).
std::vector<ExplainRow> ExplainRows(const v1::SeccompPolicy& policy);
// The rows as aligned text with a header, ending with the default action's line.
std::string FormatExplain(const v1::SeccompPolicy& policy);

// What the policy decides for `syscall` alone: its rows as FormatExplain prints them, or,
// where no rule names it, the default action's line for it. `syscall` must be a name
// libseccomp knows (bad input otherwise).
Result<std::string> FormatExplainOne(const v1::SeccompPolicy& policy, const std::string& syscall);

// The policy as OCI/Docker JSON (protobuf JSON mapping, camelCase names, numbers as JSON
// numbers so that Docker and runc accept it), each rule's rationale in "comment".
Result<std::string> ExportOciJson(const v1::SeccompPolicy& policy);

// What differs between two policies for x86_64, syscall by syscall, as lines
// "- NAME: <treatment in a> (A)  vs  <treatment in b> (B)", sorted by name, then the
// default actions and filter flags if they differ. Empty if the policies treat every
// syscall alike. Rules with the default action are no-ops and count as the default.
std::vector<std::string> DiffPolicies(const v1::SeccompPolicy& a, const v1::SeccompPolicy& b);

}  // namespace brig::security
