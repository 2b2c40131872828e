// Seccomp policies: text-format parsing with positions, validation, compilation to BPF
// (no load), and the OCI JSON form parsing into the same message.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <linux/seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "security/init_filter.h"
#include "security/seccomp.h"
#include "security/seccomp_cache.h"
#include "testlib/testlib.h"
#include "util/files.h"

namespace brig::security {
namespace {

using brig::testing::PathsIn;
using brig::testing::ScratchDir;

const std::string kDefaultPolicy =
    std::string(BRIG_SOURCE_POLICY_DIR) + "/seccomp/default.textproto";

TEST(SeccompPolicy, ShippedDefaultCompiles) {
  auto text = util::ReadFile(kDefaultPolicy);
  ASSERT_TRUE(text);
  auto p = ParseSeccompPolicy(*text, kDefaultPolicy);
  ASSERT_TRUE(p) << p.error().Render();
  auto prog = CompileSeccomp(*p);
  ASSERT_TRUE(prog) << prog.error().Render();
  EXPECT_GT(prog->insns.size(), 4u);
}

class SeccompCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "cache entries are trusted only when owned by root";
  }
  void WritePolicy(const std::string& text) { ASSERT_TRUE(util::WriteFileAtomic(policy_, text)); }
  std::vector<std::string> Entries() { return PathsIn(cache_); }
  ScratchDir dir_;
  std::string cache_ = dir_.path() + "/cache", policy_ = dir_.path() + "/p.textproto";
};

bool SameProgram(const SeccompProgram& a, const SeccompProgram& b) {
  return a.flags == b.flags && a.insns.size() == b.insns.size() &&
         memcmp(a.insns.data(), b.insns.data(), a.insns.size() * sizeof(sock_filter)) == 0;
}

