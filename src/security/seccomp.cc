// Seccomp policy parsing (text format), validation and compilation to BPF with libseccomp.
// Runs in the parent only; the child receives finished bytes (see LoadSeccomp).
#include "security/seccomp.h"

// libseccomp's <seccomp.h> defines SCMP_ACT_*, SCMP_ARCH_* and SCMP_CMP_* as macros, which
// are also the names of our (OCI-spelled) proto enum values. Name the proto values here,
// before the macros exist; below this block only the aliases are used.
namespace brig::security::pb {
constexpr int kActKill = v1::SCMP_ACT_KILL, kActKillProcess = v1::SCMP_ACT_KILL_PROCESS,
              kActKillThread = v1::SCMP_ACT_KILL_THREAD, kActTrap = v1::SCMP_ACT_TRAP,
              kActErrno = v1::SCMP_ACT_ERRNO, kActTrace = v1::SCMP_ACT_TRACE,
              kActAllow = v1::SCMP_ACT_ALLOW, kActLog = v1::SCMP_ACT_LOG,
              kActNotify = v1::SCMP_ACT_NOTIFY;
constexpr int kArchX86 = v1::SCMP_ARCH_X86, kArchX86_64 = v1::SCMP_ARCH_X86_64,
              kArchX32 = v1::SCMP_ARCH_X32, kArchArm = v1::SCMP_ARCH_ARM,
              kArchAarch64 = v1::SCMP_ARCH_AARCH64;
constexpr int kCmpNe = v1::SCMP_CMP_NE, kCmpLt = v1::SCMP_CMP_LT, kCmpLe = v1::SCMP_CMP_LE,
              kCmpEq = v1::SCMP_CMP_EQ, kCmpGe = v1::SCMP_CMP_GE, kCmpGt = v1::SCMP_CMP_GT,
              kCmpMaskedEq = v1::SCMP_CMP_MASKED_EQ;
}  // namespace brig::security::pb

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "log/log.h"
#include "proto/textproto.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::security {
namespace {

using CtxPtr = std::unique_ptr<void, decltype(&seccomp_release)>;

Result<uint32_t> ToLibseccompAction(v1::SeccompAction action, std::optional<uint32_t> errno_ret,
                                    const std::string& where) {
  switch (static_cast<int>(action)) {
    case pb::kActKill:
    case pb::kActKillThread:
      return uint32_t{SCMP_ACT_KILL_THREAD};
    case pb::kActKillProcess:
      return uint32_t{SCMP_ACT_KILL_PROCESS};
    case pb::kActTrap:
      return uint32_t{SCMP_ACT_TRAP};
    case pb::kActErrno: {
      uint32_t e = errno_ret.value_or(EPERM);
      if (e == 0 || e > 4095) return Fail("seccomp policy", where, "errnoRet out of range 1..4095");
      return uint32_t{SCMP_ACT_ERRNO(e)};
    }
    case pb::kActTrace:
      return uint32_t{SCMP_ACT_TRACE(errno_ret.value_or(EPERM))};
    case pb::kActAllow:
      return uint32_t{SCMP_ACT_ALLOW};
    case pb::kActLog:
      return uint32_t{SCMP_ACT_LOG};
    case pb::kActNotify:
      return uint32_t{SCMP_ACT_NOTIFY};
    default:
      return Fail("seccomp policy", where, "missing or unknown action");
  }
}

Result<uint32_t> ToLibseccompArch(v1::SeccompArch arch) {
  switch (static_cast<int>(arch)) {
    case pb::kArchX86: return uint32_t{SCMP_ARCH_X86};
    case pb::kArchX86_64: return uint32_t{SCMP_ARCH_X86_64};
    case pb::kArchX32: return uint32_t{SCMP_ARCH_X32};
    case pb::kArchArm: return uint32_t{SCMP_ARCH_ARM};
    case pb::kArchAarch64: return uint32_t{SCMP_ARCH_AARCH64};
    default: return Fail("seccomp policy", "architectures", "unknown architecture");
  }
}

Result<scmp_compare> ToLibseccompOp(v1::SeccompOp op, const std::string& where) {
  switch (static_cast<int>(op)) {
    case pb::kCmpNe: return SCMP_CMP_NE;
    case pb::kCmpLt: return SCMP_CMP_LT;
    case pb::kCmpLe: return SCMP_CMP_LE;
    case pb::kCmpEq: return SCMP_CMP_EQ;
    case pb::kCmpGe: return SCMP_CMP_GE;
    case pb::kCmpGt: return SCMP_CMP_GT;
    case pb::kCmpMaskedEq: return SCMP_CMP_MASKED_EQ;
    default: return Fail("seccomp policy", where, "missing or unknown args op");
  }
}

Result<unsigned> ToFilterFlag(const std::string& flag) {
  if (flag == "SECCOMP_FILTER_FLAG_LOG") return unsigned{SECCOMP_FILTER_FLAG_LOG};
  if (flag == "SECCOMP_FILTER_FLAG_SPEC_ALLOW") return unsigned{SECCOMP_FILTER_FLAG_SPEC_ALLOW};
  return Fail("seccomp policy", flag, "unknown flag");
}

// libseccomp ANDs the comparisons of one rule and cannot compare one argument twice in a
// rule, so, as runc does for OCI policies, comparisons of distinct arguments form one rule
// and repeated comparisons of the same argument become one rule each (OR).
//
// `ctx` holds one architecture. libseccomp answers EEXIST where the rule and an earlier one
// reach the same decision with different actions. On the native architecture that is a
// policy that contradicts itself, refused. On another, the ABI may not express the rule: on
// x86 socket(2) is also multiplexed through socketcall(2), whose arguments after the first
// are a pointer no filter can read, so "socket, a0 != 16: allow" and "socket, a0 == 16 and
// a2 == 9: errno" (podman's rootless profile) both become socketcall(SYS_SOCKET). The rule
// is then left out on that architecture only, where the earlier one decides, and the
// native filter holds the policy exactly.
Status AddRule(scmp_filter_ctx ctx, bool native, int nr, uint32_t action,
               const std::vector<scmp_arg_cmp>& cmps, const std::string& name) {
  std::set<unsigned> indexes;
  for (const auto& c : cmps) indexes.insert(c.arg);
  int rc = 0;
  if (indexes.size() == cmps.size()) {
    rc = seccomp_rule_add_array(ctx, action, nr, cmps.size(), cmps.data());
  } else {
    for (const auto& c : cmps) {
      rc = seccomp_rule_add_array(ctx, action, nr, 1, &c);
      if (rc < 0) break;
    }
  }
  if (rc == -EEXIST && native) {
    return Fail("seccomp policy", name, "two rules with different actions match the same arguments",
                ErrorKind::kBadInput);
  }
  if (rc == -EEXIST) {
    log::Debug("seccomp: a rule for '", name,
               "' is left out on a foreign architecture, whose ABI cannot tell it from an "
               "earlier one");
    return {};
  }
  if (rc < 0) {
    errno = -rc;
    return SysError("seccomp rule", name);
  }
  return {};
}

// What the rules so far say about one syscall, to refuse combinations libseccomp would
// silently resolve: with an unconditional rule for a syscall, it drops every conditional
// rule for it, so a policy "allow ioctl; deny ioctl(TIOCSTI)" would allow TIOCSTI.
struct SyscallRules {
  std::set<uint32_t> actions;
  bool unconditional = false;
};
using RuleIndex = std::map<int, SyscallRules>;

Status Record(RuleIndex& index, int nr, uint32_t action, bool unconditional,
              const std::string& name) {
  SyscallRules& r = index[nr];
  r.actions.insert(action);
  r.unconditional |= unconditional;
  if (r.unconditional && r.actions.size() > 1) {
    return Fail("seccomp policy", name,
                "an unconditional rule and a rule with another action both name it; "
                "libseccomp would silently keep only one (write the exception as an "
                "allowlist, see policies/seccomp/README.md)",
                ErrorKind::kBadInput);
  }
  return {};
}

// SCMP_ACT_NOTIFY stops the syscall until an agent answers it, through the listener the
// process hands over (container/process.h) with sendmsg(2), which therefore must not stop:
// it would wait for an agent that can only have the listener once it returned. Nor can
// anything be notified where no agent is named.
Status CheckNotified(const v1::SeccompPolicy& policy, const std::string& name) {
  if (policy.listener_path().empty()) {
    return Fail("seccomp policy", name,
                "SCMP_ACT_NOTIFY needs a seccomp agent: linux.seccomp.listenerPath is empty",
                ErrorKind::kBadInput);
  }
  if (name == "sendmsg") {
    return Fail("seccomp policy", name,
                "SCMP_ACT_NOTIFY cannot be used for the sendmsg syscall: the process hands its "
                "listener over with it",
                ErrorKind::kBadInput);
  }
  return {};
}

// Adds `rule` to `ctx`, which holds one architecture; the native one's pass validates it
// and records it in `index`.
Status AddRules(scmp_filter_ctx ctx, bool native, const v1::SeccompPolicy& policy,
                const v1::SeccompRule& rule, uint32_t default_action, RuleIndex& index) {
  std::string first = rule.names().empty() ? "(no names)" : rule.names(0);
  if (rule.names().empty()) return Fail("seccomp policy", "syscalls", "a rule names no syscall");
  std::optional<uint32_t> errno_ret;
  if (rule.has_errno_ret()) errno_ret = rule.errno_ret();
  uint32_t action = BRIG_TRY(ToLibseccompAction(rule.action(), errno_ret, first));
  if (action == SCMP_ACT_NOTIFY) {
    for (const auto& name : rule.names()) BRIG_TRY(CheckNotified(policy, name));
  }
  std::vector<scmp_arg_cmp> cmps;
  for (const auto& a : rule.args()) {
    if (a.index() > 5) return Fail("seccomp policy", first, "argument index out of range 0..5");
    scmp_compare op = BRIG_TRY(ToLibseccompOp(a.op(), first));
    cmps.push_back(scmp_arg_cmp{a.index(), op, a.value(), a.value_two()});
  }
  for (const auto& name : rule.names()) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) return Fail("seccomp policy", name, "unknown system call");
    // Recorded before anything is skipped: an explicit rule with the default action still
    // says what the policy means, and may contradict an unconditional rule.
    if (native) BRIG_TRY(Record(index, nr, action, cmps.empty(), name));
    // A rule that repeats the default action changes nothing, and libseccomp refuses it
    // (EACCES); OCI policies such as Docker's contain such rules.
    if (action == default_action) continue;
    BRIG_TRY(AddRule(ctx, native, nr, action, cmps, name));
  }
  return {};
}

