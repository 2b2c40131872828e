// Seccomp policies: text-format parsing with positions, validation, compilation to BPF
// (no load), and the OCI JSON form parsing into the same message.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "security/seccomp.h"

namespace brig::security {
namespace {

TEST(SeccompPolicy, ShippedDefaultCompiles) {
  auto p = LoadSeccompPolicyFile(std::string(BRIG_SOURCE_POLICY_DIR) + "/seccomp/default.textproto");
  ASSERT_TRUE(p) << p.error().Render();
  auto prog = CompileSeccomp(*p);
  ASSERT_TRUE(prog) << prog.error().Render();
  EXPECT_GT(prog->insns.size(), 4u);
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

}  // namespace
}  // namespace brig::security
