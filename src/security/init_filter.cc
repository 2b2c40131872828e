// brig init's filter: the list of what pid 1 calls after the workload is released, in one
// place. Found with `strace -f` on runs that exit, fail to exec, and get signals; each
// line names the code in container/init.cc that needs the call.
#include "security/init_filter.h"

#include "security/seccomp_cache.h"

namespace brig::security {
namespace {

struct Allowed {
  const char* name;
  const char* why;
};

constexpr Allowed kInitSyscalls[] = {
    {"read", "the signalfd (Supervise), and the workload's exec-error pipe (StartWorkload)"},
    {"close", "the start pipe, whose close lets the workload go on (StartWorkload)"},
    {"wait4", "waitpid: reaping the workload, orphans, a workload that failed to exec"},
    {"kill", "relaying the supervisor's signals to the workload, or to every process left; "
             "killing what the workload left when it exits (KillLeftovers)"},
    {"sendmsg", "kWorkloadExit and kError to the supervisor over the sync socket"},
    {"exit_group", "_exit with the workload's status, or 125 on a failure"},
    // Nothing is allocated after the load, but StartWorkload's argv and errors are freed as
    // it returns, and free() may hand memory back to the kernel.
    {"brk", "free(): trimming the top of the heap"},
    {"munmap", "free(): a chunk malloc mapped on its own"},
};

}  // namespace

v1::SeccompPolicy InitFilterPolicy() {
  v1::SeccompPolicy policy;
  // Kill, not an errno: a call outside the list means init was led off its loop, and
  // pid 1 dying ends the sandbox at once (the kernel kills its pid namespace), which the
  // supervisor sees and reports. An errno would let a subverted init go on probing.
  policy.set_default_action(v1::SCMP_ACT_KILL_PROCESS);
  policy.add_architectures(v1::SCMP_ARCH_X86_64);
  for (const Allowed& a : kInitSyscalls) {
    v1::SeccompRule* rule = policy.add_syscalls();
    rule->add_names(a.name);
    rule->set_action(v1::SCMP_ACT_ALLOW);
    rule->set_comment(a.why);
  }
  return policy;
}

Result<SeccompProgram> CompileInitFilter(const std::string& cache_dir) {
  return BRIG_TRY_CTX(
      CompileSeccompCached(InitFilterPolicy(), cache_dir, "init",
                           [](const v1::SeccompPolicy& p) { return CompileSeccomp(p); }),
      "brig init's seccomp filter");
}

}  // namespace brig::security
