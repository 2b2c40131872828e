// Seccomp: a policy (policies/seccomp/*.textproto or an OCI seccomp object) is compiled to
// a BPF program in the parent with libseccomp; the child only loads the bytes, last,
// just before execve. Loading never allocates and never calls libseccomp.
#pragma once

#include <linux/filter.h>

#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/brig.pb.h"

namespace brig::security {

struct SeccompProgram {
  std::vector<sock_filter> insns;
  unsigned flags = 0;  // SECCOMP_FILTER_FLAG_*
  // The policy text it was compiled from, when it came from a file (CompileSeccompFile):
  // the manifest gives its sha256. Kept, not digested here: a run without a manifest
  // need not start OpenSSL (its configuration file is read at the first digest).
  std::string text;
};

// Parses a text-format policy. Errors name file:line:column.
Result<v1::SeccompPolicy> ParseSeccompPolicy(const std::string& text, const std::string& name);

// Validates and compiles. Unknown syscall names, actions or architectures are errors:
// a policy that does not mean what it says must not run.
Result<SeccompProgram> CompileSeccomp(const v1::SeccompPolicy& policy);
// An OCI container's policy as runc makes it: CompileSeccomp's program, behind a stub that
// answers ENOSYS to an x86_64 system call numbered above every one the policy names, where
// the policy's default refuses (not SCMP_ACT_ALLOW, LOG or TRACE, and its defaultErrnoRet
// not ENOSYS already). A call newer than the policy then fails as on a kernel without it,
// and a C library falls back (clone3 to clone) where EPERM would have been final. The stub
// allows nothing: every other call goes on to the policy's program.
Result<SeccompProgram> CompileOciSeccomp(const v1::SeccompPolicy& policy);
// The version of the libseccomp brig runs with ("2.5.4"): it shapes the programs compiled.
std::string LibseccompVersion();

// Validates and compiles as CompileSeccomp does, and returns libseccomp's pseudo-filter
// code (seccomp_export_pfc): the compiled filter as readable text, for `brig policy export`.
Result<std::string> ExportPfc(const v1::SeccompPolicy& policy);

// The x86_64 number of a system call, or nullopt if `name` is not one (unknown, or a
// syscall of another ABI only, such as chown32 or socketcall).
std::optional<int> ResolveSyscallX86_64(const std::string& name);

// In the child: installs the program. Requires no_new_privs, or CAP_SYS_ADMIN.
// Async-signal-safe. Returns the filter's listener where it has one (HasListener: a rule
// notifies), else -1.
Result<int> LoadSeccomp(const SeccompProgram& program);
// Whether loading the program makes a listener: a rule notifies (SCMP_ACT_NOTIFY, which
// only a policy naming an agent may hold).
bool HasListener(const SeccompProgram& program);

}  // namespace brig::security
