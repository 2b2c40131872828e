// `brig run` flag parsing and the exit-code mapping of the output contract.
#include <gtest/gtest.h>

#include "cli/cli.h"

namespace brig::cli {
namespace {

Result<RunRequest> Parse(std::vector<std::string> args) { return ParseRunArgs(args); }

TEST(RunFlags, ParsesOptionsAndCommand) {
  auto r = Parse({"--workspace", "/w", "--workspace-mode=rw", "--tmp-size", "64M", "--timeout",
                  "5s", "--env", "A=1", "--pass-env", "TERM", "--rlimit", "nofile=10", "--",
                  "sh", "-c", "echo hi"});
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->sandbox.workspace, "/w");
  EXPECT_EQ(r->sandbox.workspace_mode, config::WorkspaceMode::kReadWrite);
  EXPECT_EQ(r->sandbox.tmp_size, 64u << 20);
  EXPECT_EQ(r->sandbox.timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(r->sandbox.rlimits.nofile, 10u);
  EXPECT_EQ(r->set_env, std::vector<std::string>{"A=1"});
  EXPECT_EQ(r->pass_env, std::vector<std::string>{"TERM"});
  EXPECT_EQ(r->sandbox.argv, (std::vector<std::string>{"sh", "-c", "echo hi"}));
}

TEST(RunFlags, CommandWithoutDashDash) {
  auto r = Parse({"--timeout", "1m", "true", "--not-a-brig-flag"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sandbox.argv, (std::vector<std::string>{"true", "--not-a-brig-flag"}));
}

TEST(RunFlags, DefaultsAreSafe) {
  auto r = Parse({"true"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sandbox.workspace_mode, config::WorkspaceMode::kReadOnly);
  EXPECT_EQ(r->sandbox.timeout, std::chrono::minutes(30));
  EXPECT_EQ(r->sandbox.rlimits.core, 0u);
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(RunFlags, BadInputNamesTheProblem) {
  const BadCase cases[] = {
      {{"--bogus", "true"}, "brig run '--bogus': unknown option"},
      {{"--timeout", "5x", "true"}, "--timeout '5x': unknown unit 'x'"},
      {{"--tmp-size", "lots", "true"}, "--tmp-size 'lots'"},
      {{"--workspace-mode", "wx", "true"}, "--workspace-mode 'wx': expected ro or rw"},
      {{"--env", "NOEQUALS", "true"}, "--env 'NOEQUALS'"},
      {{"--rlimit", "stack=1", "true"}, "unknown limit 'stack'"},
      {{"--timeout"}, "--timeout: needs a value"},
      {{"--"}, "no command given"},
      {{}, "no command given"},
      {{"--", ""}, "no command given"},
      {{"--help=yes"}, "takes no value"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.args);
    ASSERT_FALSE(r) << c.message;
    EXPECT_NE(r.error().Render().find(c.message), std::string::npos)
        << "got: " << r.error().Render();
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(ExitCodeFor(r.error().kind), 125);
  }
}

TEST(RunFlags, EnvironmentIsBuiltFromNothing) {
  auto r = Parse({"--pass-env", "BRIG_T_SET", "--pass-env", "BRIG_T_UNSET", "--env",
                  "LANG=fr_FR.UTF-8", "true"});
  ASSERT_TRUE(r);
  std::string secret = "BRIG_T_SECRET=hunter2", set = "BRIG_T_SET=yes";
  char* host_env[] = {secret.data(), set.data(), nullptr};
  r->policy_dir = std::string(BRIG_SOURCE_POLICY_DIR);
  ASSERT_TRUE(ResolveRun(*r, host_env));
  const auto& env = r->sandbox.env;
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has("BRIG_T_SET=yes"));
  EXPECT_TRUE(has("LANG=fr_FR.UTF-8"));
  EXPECT_TRUE(has("HOME=/tmp"));
  for (const auto& kv : env) {
    EXPECT_EQ(kv.find("SECRET"), std::string::npos) << kv;
    EXPECT_EQ(kv.find("UNSET"), std::string::npos) << kv;
  }
  EXPECT_EQ(r->sandbox.id.rfind("brig-", 0), 0u);
}

TEST(ExitCodes, FollowTheOutputContract) {
  EXPECT_EQ(ExitCodeFor(ErrorKind::kNotFound), 127);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kNotExecutable), 126);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kSetup), 125);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kPolicy), 125);
  EXPECT_EQ(ErrorCodeFor(ErrorKind::kNotFound), "not_found");
  EXPECT_EQ(ErrorCodeFor(ErrorKind::kNotExecutable), "not_executable");
  EXPECT_EQ(ErrorCodeFor(ErrorKind::kPolicy), "policy_denied");
  EXPECT_EQ(ErrorCodeFor(ErrorKind::kBadInput), "setup_failed");
  EXPECT_EQ(ErrorCodeFor(ErrorKind::kInternal), "internal");
}

}  // namespace
}  // namespace brig::cli