Status SetAttr(scmp_filter_ctx ctx, scmp_filter_attr attr, uint32_t value, const char* what) {
  int rc = seccomp_attr_set(ctx, attr, value);
  if (rc < 0) {
    errno = -rc;
    return SysError("seccomp_attr_set", what);
  }
  return {};
}

// An empty context for one architecture with the attributes every context of a policy
// shares (seccomp_merge requires them equal).
Result<CtxPtr> ArchContext(uint32_t default_action, uint32_t arch) {
  CtxPtr ctx(seccomp_init(default_action), seccomp_release);
  if (!ctx) return Fail("seccomp_init", "", "libseccomp refused the default action");
  // A syscall made through a foreign ABI (i386 int 0x80, x32) kills the process.
  BRIG_TRY(SetAttr(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS, "badarch"));
  // We set no_new_privs ourselves, and only the bytes are loaded (never seccomp_load).
  BRIG_TRY(SetAttr(ctx.get(), SCMP_FLTATR_CTL_NNP, 0, "nnp"));
  // A binary tree instead of a linear list: fewer instructions per syscall.
  BRIG_TRY(SetAttr(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2, "optimize"));
  if (arch != seccomp_arch_native()) {
    for (int rc :
         {seccomp_arch_add(ctx.get(), arch), seccomp_arch_remove(ctx.get(), SCMP_ARCH_NATIVE)}) {
      if (rc < 0) {
        errno = -rc;
        return SysError("seccomp architecture", std::to_string(arch));
      }
    }
  }
  return ctx;
}

