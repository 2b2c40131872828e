// Every syscall that a shipped seccomp policy denies fails inside the sandbox with the
// errno the policy declares. The list is generated from the policy file, never written by
// hand: the test parses the policy with brig's own parser, asks libseccomp for every
// x86_64 syscall number, and runs one probe per policy that calls all the denied ones
// (syscall(nr, 0, 0, 0, 0, 0, 0): a denied call is stopped by seccomp before the kernel
// runs it, so calling it is safe).
//
// "Denied" means denied unconditionally:
//   - a syscall that no rule names gets the default action (ERRNO, default_errno_ret or
//     EPERM);
//   - a syscall whose only rules are unconditional ERRNO rules gets their errno_ret (EPERM
//     if none): clone3 is ENOSYS in both policies;
//   - a syscall named by any conditional rule (socket, socketpair, clone, ioctl,
//     personality in default) is partially allowed and not checked here; the attack
//     tests probe its denied cases.
// Each policy runs twice: as shipped, and with its default errno changed to a marker
// (EHWPOISON) that no kernel path returns to these calls. The first run checks the errnos
// the file declares; the second tells the filter's EPERM from the kernel's, which a call
// with zero arguments often gets anyway (fchmod(0, 0) of root's /dev/null, setgroups
// without CAP_SETGID): without it, allowing such a syscall would go unnoticed.
//
// Numbers in [0, kMaxNr) that libseccomp 2.5.4 cannot name (the gap 337..423 and syscalls
// newer than it, such as mseal and setxattrat) can be named by no rule, so they get the
// default action too; they are checked as well, and counted separately.
//
// Skipped, because recent kernels exempt them from seccomp, so no policy can deny them:
// 335 uretprobe and 336 uprobe. Called outside a uprobe trampoline under a filter that
// denies every unnamed number, 335 killed the probe with SIGILL and 336 returned ENXIO
// (Linux 6.18).
#include <errno.h>
#include <google/protobuf/text_format.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_fixture.h"
#include "security/seccomp.h"
#include "util/files.h"

// After brig's headers: <seccomp.h> defines SCMP_ACT_*, SCMP_ARCH_* and SCMP_CMP_* macros
// that clash with the proto enum values' names, so below this line the proto's actions are
// compared by name (v1::SeccompAction_Name), never spelt as enum values.
#include <seccomp.h>

namespace brig::testing {
namespace {

constexpr int kMarkerErrno = EHWPOISON;  // what no zero-argument syscall returns by itself
constexpr int kMaxNr = 512;  // x86_64 numbers below the x32 range (512..547 are x32-only)
const std::set<int> kExemptFromSeccomp = {335, 336};  // uretprobe, uprobe: see above

// What the static probe itself calls to start, print and exit (strace of `brig-probe
// syscalls`), plus execve, which brig init makes after loading the filter. A policy that
// denied one of them would break the probe, not the syscall under test.
const char* const kProbeNeeds[] = {
    "execve",       "arch_prctl", "set_tid_address", "set_robust_list", "rseq",       "prlimit64",
    "brk",          "mprotect",   "getrandom",       "readlink",        "newfstatat", "write",
    "rt_sigreturn", "exit",       "exit_group"};

struct Denied {
  int nr = -1;
  std::string name;  // libseccomp's name, or "#<nr>" for a number it does not know
  int err = 0;       // the errno the policy declares
};

struct DeniedSet {
  std::vector<Denied> syscalls;  // named by libseccomp
  std::vector<Denied> unnamed;   // numbers libseccomp does not know: the default action
  std::vector<Denied> All() const {
    std::vector<Denied> all = syscalls;
    all.insert(all.end(), unnamed.begin(), unnamed.end());
    return all;
  }
};

std::string PolicyPath(const std::string& name) {
  return std::string(BRIG_SOURCE_POLICY_DIR) + "/seccomp/" + name + ".textproto";
}

v1::SeccompPolicy LoadPolicy(const std::string& path) {
  auto text = util::ReadFile(path);
  EXPECT_TRUE(text) << text.error().Render();
  if (!text) return {};
  auto policy = security::ParseSeccompPolicy(*text, path);
  EXPECT_TRUE(policy) << policy.error().Render();
  return policy ? *policy : v1::SeccompPolicy{};
}

std::string SyscallName(int nr) {
  char* s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
  if (!s) return {};
  std::string name = s;
  free(s);
  return name;
}

// The syscalls `policy` denies unconditionally, with their errno (see the top comment).
// Anything the test cannot check (a default or unconditional action other than ERRNO and
// ALLOW/LOG) is a failure, not a silent skip.
DeniedSet ComputeDenied(const v1::SeccompPolicy& policy, const std::string& what) {
  DeniedSet out;
  if (v1::SeccompAction_Name(policy.default_action()) != "SCMP_ACT_ERRNO") {
    ADD_FAILURE() << what << ": default action " << v1::SeccompAction_Name(policy.default_action())
                  << " is not ERRNO; this test only checks errno denials";
    return out;
  }
  const int default_err =
      policy.has_default_errno_ret() ? static_cast<int>(policy.default_errno_ret()) : EPERM;

  struct Named {
    bool conditional = false;
    std::set<std::string> actions;
    std::set<int> errnos;  // of the ERRNO rules
  };
  std::map<int, Named> named;
  for (const auto& rule : policy.syscalls()) {
    std::string action = v1::SeccompAction_Name(rule.action());
    for (const auto& name : rule.names()) {
      int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str());
      if (nr < 0) continue;  // not an x86_64 syscall (CompileSeccomp refuses unknown names)
      Named& n = named[nr];
      n.conditional |= rule.args_size() > 0;
      n.actions.insert(action);
      if (action == "SCMP_ACT_ERRNO")
        n.errnos.insert(rule.has_errno_ret() ? static_cast<int>(rule.errno_ret()) : EPERM);
    }
  }

