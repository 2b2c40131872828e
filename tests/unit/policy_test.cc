// `brig policy`: golden files for list, show, explain, export, diff and paths against the source
// tree's policies (tests/golden/), check over every shipped policy file, error positions,
// and the OCI-JSON round trip. BRIG_UPDATE_GOLDEN=1 rewrites the golden files.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/cli.h"
#include "security/policy_view.h"
#include "security/seccomp.h"
#include "testlib/testlib.h"
#include "util/files.h"

namespace brig::security {
namespace {

const std::string kPolicyDir = BRIG_SOURCE_POLICY_DIR;
const std::string kPodmanJson = "/usr/share/containers/seccomp.json";

std::string SourceRoot() { return kPolicyDir.substr(0, kPolicyDir.rfind('/')); }

struct Captured {
  int rc = -1;
  std::string out, err;
};

// Runs `fn` with stdout and stderr redirected to temporary files.
template <typename Fn>
Captured Capture(Fn fn) {
  Captured c;
  FILE* out = tmpfile();
  FILE* err = tmpfile();
  if (!out || !err) abort();
  fflush(stdout);
  fflush(stderr);
  int saved_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  int saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  dup2(fileno(out), STDOUT_FILENO);
  dup2(fileno(err), STDERR_FILENO);
  c.rc = fn();
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  close(saved_out);
  close(saved_err);
  c.out = util::ReadFd(fileno(out), 0).value();
  c.err = util::ReadFd(fileno(err), 0).value();
  fclose(out);
  fclose(err);
  return c;
}

Captured Policy(std::vector<std::string> args) {
  args.insert(args.begin(), {"--policy-dir", kPolicyDir});
  return Capture([&] { return cli::PolicyMain(args); });
}

// Compares `actual` with tests/golden/NAME byte for byte, or rewrites the file when
// BRIG_UPDATE_GOLDEN=1.
void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = SourceRoot() + "/tests/golden/" + name;
  const char* update = getenv("BRIG_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    ASSERT_TRUE(util::WriteFileAtomic(path, actual)) << "cannot write " << path;
    return;
  }
  auto expected = util::ReadFile(path);
  ASSERT_TRUE(expected)
      << expected.error().Render()
      << "\ncreate it with: BRIG_UPDATE_GOLDEN=1 unit_tests --gtest_filter='Policy*'";
  if (*expected == actual) return;
  std::string got = ::testing::TempDir() + "brig-golden-" + name;
  (void)util::WriteFileAtomic(got, actual);
  size_t line = 1, i = 0;
  while (i < actual.size() && i < expected->size() && actual[i] == (*expected)[i]) {
    if (actual[i++] == '\n') ++line;
  }
  ADD_FAILURE() << "output differs from " << path << " from line " << line << "\n"
                << "  see: diff -u " << path << " " << got << "\n"
                << "  if the change is intended, regenerate the golden files with:\n"
                << "  BRIG_UPDATE_GOLDEN=1 <build>/tests/unit_tests --gtest_filter='Policy*'";
}

std::string Read(const std::string& path) {
  auto text = util::ReadFile(path);
  EXPECT_TRUE(text) << text.error().Render();
  return text ? *text : "";
}

// ---- golden files ------------------------------------------------------------------

TEST(PolicyGolden, List) {
  auto r = Policy({"list"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ExpectGolden("list.txt", r.out);
}

TEST(PolicyGolden, ShowUntrustedCodeRead) {
  auto r = Policy({"show", "untrusted-code-read"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ExpectGolden("show-untrusted-code-read.textproto", r.out);
}

TEST(PolicyGolden, ExplainDefault) {
  auto r = Policy({"explain", "default"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ExpectGolden("explain-default.txt", r.out);
}

// One syscall's answer, the default's included (issue 32, item 7).
TEST(Policy, ExplainOneSyscallSaysWhatDecidesIt) {
  auto r = Policy({"explain", "default", "openat"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("SYSCALL  ACTION  CONDITIONS  RATIONALE\nopenat   ALLOW   -  ", 0), 0u)
      << r.out;
  EXPECT_EQ(r.out.find("(default)"), std::string::npos) << r.out;
  r = Policy({"explain", "default", "ptrace"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "(default) ERRNO(EPERM) for ptrace: no rule of the policy names it\n");
  r = Policy({"explain", "default", "clone"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\nclone    ALLOW   arg0 & 0x7e020000 == 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n(default) ERRNO(EPERM) for clone where no condition above matches\n"),
            std::string::npos)
      << r.out;
  r = Policy({"explain", "default", "frobnicate"});
  EXPECT_EQ(r.rc, 125);
  EXPECT_EQ(r.err,
            "brig: syscall 'frobnicate': not a system call name libseccomp knows on "
            "x86_64\n");
}

TEST(PolicyGolden, ExportDefaultOciJson) {
  auto r = Policy({"export", "default", "--format", "oci-json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ExpectGolden("export-default.oci.json", r.out);
}

TEST(PolicyGolden, DiffDefaultPodman) {
  if (access(kPodmanJson.c_str(), R_OK) != 0) {
    GTEST_SKIP() << kPodmanJson << " is absent (Debian: golang-github-containers-common)";
  }
  auto r = Policy({"diff", "default", kPodmanJson});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.err, "");
  ExpectGolden("diff-default-podman.txt", r.out);
}

TEST(PolicyGolden, Paths) {
  auto r = Policy({"paths"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ExpectGolden("paths.txt", r.out);
}

// ---- check -------------------------------------------------------------------------

std::vector<std::string> ShippedPolicyFiles() {
  std::vector<std::string> files;
  for (const char* kind : {"profiles", "seccomp"}) {
    std::string dir = kPolicyDir + "/" + kind;
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (auto* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 10 && n.compare(n.size() - 10, 10, ".textproto") == 0) {
        files.push_back(dir + "/" + n);
      }
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The CI gate of the issue: `brig policy check` over every file in policies/.
TEST(PolicyCheck, EveryShippedFilePasses) {
  std::vector<std::string> files = ShippedPolicyFiles();
  ASSERT_GE(files.size(), 2u);
  std::vector<std::string> args = {"check"};
  args.insert(args.end(), files.begin(), files.end());
  auto r = Policy(args);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::string want;
  for (const auto& f : files) want += f + ": ok\n";
  EXPECT_EQ(r.out, want);
}

TEST(PolicyCheck, BrokenFilesReportFileLineColumn) {
  testing::ScratchDir dir;
  ASSERT_EQ(mkdir((dir.path() + "/seccomp").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir.path() + "/profiles").c_str(), 0755), 0);
  std::string typo = dir.Write("seccomp/typo.textproto",
                               "default_action: SCMP_ACT_ERRNO\n"
                               "syscalls {\n"
                               "  names: \"read\"\n"
                               "  acton: SCMP_ACT_ALLOW\n"
                               "}\n");
  std::string unknown =
      dir.Write("seccomp/unknown.textproto",
                "default_action: SCMP_ACT_ERRNO\n"
                "\n"
                "  syscalls { names: \"no_such_call\" action: SCMP_ACT_ALLOW }\n");
  std::string profile = dir.Write("profiles/p.textproto",
                                  "description: \"p\"\n"
                                  "isolation: ISOLATION_SANDBOX\n"
                                  "filesystem { workspace: WORKSPACE_RO }\n"
                                  "network { posture: POSTURE_NONE }\n"
                                  "security { seccomp_policy: \"missing\" }\n");
  std::string good = kPolicyDir + "/seccomp/default.textproto";
  // A profile's seccomp NAME resolves in the policy directory, as brig run --profile's does.
  auto r = Capture([&] {
    return cli::PolicyMain({"--policy-dir", dir.path(), "check", typo, good, unknown, profile});
  });
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, good + ": ok\n");
  EXPECT_EQ(r.err, typo +
                       ":4:8: Message type \"brig.v1.SeccompRule\" has no field named "
                       "\"acton\".\n" +
                       unknown + ":3:3: seccomp policy 'no_such_call': unknown system call\n" +
                       profile + ": seccomp policy 'missing': unknown (known in " + dir.path() +
                       "/seccomp: typo, unknown)\n");
}

// A reviewer checks a profile of their own, beside the seccomp policy it names by a
// relative path, from another directory: brig run --profile finds the policy beside the
// profile, and so must check; and it must compile, as brig run would compile it.
TEST(PolicyCheck, AProfilesSeccompPolicyResolvesAsBrigRunResolvesIt) {
  testing::ScratchDir dir;
  ASSERT_EQ(mkdir((dir.path() + "/own").c_str(), 0755), 0);
  dir.Write("own/mine.textproto", Read(kPolicyDir + "/seccomp/default.textproto"));
  std::string profile = dir.Write("own/p.textproto",
                                  "isolation: ISOLATION_SANDBOX\n"
                                  "filesystem { workspace: WORKSPACE_RO }\n"
                                  "network { posture: POSTURE_NONE }\n"
                                  "security { seccomp_policy: \"./mine.textproto\" }\n");
  ASSERT_NE(access("mine.textproto", F_OK), 0) << "the test must run elsewhere";
  auto r = Policy({"check", profile});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, profile + ": ok\n");
  EXPECT_EQ(r.err, "");
  // The profile diff and explain find the same policy.
  r = Policy({"diff", profile, "untrusted-code-read"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("- security.seccomp_policy: \"./mine.textproto\" (A)  vs  \"default\" "
                       "(B)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("- personality"), std::string::npos) << "the same policy: " << r.out;
  EXPECT_EQ(r.err, "");
  dir.Write("own/mine.textproto",
            "default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"nosuchcall\" "
            "action: SCMP_ACT_ALLOW }\n");
  r = Policy({"check", profile});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, profile + ": " + dir.path() +
                       "/own/./mine.textproto:2:1: seccomp policy 'nosuchcall': unknown "
                       "system call\n");
}

// Every validation error of a parsed file, each at its FILE:LINE:COL, not only the first.
TEST(PolicyCheck, EveryErrorOfAFileIsListed) {
  testing::ScratchDir dir;
  ASSERT_EQ(mkdir((dir.path() + "/seccomp").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir.path() + "/profiles").c_str(), 0755), 0);
  std::string profile = dir.Write("profiles/p.textproto",
                                  "isolation: ISOLATION_SANDBOX\n"
                                  "filesystem {\n"
                                  "  workspace: WORKSPACE_RO\n"
                                  "  protected_paths: \"ok\"\n"
                                  "  protected_paths: \"../out\"\n"
                                  "}\n"
                                  "network {\n"
                                  "  posture: POSTURE_NONE\n"
                                  "  allow_hosts: \"example.com\"\n"
                                  "}\n"
                                  "limits { pids: 0 memory: \"lots\" }\n");
  std::string policy = dir.Write("seccomp/s.textproto",
                                 "default_action: SCMP_ACT_ERRNO\n"
                                 "syscalls { names: \"read\" names: \"nosuch1\" "
                                 "action: SCMP_ACT_ALLOW }\n"
                                 "syscalls { names: \"nosuch2\" action: SCMP_ACT_ALLOW }\n");
  auto r = Policy({"check", profile, policy});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, profile + ":11:18 'limits.memory': expected a number, as in 512M or 1G\n" +
                       profile + ":11:10 'limits.pids': must be from 1 to 4194304\n" +
                       profile + ":5:3 'filesystem.protected_paths': '../out' leaves the "
                       "workspace\n" +
                       profile + ":9:3 'network.allow_hosts': only an allowlist posture has "
                       "an allowlist\n" +
                       profile + " 'security.seccomp_policy': must name a policy\n" +
                       policy + ":2:1: seccomp policy 'nosuch1': unknown system call\n" +
                       policy + ":3:1: seccomp policy 'nosuch2': unknown system call\n");
}

TEST(PolicyCheck, KindComesFromTheDirectoryOrKind) {
  testing::ScratchDir dir;
  std::string file =
      dir.Write("default.textproto", Read(kPolicyDir + "/seccomp/default.textproto"));
  // Outside profiles/ and seccomp/, what the text parses as tells.
  auto r = Policy({"check", file});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, file + ": ok\n");
  std::string broken = dir.Write("broken.textproto", "nonsense {\n");
  r = Policy({"check", file, broken});
  EXPECT_EQ(r.rc, brig::kExitRefused);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("pass --kind"), std::string::npos) << r.err;
  r = Policy({"check", "--kind", "seccomp", file});
  EXPECT_EQ(r.rc, 0) << r.err;
  r = Policy({"check", "--kind=profile", file});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind(file + ":", 0), 0u) << r.err;
}

// ---- export ------------------------------------------------------------------------

TEST(PolicyExport, OciJsonParsesBackIntoTheSamePolicy) {
  const std::string path = kPolicyDir + "/seccomp/default.textproto";
  auto text = Read(path);
  auto original = ParseSeccompPolicy(text, path);
  ASSERT_TRUE(original) << original.error().Render();
  auto r = Policy({"export", "default"});  // oci-json is the default format
  ASSERT_EQ(r.rc, 0) << r.err;
  auto back = ParseOciSeccompJson(r.out, "export.json");
  ASSERT_TRUE(back) << back.error().Render();
  ASSERT_EQ(back->syscalls_size(), original->syscalls_size());
  for (auto& rule : *back->mutable_syscalls()) {
    EXPECT_FALSE(rule.comment().empty()) << rule.names(0) << " has no rationale";
    rule.clear_comment();
  }
  std::string why;
  google::protobuf::util::MessageDifferencer diff;
  diff.ReportDifferencesToString(&why);
  EXPECT_TRUE(diff.Compare(*original, *back)) << why;
  // What Docker and runc need: numbers as JSON numbers, the OCI names.
  EXPECT_NE(r.out.find("\"value\": 2114060288,"), std::string::npos);
  EXPECT_NE(r.out.find("\"defaultErrnoRet\": 1"), std::string::npos);
  EXPECT_NE(r.out.find("\"errnoRet\": 38"), std::string::npos);
  EXPECT_EQ(r.out.find("\\u003e"), std::string::npos);
}

TEST(PolicyExport, BpfIsTheCompiledProgram) {
  const std::string path = kPolicyDir + "/seccomp/default.textproto";
  auto p = ParseSeccompPolicy(Read(path), path);
  ASSERT_TRUE(p);
  auto prog = CompileSeccomp(*p);
  ASSERT_TRUE(prog) << prog.error().Render();
  auto r = Policy({"export", "default", "--format=bpf"});
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(r.out.size(), prog->insns.size() * sizeof(sock_filter));
  EXPECT_EQ(memcmp(r.out.data(), prog->insns.data(), r.out.size()), 0);
}

TEST(PolicyExport, PfcIsLibseccompsText) {
  auto r = Policy({"export", "--format", "pfc", "default"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("# pseudo filter code start"), std::string::npos);
  EXPECT_NE(r.out.find("# filter for syscall \"ioctl\""), std::string::npos);
  auto bad = ParseSeccompPolicy(
      "default_action: SCMP_ACT_ERRNO\n"
      "syscalls { names: \"nope\" action: SCMP_ACT_ALLOW }\n",
      "bad");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(ExportPfc(*bad));  // the same validation as CompileSeccomp
}

// ---- diff --------------------------------------------------------------------------

TEST(PolicyDiff, APolicyEqualsItsOwnExport) {
  testing::ScratchDir dir;
  auto r = Policy({"export", "default"});
  ASSERT_EQ(r.rc, 0);
  std::string json = dir.Write("default.json", r.out);
  r = Policy({"diff", "default", json});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  r = Policy({"diff", "untrusted-code-read", "default"});  // a profile names its policy
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

// Two profiles with the same seccomp policy that differ in workspace, network and limits
// differ: every resolved field is compared, not only the seccomp policies.
TEST(PolicyDiff, TwoProfilesDifferFieldByField) {
  testing::ScratchDir dir;
  std::string a = dir.Write("a.textproto",
                            "description: \"a\"\n"
                            "isolation: ISOLATION_SANDBOX\n"
                            "filesystem { workspace: WORKSPACE_RO }\n"
                            "network { posture: POSTURE_NONE }\n"
                            "security { seccomp_policy: \"default\" }\n"
                            "limits { memory: \"1G\" }\n");
  std::string b = dir.Write("b.textproto",
                            "description: \"b\"\n"
                            "isolation: ISOLATION_SANDBOX\n"
                            "filesystem { workspace: WORKSPACE_COPY protected_paths: \".husky\" }\n"
                            "network { posture: POSTURE_ALLOWLIST allow_hosts: \"example.com\" }\n"
                            "security { seccomp_policy: \"default\" }\n"
                            "limits { memory: \"2G\" pids: 64 timeout: \"30m\" }\n");
  auto r = Policy({"diff", a, b});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "- filesystem.workspace: WORKSPACE_RO (A)  vs  WORKSPACE_COPY (B)\n"
            "- filesystem.protected_paths: \".husky\" only in B\n"
            "- network.posture: POSTURE_NONE (A)  vs  POSTURE_ALLOWLIST (B)\n"
            "- network.allow_hosts: \"example.com\" only in B\n"
            "- limits.memory: \"1G\" (A)  vs  \"2G\" (B)\n"
            "- limits.pids: (unset) (A)  vs  64 (B)\n");
  r = Policy({"diff", a, a});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  // Swap 0 and swap unset are one thing (issue 32, item 7): no difference.
  std::string zero = dir.Write("zero.textproto",
                               "description: \"z\"\n"
                               "isolation: ISOLATION_SANDBOX\n"
                               "filesystem { workspace: WORKSPACE_RO }\n"
                               "network { posture: POSTURE_NONE }\n"
                               "security { seccomp_policy: \"default\" }\n"
                               "limits { memory: \"1G\" swap: \"0\" }\n");
  r = Policy({"diff", a, zero});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  // Shipped profiles by name; their seccomp differences follow the fields'.
  r = Policy({"diff", "untrusted-code-read", "trusted-code-write"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.out.rfind("- filesystem.workspace: WORKSPACE_RO (A)  vs  WORKSPACE_RW (B)\n", 0),
            0u)
      << r.out;
}

v1::SeccompPolicy Text(const std::string& text) {
  auto p = ParseSeccompPolicy(text, "test");
  EXPECT_TRUE(p) << p.error().Render();
  return p ? *p : v1::SeccompPolicy();
}

TEST(PolicyDiff, EffectiveTreatmentSyscallBySyscall) {
  v1::SeccompPolicy a = Text(
      "default_action: SCMP_ACT_ERRNO\n"
      "syscalls { names: \"read\" names: \"ptrace\" action: SCMP_ACT_ALLOW }\n"
      "syscalls { names: \"kill\" action: SCMP_ACT_ERRNO }\n"  // = the default: a no-op
      "syscalls { names: \"personality\" action: SCMP_ACT_ALLOW\n"
      "  args { index: 0 value: 0 op: SCMP_CMP_EQ } args { index: 0 value: 8 op: SCMP_CMP_EQ } "
      "}\n");
  v1::SeccompPolicy b = Text(
      "default_action: SCMP_ACT_ERRNO default_errno_ret: 38\n"
      "syscalls { names: \"read\" action: SCMP_ACT_ALLOW }\n"
      "syscalls { names: \"ptrace\" names: \"kill\" action: SCMP_ACT_ERRNO errno_ret: 1 }\n"
      "syscalls { names: \"personality\" action: SCMP_ACT_ALLOW\n"
      "  args { index: 0 value: 8 op: SCMP_CMP_EQ } }\n"
      "syscalls { names: \"personality\" action: SCMP_ACT_ALLOW\n"
      "  args { index: 0 value: 0 op: SCMP_CMP_EQ } }\n");
  std::vector<std::string> want = {
      "- personality: ALLOW if arg0 == 0 || arg0 == 8; else ERRNO(EPERM) (A)  vs  "
      "ALLOW if arg0 == 0 || arg0 == 8; else ERRNO(ENOSYS) (B)",
      "- ptrace: ALLOW (A)  vs  ERRNO(EPERM) (B)",
      "- (default): ERRNO(EPERM) (A)  vs  ERRNO(ENOSYS) (B)",
  };
  EXPECT_EQ(DiffPolicies(a, b), want);
  EXPECT_TRUE(DiffPolicies(a, a).empty());
}

// ---- Docker/OCI JSON ---------------------------------------------------------------

TEST(PolicyJson, IncludesAndExcludesAreReadForX86_64WithoutCapabilities) {
  auto p = ParseOciSeccompJson(R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "archMap": [],
    "syscalls": [
      {"names": ["read", "chown32"], "action": "SCMP_ACT_ALLOW", "args": null},
      {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"names": ["bpf"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
       "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW",
       "includes": {"arches": ["amd64", "x32"], "minKernel": "4.8"}},
      {"names": ["breakpoint"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm"]}},
      {"names": ["write"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
      {"name": "close", "action": "SCMP_ACT_ALLOW", "comment": "old Docker form"}
    ]})",
                               "test.json");
  ASSERT_TRUE(p) << p.error().Render();
  std::string got;
  for (const auto& r : p->syscalls()) {
    for (const auto& n : r.names())
      got += n + "=" + ActionText(r.action(), r.has_errno_ret(), r.errno_ret()) + " ";
  }
  EXPECT_EQ(got, "read=ALLOW bpf=ERRNO(EPERM) arch_prctl=ALLOW close=ALLOW ");
  EXPECT_EQ(p->syscalls(3).comment(), "old Docker form");

  auto unknown = ParseOciSeccompJson(
      R"({"syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW",
                        "includes": {"sysctl": ["x"]}}]})",
      "u.json");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().Render(),
            "u.json 'syscalls[0].includes.sysctl': unknown condition (brig understands arches, "
            "caps and minKernel)");
  EXPECT_FALSE(ParseOciSeccompJson("{\"defaultAction\": 12,", "broken.json"));
}

// ---- rows and text -------------------------------------------------------------------

TEST(PolicyExplain, RationaleIsTheCommentBlockAboveTheRule) {
  auto p = ParsePolicyWithRationale(
      "# header, not a rationale\n"
      "\n"
      "default_action: SCMP_ACT_ERRNO\n"
      "# first line,\n"
      "#   indented   second line\n"
      "#\n"
      "syscalls { names: \"write\" names: \"read\" action: SCMP_ACT_ALLOW }\n"
      "syscalls {\n"
      "  names: \"socket\"\n"
      "  action: SCMP_ACT_ERRNO errno_ret: 97\n"
      "  args { index: 0 value: 16 op: SCMP_CMP_EQ }\n"
      "  args { index: 2 value: 0x7E020000 value_two: 0 op: SCMP_CMP_MASKED_EQ }\n"
      "}\n"
      "# kept\n"
      "syscalls { names: \"ioctl\" action: SCMP_ACT_KILL_PROCESS comment: \"explicit\"\n"
      "  args { index: 1 value: 1 op: SCMP_CMP_EQ } args { index: 1 value: 5000 op: SCMP_CMP_GT } "
      "}\n",
      "t");
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_EQ(FormatExplain(*p),
            "SYSCALL  ACTION               CONDITIONS                            RATIONALE\n"
            "ioctl    KILL_PROCESS         arg1 == 1 || arg1 > 0x1388            explicit\n"
            "read     ALLOW                -                                     first line, "
            "indented second line\n"
            "socket   ERRNO(EAFNOSUPPORT)  arg0 == 16 && arg2 & 0x7e020000 == 0\n"
            "write    ALLOW                -                                     first line, "
            "indented second line\n"
            "(default) ERRNO(EPERM) for every syscall not listed\n");
}

// A policy under audit must not be able to hide a row: escape sequences in a rationale
// (cursor up, erase line, carriage return) are shown as spaces, whichever way the rationale
// was written, and bytes that are not UTF-8 still export as JSON that parses back.
TEST(PolicyExplain, ARationaleCannotHideARowOrBreakTheExport) {
  const char* kHide = "\x1b[1A\x1b[2K\r";
  for (const std::string& text :
       {std::string("default_action: SCMP_ACT_ERRNO\n# ok") + kHide + "hidden \xcb\xc1\xad end\n" +
            "syscalls { names: \"ptrace\" action: SCMP_ACT_ALLOW }\n",
        std::string("default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"ptrace\" action: "
                    "SCMP_ACT_ALLOW comment: \"ok\\033[1A\\033[2K\\rhidden \xef\xbf\xbd"
                    "\xef\xbf\xbd\xef\xbf\xbd end\" }\n")}) {
    auto p = ParsePolicyWithRationale(text, "t");
    ASSERT_TRUE(p) << p.error().Render();
    EXPECT_EQ(FormatExplain(*p),
              "SYSCALL  ACTION  CONDITIONS  RATIONALE\n"
              "ptrace   ALLOW   -           ok [1A [2K hidden \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
              "end\n"
              "(default) ERRNO(EPERM) for every syscall not listed\n");
    auto exported = ExportOciJson(*p);
    ASSERT_TRUE(exported);
    auto back = ParseOciSeccompJson(*exported, "exported.json");
    ASSERT_TRUE(back) << back.error().Render();
    EXPECT_EQ(back->syscalls(0).comment(), p->syscalls(0).comment());
  }
  v1::SeccompPolicy json;
  json.set_default_action(v1::SCMP_ACT_ERRNO);
  auto* rule = json.add_syscalls();
  rule->add_names("ptrace");
  rule->set_action(v1::SCMP_ACT_ALLOW);
  rule->set_comment(std::string("ok") + kHide + "hidden");
  EXPECT_EQ(FormatExplain(json),
            "SYSCALL  ACTION  CONDITIONS  RATIONALE\n"
            "ptrace   ALLOW   -           ok [1A [2K hidden\n"
            "(default) ERRNO(EPERM) for every syscall not listed\n");
}

// The text format reads "\313" in a string as the byte 0xcb: a policy or profile whose
// strings are not UTF-8 is refused by field, whichever way the bytes were written.
TEST(PolicyParse, AStringThatIsNotUtf8IsRefusedByField) {
  for (const std::string& flags : {std::string("\\313"), std::string("\xcb")}) {
    auto p = ParsePolicyWithRationale(
        "default_action: SCMP_ACT_ERRNO\nflags: \"" + flags + "\"\n"
        "syscalls { names: \"read\" action: SCMP_ACT_ALLOW comment: \"ok\" }\n", "t");
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().Render(), "t: field 'flags[0]' is not UTF-8 text");
    auto q = ParsePolicyWithRationale(
        "default_action: SCMP_ACT_ERRNO\n"
        "syscalls { names: \"read\" action: SCMP_ACT_ALLOW comment: \"" + flags + "\" }\n", "t");
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().Render(), "t: field 'syscalls[0].comment' is not UTF-8 text");
  }
}

TEST(PolicyExplain, ActionsAndConditions) {
  EXPECT_EQ(ActionText(v1::SCMP_ACT_ERRNO, false, 0), "ERRNO(EPERM)");
  EXPECT_EQ(ActionText(v1::SCMP_ACT_ERRNO, true, 38), "ERRNO(ENOSYS)");
  EXPECT_EQ(ActionText(v1::SCMP_ACT_ERRNO, true, 4000), "ERRNO(4000)");
  EXPECT_EQ(ActionText(v1::SCMP_ACT_KILL, false, 0), "KILL_THREAD");
  EXPECT_EQ(ActionText(v1::SCMP_ACT_TRACE, true, 7), "TRACE(7)");
  v1::SeccompArg a;
  a.set_index(3);
  a.set_op(v1::SCMP_CMP_NE);
  a.set_value(0xffffffff);
  EXPECT_EQ(ConditionText(a), "arg3 != 0xffffffff");
  a.set_op(v1::SCMP_CMP_LE);
  a.set_value(97);
  EXPECT_EQ(ConditionText(a), "arg3 <= 97");
}

// ---- the verb ----------------------------------------------------------------------

TEST(PolicyVerb, UsageAndRefusals) {
  auto r = Policy({"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("Usage: brig policy", 0), 0u);
  r = Capture([] { return cli::PolicyMain({}); });
  EXPECT_EQ(r.rc, brig::kExitRefused);
  EXPECT_EQ(r.err.rfind("Usage: brig policy", 0), 0u);
  struct Case {
    std::vector<std::string> args;
    std::string err;
  } cases[] = {
      {{"frobnicate"},
       "brig: brig policy 'frobnicate': unknown command (see brig policy --help)\n"},
      {{"list", "--verbose"},
       "brig: brig policy '--verbose': unknown option (see brig policy --help)\n"},
      {{"explain", "default", "--format", "pfc"},
       "brig: --format: applies only to brig policy export\n"},
      {{"export", "default", "--format", "yaml"},
       "brig: --format 'yaml': expected oci-json, bpf or pfc\n"},
      {{"diff", "default"}, "brig: brig policy diff: expected A B, got 1 argument\n"},
      {{"show"}, "brig: brig policy show: expected PROFILE, got 0 arguments\n"},
      {{"explain", "none"},
       "brig: profile '" + kPolicyDir +
           "/profiles/none.textproto': ISOLATION_NONE: no sandbox, so no "
           "seccomp policy\n"},
  };
  for (const auto& c : cases) {
    r = Policy(c.args);
    EXPECT_EQ(r.rc, brig::kExitRefused) << c.args[0];
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
  r = Policy({"explain", "no-such-policy"});
  EXPECT_EQ(r.rc, brig::kExitRefused);
  EXPECT_EQ(
      r.err.rfind("brig: policy 'no-such-policy': no seccomp policy or profile of that name", 0),
      0u)
      << r.err;
}

}  // namespace
}  // namespace brig::security