// The one compile path: validates `policy` and returns a libseccomp context holding it.
// CompileSeccomp exports it as BPF, ExportPfc as pseudo-filter code.
Result<CtxPtr> BuildContext(const v1::SeccompPolicy& policy) {
  std::optional<uint32_t> default_errno;
  if (policy.has_default_errno_ret()) default_errno = policy.default_errno_ret();
  if (policy.default_action() == pb::kActNotify) {
    return Fail("seccomp policy", "defaultAction",
                "SCMP_ACT_NOTIFY cannot be used as default action", ErrorKind::kBadInput);
  }
  uint32_t def =
      BRIG_TRY(ToLibseccompAction(policy.default_action(), default_errno, "defaultAction"));
  // The native architecture, then each other the policy names: a context of its own each
  // (AddRule says why), merged into the native one at the end.
  std::vector<uint32_t> arches = {seccomp_arch_native()};
  for (int a : policy.architectures()) {
    uint32_t arch = BRIG_TRY(ToLibseccompArch(static_cast<v1::SeccompArch>(a)));
    if (std::find(arches.begin(), arches.end(), arch) == arches.end()) arches.push_back(arch);
  }
  CtxPtr ctx = BRIG_TRY(ArchContext(def, arches[0]));
  RuleIndex index;
  for (const auto& rule : policy.syscalls()) {
    BRIG_TRY(AddRules(ctx.get(), true, policy, rule, def, index));
  }
  for (size_t i = 1; i < arches.size(); ++i) {
    CtxPtr other = BRIG_TRY(ArchContext(def, arches[i]));
    for (const auto& rule : policy.syscalls()) {
      BRIG_TRY(AddRules(other.get(), false, policy, rule, def, index));
    }
    // seccomp_merge releases the second context when it succeeds.
    int rc = seccomp_merge(ctx.get(), other.get());
    if (rc < 0) {
      errno = -rc;
      return SysError("seccomp_merge", std::to_string(arches[i]));
    }
    (void)other.release();
  }
  return ctx;
}