  for (int nr = 0; nr < kMaxNr; ++nr) {
    if (kExemptFromSeccomp.count(nr)) continue;
    std::string name = SyscallName(nr);
    auto it = named.find(nr);
    if (name.empty()) {
      out.unnamed.push_back({nr, "#" + std::to_string(nr), default_err});
      continue;
    }
    if (it == named.end()) {
      out.syscalls.push_back({nr, name, default_err});
      continue;
    }
    const Named& n = it->second;
    if (n.conditional) continue;  // partially allowed
    if (n.actions == std::set<std::string>{"SCMP_ACT_ERRNO"}) {
      EXPECT_EQ(n.errnos.size(), 1u)
          << what << ": " << name << " has ERRNO rules with different errnos";
      out.syscalls.push_back({nr, name, *n.errnos.begin()});
      continue;
    }
    for (const auto& a : n.actions) {
      if (a != "SCMP_ACT_ALLOW" && a != "SCMP_ACT_LOG" && a != "SCMP_ACT_ERRNO") {
        ADD_FAILURE() << what << ": " << name << " has an unconditional " << a
                      << " rule, which this test cannot check; extend it";
      }
    }
  }

  for (const char* need : kProbeNeeds) {
    for (const auto& d : out.syscalls) {
      EXPECT_NE(d.name, need) << what << " denies " << need
                              << ", which the probe itself needs: the test cannot run";
    }
  }
  return out;
}

std::string ErrnoName(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "E" + std::to_string(e);
}

// `policy` with its default errno replaced by the marker, as text.
std::string MarkedText(const v1::SeccompPolicy& policy) {
  v1::SeccompPolicy marked = policy;
  marked.set_default_errno_ret(kMarkerErrno);
  std::string text;
  EXPECT_TRUE(google::protobuf::TextFormat::PrintToString(marked, &text));
  return text;
}

// A policy directory whose seccomp/default.textproto is `policy_text`. brig reads the
// default profile from the same directory, so the shipped profiles are copied beside it.
void MakePolicyDir(const ScratchDir& dir, const std::string& policy_text) {
  ASSERT_EQ(mkdir((dir.path() + "/seccomp").c_str(), 0755), 0) << strerror(errno);
  dir.Write("seccomp/default.textproto", policy_text);
  std::string profiles = std::string(BRIG_SOURCE_POLICY_DIR) + "/profiles";
  struct stat st;
  if (stat(profiles.c_str(), &st) == 0) {
    std::string cmd = "cp -R '" + profiles + "' '" + dir.path() + "/profiles'";
    ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
  }
}

class SeccompDeny : public HostTest {
 protected:
  // Runs the probe once over every number in `denied`, under `policy_dir`, and returns
  // what each call did ("ok" or an errno name), by number.
  std::map<int, std::string> RunDenied(const std::vector<Denied>& denied,
                                       const std::string& policy_dir) {
    std::vector<std::string> args = {"syscalls"};
    for (const auto& d : denied) args.push_back(std::to_string(d.nr));
    auto r = Probe(args, {"--policy-dir", policy_dir});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<int, std::string> got;
    std::istringstream lines(r.out);
    int nr;
    std::string result;
    while (lines >> nr >> result) got[nr] = result;
    EXPECT_EQ(got.size(), denied.size()) << "the probe did not report every syscall:\n"
                                         << r.out << r.err;
    return got;
  }

  void ExpectDenied(const std::string& what, const std::vector<Denied>& denied,
                    const std::map<int, std::string>& got) {
    for (const auto& d : denied) {
      auto it = got.find(d.nr);
      std::string result = it == got.end() ? "(no answer)" : it->second;
      EXPECT_EQ(result, ErrnoName(d.err))
          << what << ": " << d.name << " (" << d.nr << ") should fail with " << ErrnoName(d.err);
    }
  }