TEST_F(SeccompCache, SecondCompileComesFromTheCacheAndMatches) {
  WritePolicy("default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"read\" action: SCMP_ACT_ALLOW }\n");
  auto first = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(first) << first.error().Render();
  ASSERT_EQ(Entries().size(), 1u);
  struct stat st;
  ASSERT_EQ(stat(cache_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(Entries().at(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(second);
  EXPECT_TRUE(SameProgram(*first, *second));
}

TEST_F(SeccompCache, AnEntryIsUsedOnlyForTheExactText) {
  WritePolicy("default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"read\" action: SCMP_ACT_ALLOW }\n");
  auto narrow = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(narrow);
  std::string entry = Entries().at(0);
  // Plant the narrow policy's entry under the name a different policy would use: the
  // text check must refuse it, whatever the file name says.
  WritePolicy("default_action: SCMP_ACT_ALLOW\n");
  auto fresh = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(fresh);
  for (const auto& e : Entries()) {
    if (e != entry) {
      ASSERT_EQ(rename(entry.c_str(), e.c_str()), 0);
    }
  }
  auto again = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(again);
  EXPECT_TRUE(SameProgram(*fresh, *again));
  EXPECT_FALSE(SameProgram(*narrow, *again));
}

TEST_F(SeccompCache, EntriesOthersCouldWriteAreIgnored) {
  WritePolicy("default_action: SCMP_ACT_ALLOW\n");
  auto real = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(real);
  std::string entry = Entries().at(0);
  // A forged entry for the same text, with a different program, made group-writable.
  std::string bytes = util::ReadFile(entry).value();
  bytes[bytes.size() - 1] ^= 0x7f;
  ASSERT_TRUE(util::WriteFileAtomic(entry, bytes));
  ASSERT_EQ(chmod(entry.c_str(), 0666), 0);
  auto got = CompileSeccompFile(policy_, cache_);
  ASSERT_TRUE(got);
  EXPECT_TRUE(SameProgram(*real, *got));
}

TEST_F(SeccompCache, BadPolicyIsNotCached) {
  WritePolicy("default_action: SCMP_ACT_ERRNO\nsyscalls {\n");
  EXPECT_FALSE(CompileSeccompFile(policy_, cache_));
  EXPECT_TRUE(Entries().empty());
}

TEST_F(SeccompCache, APolicyMessageIsCompiledOncePerPolicy) {
  v1::SeccompPolicy narrow = ParseSeccompPolicy(
      "default_action: SCMP_ACT_ERRNO\nsyscalls { names: \"read\" action: SCMP_ACT_ALLOW }\n",
      "narrow").value();
  v1::SeccompPolicy wide = ParseSeccompPolicy("default_action: SCMP_ACT_ALLOW\n", "wide").value();
  int compiles = 0;
  auto compile = [&](const v1::SeccompPolicy& p) {
    ++compiles;
    return CompileSeccomp(p);
  };
  auto first = CompileSeccompCached(narrow, cache_, "test", compile);
  ASSERT_TRUE(first) << first.error().Render();
  auto second = CompileSeccompCached(narrow, cache_, "test", compile);
  ASSERT_TRUE(second);
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(SameProgram(*first, *second));
  // Another policy is compiled, and gets its own program, not the cached one.
  auto other = CompileSeccompCached(wide, cache_, "test", compile);
  ASSERT_TRUE(other);
  EXPECT_EQ(compiles, 2);
  EXPECT_FALSE(SameProgram(*first, *other));
  EXPECT_EQ(Entries().size(), 2u);
}

TEST_F(SeccompCache, AFileIsNeverGivenAMessagesEntry) {
  // A policy file holding exactly the bytes of a serialized policy message, whose entry is
  // in the cache: the file is read as text (and refused), not given the message's program.
  v1::SeccompPolicy allow = ParseSeccompPolicy("default_action: SCMP_ACT_ALLOW\n", "a").value();
  ASSERT_TRUE(CompileSeccompCached(allow, cache_, "test", CompileSeccomp));
  std::string bytes;
  ASSERT_TRUE(allow.SerializeToString(&bytes));
  WritePolicy(bytes);
  EXPECT_FALSE(CompileSeccompFile(policy_, cache_));
}

TEST(SeccompPolicy, ParseErrorsNameFileLineColumn) {
  auto p = ParseSeccompPolicy("default_action: SCMP_ACT_ERRNO\n  bogus_field: 1\n", "p.textproto");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().Render().find("p.textproto:2:"), std::string::npos) << p.error().Render();
  EXPECT_NE(p.error().Render().find("bogus_field"), std::string::npos);
  auto q = ParseSeccompPolicy("default_action: SCMP_ACT_NOPE\n", "q.textproto");
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().Render().rfind("q.textproto:", 0), 0u) << q.error().Render();
  EXPECT_NE(q.error().Render().find("SCMP_ACT_NOPE"), std::string::npos);
}

TEST(SeccompPolicy, UnknownSyscallIsRefused) {
  auto p = ParseSeccompPolicy(R"(default_action: SCMP_ACT_ERRNO
syscalls { names: "read" names: "no_such_syscall" action: SCMP_ACT_ALLOW })",
                              "t");
  ASSERT_TRUE(p);
  auto prog = CompileSeccomp(*p);
  ASSERT_FALSE(prog);
  EXPECT_NE(prog.error().Render().find("no_such_syscall"), std::string::npos);
}

TEST(SeccompPolicy, MissingDefaultActionIsRefused) {
  auto p = ParseSeccompPolicy("syscalls { names: \"read\" action: SCMP_ACT_ALLOW }", "t");
  ASSERT_TRUE(p);
  EXPECT_FALSE(CompileSeccomp(*p));
}

TEST(SeccompPolicy, ErrnoOutOfRangeIsRefused) {
  auto p = ParseSeccompPolicy(
      "default_action: SCMP_ACT_ALLOW\n"
      "syscalls { names: \"read\" action: SCMP_ACT_ERRNO errno_ret: 5000 }",
      "t");
  ASSERT_TRUE(p);
  EXPECT_FALSE(CompileSeccomp(*p));
}

TEST(SeccompPolicy, RuleRepeatingTheDefaultActionIsHarmless) {
  auto p = ParseSeccompPolicy(R"(default_action: SCMP_ACT_ERRNO
syscalls { names: "bdflush" action: SCMP_ACT_ERRNO }
syscalls { names: "read" action: SCMP_ACT_ALLOW })",
                              "t");
  ASSERT_TRUE(p);
  auto prog = CompileSeccomp(*p);
  EXPECT_TRUE(prog) << prog.error().Render();
}