// The policy's flags, and a listener where a rule notifies.
Result<unsigned> FilterFlags(const v1::SeccompPolicy& policy) {
  unsigned flags = 0;
  for (const auto& f : policy.flags()) flags |= BRIG_TRY(ToFilterFlag(f));
  for (const auto& rule : policy.syscalls()) {
    if (rule.action() == pb::kActNotify) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  }
  return flags;
}

// Runs one of libseccomp's seccomp_export_* functions into a memfd and returns the bytes.
Result<std::string> Export(scmp_filter_ctx ctx, int (*fn)(const scmp_filter_ctx, int),
                           const char* what) {
  sys::UniqueFd mem(memfd_create("brig-seccomp", MFD_CLOEXEC));
  if (!mem) return SysError("memfd_create", "seccomp");
  int rc = fn(ctx, mem.get());
  if (rc < 0) {
    errno = -rc;
    return SysError(what);
  }
  return util::ReadFd(mem.get(), 0);
}

}  // namespace

Result<v1::SeccompPolicy> ParseSeccompPolicy(const std::string& text, const std::string& name) {
  v1::SeccompPolicy policy;
  BRIG_TRY(proto::ParseTextProto(text, name, &policy));
  if (!policy.listener_path().empty() || !policy.listener_metadata().empty()) {
    return Fail("seccomp policy", name,
                "listener_path: only an OCI container's seccomp has an agent to notify "
                "(linux.seccomp.listenerPath)",
                ErrorKind::kBadInput);
  }
  return policy;
}