  // Every denied syscall fails with its declared errno, and is stopped by the filter.
  void CheckPolicy(const std::string& what, const v1::SeccompPolicy& policy,
                   const std::string& policy_dir) {
    DeniedSet denied = ComputeDenied(policy, what);
    // Guards of the generator, not a list of what to check: both policies deny far more
    // than this, and clone3 is ENOSYS in both.
    EXPECT_GT(denied.syscalls.size(), 80u) << what;
    bool clone3 = false;
    for (const auto& d : denied.syscalls) {
      if (d.name == "clone3") clone3 = d.err == ENOSYS;
    }
    EXPECT_TRUE(clone3) << what << ": clone3 is not in the denied set with ENOSYS";

    auto all = denied.All();
    ExpectDenied(what, all, RunDenied(all, policy_dir));

    v1::SeccompPolicy marked = policy;
    marked.set_default_errno_ret(kMarkerErrno);
    auto marked_all = ComputeDenied(marked, what).All();
    ASSERT_EQ(marked_all.size(), all.size());
    ScratchDir dir;
    MakePolicyDir(dir, MarkedText(policy));
    ExpectDenied(what + " with default errno " + ErrnoName(kMarkerErrno), marked_all,
                 RunDenied(marked_all, dir.path()));

    RecordProperty(what + "_denied_syscalls", static_cast<int>(denied.syscalls.size()));
    RecordProperty(what + "_unnamed_numbers", static_cast<int>(denied.unnamed.size()));
    printf(
        "[   info   ] %s: %zu denied syscalls and %zu numbers libseccomp cannot name, "
        "checked in two sandboxes (as shipped, and with the marker)\n",
        what.c_str(), denied.syscalls.size(), denied.unnamed.size());
  }
};

TEST_F(SeccompDeny, DefaultPolicyDeniesWithDeclaredErrno) {
  // The source tree's policies, explicitly: without --policy-dir brig prefers an installed
  // copy, which need not be the file parsed here.
  CheckPolicy("default", LoadPolicy(PolicyPath("default")), BRIG_SOURCE_POLICY_DIR);
}

TEST_F(SeccompDeny, StrictPolicyDeniesWithDeclaredErrno) {
  std::string text = ReadFileOrEmpty(PolicyPath("strict"));
  ASSERT_FALSE(text.empty()) << PolicyPath("strict");
  ScratchDir dir;
  MakePolicyDir(dir, text);
  CheckPolicy("strict", LoadPolicy(PolicyPath("strict")), dir.path());
}

// The check can fail: strict's denied set, run under strict plus rules that allow three of
// its denied syscalls and change the errno of a fourth, reports exactly those four.
// setgroups(0, NULL) fails with EPERM from the kernel when allowed, so only the marked
// run sees it.
TEST_F(SeccompDeny, ReportsASyscallThePolicyDoesNotDeny) {
  v1::SeccompPolicy strict = LoadPolicy(PolicyPath("strict"));
  v1::SeccompPolicy marked = strict;
  marked.set_default_errno_ret(kMarkerErrno);
  auto all = ComputeDenied(marked, "strict").All();
  std::map<std::string, std::string> loosened = {
      {"personality", "ok"},   // personality(PER_LINUX) runs and succeeds
      {"getpmsg", "ENOSYS"},   // runs, and the kernel does not implement it
      {"setgroups", "EPERM"},  // runs, and the kernel refuses it
      {"sync", "EINVAL"},      // still denied, with another errno (sync never runs)
  };
  std::string text = MarkedText(strict) + R"(
syscalls { names: "personality" action: SCMP_ACT_ALLOW }
syscalls { names: "getpmsg" action: SCMP_ACT_ALLOW }
syscalls { names: "setgroups" action: SCMP_ACT_ALLOW }
syscalls { names: "sync" action: SCMP_ACT_ERRNO errno_ret: 22 }
)";
  ScratchDir dir;
  MakePolicyDir(dir, text);
  auto got = RunDenied(all, dir.path());
  std::map<std::string, std::string> mismatches;
  for (const auto& d : all) {
    if (got[d.nr] != ErrnoName(d.err)) mismatches[d.name] = got[d.nr];
  }
  EXPECT_EQ(mismatches, loosened);
}

// strict is default minus what read-only phases do not need: everything default denies,
// strict denies too, with the same errno (no probe needed).
TEST(SeccompDenySets, StrictDeniesEverythingDefaultDenies) {
  DeniedSet def = ComputeDenied(LoadPolicy(PolicyPath("default")), "default");
  DeniedSet strict = ComputeDenied(LoadPolicy(PolicyPath("strict")), "strict");
  std::map<int, int> strict_err;
  for (const auto& d : strict.All()) strict_err[d.nr] = d.err;
  for (const auto& d : def.All()) {
    auto it = strict_err.find(d.nr);
    if (it == strict_err.end()) {
      ADD_FAILURE() << "default denies " << d.name << " but strict does not";
    } else {
      EXPECT_EQ(it->second, d.err) << d.name;
    }
  }
  EXPECT_GT(strict.syscalls.size(), def.syscalls.size());
}

}  // namespace
}  // namespace brig::testing