// libseccomp keeps only the unconditional rule when a syscall also has a conditional rule
// with another action: "allow ioctl; deny TIOCSTI" would allow TIOCSTI. brig refuses it.
TEST(SeccompPolicy, ShadowedConditionalRuleIsRefused) {
  for (const char* order : {"allow-first", "deny-first"}) {
    std::string allow = "syscalls { names: \"ioctl\" action: SCMP_ACT_ALLOW }\n";
    std::string deny =
        "syscalls { names: \"ioctl\" action: SCMP_ACT_ERRNO errno_ret: 1\n"
        "  args { index: 1 value: 4294967295 value_two: 21522 op: SCMP_CMP_MASKED_EQ } }\n";
    std::string text = "default_action: SCMP_ACT_KILL_PROCESS\n" +
                       (std::string(order) == "allow-first" ? allow + deny : deny + allow);
    auto p = ParseSeccompPolicy(text, "t");
    ASSERT_TRUE(p) << p.error().Render();
    auto prog = CompileSeccomp(*p);
    ASSERT_FALSE(prog) << order;
    EXPECT_NE(prog.error().Render().find("'ioctl'"), std::string::npos) << prog.error().Render();
  }
  // The same with the deny spelled as the default action, which libseccomp would skip.
  auto d = ParseSeccompPolicy(
      "default_action: SCMP_ACT_ERRNO\n"
      "syscalls { names: \"ioctl\" action: SCMP_ACT_ALLOW }\n"
      "syscalls { names: \"ioctl\" action: SCMP_ACT_ERRNO\n"
      "  args { index: 1 value: 4294967295 value_two: 21522 op: SCMP_CMP_MASKED_EQ } }\n",
      "t");
  ASSERT_TRUE(d);
  EXPECT_FALSE(CompileSeccomp(*d)) << "allow ioctl + EPERM(TIOCSTI) compiled to allow-all";
  // Two unconditional rules with different actions are just as ambiguous.
  auto q = ParseSeccompPolicy(
      "default_action: SCMP_ACT_ERRNO\n"
      "syscalls { names: \"read\" action: SCMP_ACT_ALLOW }\n"
      "syscalls { names: \"read\" action: SCMP_ACT_LOG }\n",
      "t");
  ASSERT_TRUE(q);
  EXPECT_FALSE(CompileSeccomp(*q));
}

// Two rules that give the same arguments different actions contradict each other on the
// native architecture, and are refused (libseccomp's EEXIST, named). Where only a foreign
// ABI cannot tell two rules apart (x86's socketcall), the policy compiles: the host tier's
// Oci.PodmansRootlessSocketRulesCompileAndHoldOnTheNativeArchitecture loads it.
TEST(SeccompPolicy, RulesThatContradictEachOtherAreRefused) {
  auto p = ParseSeccompPolicy(R"(default_action: SCMP_ACT_ERRNO
syscalls { names: "socket" action: SCMP_ACT_ALLOW args { index: 0 value: 1 op: SCMP_CMP_EQ } }
syscalls { names: "socket" action: SCMP_ACT_LOG args { index: 0 value: 1 op: SCMP_CMP_EQ } })",
                              "t");
  ASSERT_TRUE(p) << p.error().Render();
  auto prog = CompileSeccomp(*p);
  ASSERT_FALSE(prog);
  EXPECT_EQ(prog.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(prog.error().Render().find("'socket'"), std::string::npos) << prog.error().Render();
  EXPECT_NE(prog.error().Render().find("different actions"), std::string::npos)
      << prog.error().Render();
}

TEST(SeccompPolicy, ArgumentFiltersCompile) {
  auto p = ParseSeccompPolicy(R"(default_action: SCMP_ACT_ERRNO
architectures: SCMP_ARCH_X86_64
syscalls {
  names: "clone"
  action: SCMP_ACT_ALLOW
  args { index: 0 value: 2114060288 value_two: 0 op: SCMP_CMP_MASKED_EQ }
}
syscalls {
  names: "socket"
  action: SCMP_ACT_ALLOW
  args { index: 0 value: 1 op: SCMP_CMP_EQ }
  args { index: 0 value: 2 op: SCMP_CMP_EQ }
})",
                              "t");
  ASSERT_TRUE(p) << p.error().Render();
  auto prog = CompileSeccomp(*p);
  ASSERT_TRUE(prog) << prog.error().Render();
}

TEST(SeccompPolicy, OciJsonParsesIntoTheSameMessage) {
  const char* json = R"({
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "architectures": ["SCMP_ARCH_X86_64"],
    "syscalls": [
      {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
      {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 0, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}
    ]
  })";
  v1::SeccompPolicy p;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &p).ok());
  EXPECT_EQ(p.default_action(), v1::SeccompAction::SCMP_ACT_ERRNO);
  EXPECT_EQ(p.default_errno_ret(), 1u);
  ASSERT_EQ(p.syscalls_size(), 3);
  EXPECT_EQ(p.syscalls(1).errno_ret(), 38u);
  EXPECT_EQ(p.syscalls(2).args(0).op(), v1::SeccompOp::SCMP_CMP_EQ);
  EXPECT_TRUE(CompileSeccomp(p));
}