std::string LibseccompVersion() {
  const scmp_version* v = seccomp_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
}

Result<SeccompProgram> CompileSeccomp(const v1::SeccompPolicy& policy) {
  CtxPtr ctx = BRIG_TRY(BuildContext(policy));
  SeccompProgram program;
  program.flags = BRIG_TRY(FilterFlags(policy));
  std::string bytes = BRIG_TRY(Export(ctx.get(), seccomp_export_bpf, "seccomp_export_bpf"));
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
    return Fail("seccomp_export_bpf", "", "libseccomp produced a malformed program");
  }
  // The kernel refuses longer filters (and LoadSeccomp's length is 16 bits): refuse here,
  // before any process exists, not at load time in the child.
  if (size_t n = bytes.size() / sizeof(sock_filter); n > BPF_MAXINSNS) {
    return Fail("seccomp policy", "",
                "compiles to " + std::to_string(n) + " BPF instructions, more than the kernel's " +
                    std::to_string(BPF_MAXINSNS));
  }
  program.insns.resize(bytes.size() / sizeof(sock_filter));
  memcpy(program.insns.data(), bytes.data(), bytes.size());
  return program;
}

Result<SeccompProgram> CompileOciSeccomp(const v1::SeccompPolicy& policy) {
  SeccompProgram p = BRIG_TRY(CompileSeccomp(policy));
  int def = policy.default_action();
  if (def == pb::kActAllow || def == pb::kActLog || def == pb::kActTrace) return p;
  if (policy.has_default_errno_ret() && policy.default_errno_ret() == ENOSYS) return p;
  bool native = policy.architectures().empty();
  for (int a : policy.architectures()) native |= a == pb::kArchX86_64;
  if (!native) return p;
  int last = -1;
  for (const auto& rule : policy.syscalls()) {
    for (const auto& name : rule.names()) {
      last = std::max(last, seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str()));
    }
  }
  if (last < 0) return p;
  // The architecture first; x32's calls (the x86_64 architecture with bit 30 set in the
  // number) go on to the program as they are.
  const sock_filter stub[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, static_cast<uint32_t>(last), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  };
  if (p.insns.size() + std::size(stub) > BPF_MAXINSNS) {
    return Fail("seccomp policy", "", "too long for the ENOSYS stub runc puts before it");
  }
  p.insns.insert(p.insns.begin(), std::begin(stub), std::end(stub));
  return p;
}

Result<std::string> ExportPfc(const v1::SeccompPolicy& policy) {
  CtxPtr ctx = BRIG_TRY(BuildContext(policy));
  (void)BRIG_TRY(FilterFlags(policy));  // the same checks as CompileSeccomp
  return Export(ctx.get(), seccomp_export_pfc, "seccomp_export_pfc");
}

std::optional<int> ResolveSyscallX86_64(const std::string& name) {
  int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str());
  // Negative numbers are errors or libseccomp's pseudo-syscalls (names of other ABIs).
  if (nr < 0) return std::nullopt;
  return nr;
}

Result<int> LoadSeccomp(const SeccompProgram& program) {
  struct sock_fprog prog;
  prog.len = static_cast<unsigned short>(program.insns.size());
  prog.filter = const_cast<sock_filter*>(program.insns.data());
  return sys::SeccompSetFilter(program.flags, prog);
}

bool HasListener(const SeccompProgram& program) {
  return program.flags & SECCOMP_FILTER_FLAG_NEW_LISTENER;
}

}  // namespace brig::security