// SCMP_ACT_NOTIFY: only where an agent is named (an OCI container's listenerPath), never as
// the default, never for the sendmsg(2) the process hands its listener over with; a policy
// file names no agent. A rule that notifies makes the filter's listener.
TEST(SeccompPolicy, NotifyNeedsAnAgentAndNeverStopsTheHandOver) {
  auto oci = [](const std::string& json) {
    v1::SeccompPolicy p;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &p).ok()) << json;
    return p;
  };
  auto notify = oci(R"({"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/agent.sock",)"
                    R"("listenerMetadata":"m","syscalls":[{"names":["mkdir","mkdirat"],)"
                    R"("action":"SCMP_ACT_NOTIFY"}]})");
  EXPECT_EQ(notify.listener_path(), "/run/agent.sock");
  EXPECT_EQ(notify.listener_metadata(), "m");
  auto prog = CompileSeccomp(notify);
  ASSERT_TRUE(prog) << prog.error().Render();
  EXPECT_TRUE(HasListener(*prog));
  EXPECT_TRUE(ExportPfc(notify));

  auto no_rule = notify;
  no_rule.clear_syscalls();
  auto quiet = CompileSeccomp(no_rule);
  ASSERT_TRUE(quiet) << quiet.error().Render();
  EXPECT_FALSE(HasListener(*quiet)) << "a listener nobody is notified through";

  auto no_agent = notify;
  no_agent.clear_listener_path();
  auto refused = CompileSeccomp(no_agent);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().Render().find("listenerPath"), std::string::npos)
      << refused.error().Render();

  auto as_default = oci(R"({"defaultAction":"SCMP_ACT_NOTIFY","listenerPath":"/a"})");
  auto d = CompileSeccomp(as_default);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().Render().find("cannot be used as default action"), std::string::npos);

  auto hand_over = oci(R"({"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/a",)"
                       R"("syscalls":[{"names":["sendmsg"],"action":"SCMP_ACT_NOTIFY"}]})");
  auto h = CompileSeccomp(hand_over);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().Render().find("cannot be used for the sendmsg syscall"), std::string::npos)
      << h.error().Render();
  EXPECT_FALSE(ExportPfc(hand_over)) << "policy export must refuse what a run refuses";

  auto file = ParseSeccompPolicy(R"(default_action: SCMP_ACT_ALLOW
listener_path: "/a"
syscalls { names: "mkdir" action: SCMP_ACT_NOTIFY })",
                                 "f.textproto");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().Render().find("listener_path"), std::string::npos)
      << file.error().Render();
}

// runc's ENOSYS stub before an OCI policy whose default refuses: six instructions that
// load the architecture first, and none where the default allows or already says ENOSYS.
TEST(SeccompPolicy, AnOciPolicyThatRefusesGetsTheEnosysStub) {
  auto oci = [](const std::string& json) {
    v1::SeccompPolicy p;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &p).ok()) << json;
    return p;
  };
  auto refusing =
      oci(R"({"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],)"
          R"("syscalls":[{"names":["read","write","clone3"],"action":"SCMP_ACT_ALLOW"}]})");
  auto plain = CompileSeccomp(refusing);
  auto stubbed = CompileOciSeccomp(refusing);
  ASSERT_TRUE(plain && stubbed);
  ASSERT_EQ(stubbed->insns.size(), plain->insns.size() + 6);
  EXPECT_EQ(stubbed->insns[0].k, offsetof(struct seccomp_data, arch));
  EXPECT_EQ(stubbed->insns[4].k, 435u) << "clone3, the last the policy names";
  EXPECT_EQ(stubbed->insns[5].k, static_cast<uint32_t>(SECCOMP_RET_ERRNO | ENOSYS));
  EXPECT_EQ(memcmp(stubbed->insns.data() + 6, plain->insns.data(),
                   plain->insns.size() * sizeof(sock_filter)),
            0)
      << "the policy's own program follows unchanged";
  for (
      const char* quiet :
      {R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO"}]})",
       R"({"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,"syscalls":[{"names":["read"],)"
       R"("action":"SCMP_ACT_ALLOW"}]})"}) {
    auto p = oci(quiet);
    auto a = CompileSeccomp(p), b = CompileOciSeccomp(p);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->insns.size(), b->insns.size()) << quiet;
  }
}

// brig init's own filter: it compiles, kills on anything outside its list, and its list
// is the few calls of init's loop, each with its reason.
TEST(InitFilter, CompilesKillsByDefaultAndSaysWhyForEachCall) {
  v1::SeccompPolicy policy = InitFilterPolicy();
  EXPECT_EQ(policy.default_action(), v1::SCMP_ACT_KILL_PROCESS);
  std::vector<std::string> names;
  for (const auto& rule : policy.syscalls()) {
    EXPECT_EQ(rule.action(), v1::SCMP_ACT_ALLOW);
    EXPECT_FALSE(rule.comment().empty()) << rule.names(0);
    for (const auto& n : rule.names()) names.push_back(n);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"read", "close", "wait4", "kill", "sendmsg",
                                             "exit_group", "brk", "munmap"}));
  auto prog = CompileInitFilter("");
  ASSERT_TRUE(prog) << prog.error().Render();
  EXPECT_GT(prog->insns.size(), 4u);
  auto pfc = ExportPfc(policy);
  ASSERT_TRUE(pfc) << pfc.error().Render();
  EXPECT_NE(pfc->find("KILL_PROCESS"), std::string::npos) << *pfc;
}

}  // namespace
}  // namespace brig::security
