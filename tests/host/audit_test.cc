// The audit log is written by the host side only (design.md, Invariant 5): one JSON line an
// event, and nothing inside the sandbox can reach, forge or truncate it.
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "proto/brig.pb.h"
#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Audit : public HostTest {};


TEST_F(Audit, StartAndExitAreRecorded) {
  ScratchDir out;
  std::string log = out.path() + "/audit.jsonl";
  auto r = Sh("exit 7", {"--audit-log", log});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  auto events = ReadAuditEvents(log);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].has_sandbox_start());
  EXPECT_EQ(events[0].sandbox_start().profile(), "untrusted-code-read");
  EXPECT_TRUE(events[0].sandbox_start().isolated());
  EXPECT_TRUE(events[1].has_sandbox_exit());
  EXPECT_EQ(events[1].sandbox_exit().exit_code(), 7);
  EXPECT_EQ(events[0].sandbox_id(), events[1].sandbox_id());
  EXPECT_EQ(events[0].sandbox_id().rfind("brig-", 0), 0u);
  EXPECT_GT(events[0].time().seconds(), 0);
  struct stat st;
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Appended, never truncated: a second run adds two lines.
  Sh("true", {"--audit-log", log});
  EXPECT_EQ(ReadAuditEvents(log).size(), 4u);
}

TEST_F(Audit, TheLimitsAppliedAreRecorded) {
  ScratchDir out;
  std::string log = out.path() + "/audit.jsonl";
  auto r = Sh("true", {"--audit-log", log, "--memory", "64M", "--pids", "50", "--cpus", "1.5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto events = ReadAuditEvents(log);
  ASSERT_EQ(events.size(), 2u);
  const auto& s = events[0].sandbox_start();
  EXPECT_EQ(s.memory_bytes(), 64u << 20);
  EXPECT_EQ(s.swap_bytes(), 0u);
  EXPECT_EQ(s.pids(), 50u);
  EXPECT_EQ(s.cpus(), "1.5");
}

TEST_F(Audit, NoneProfileIsAuditedToo) {
  ScratchDir out;
  std::string log = out.path() + "/audit.jsonl";
  auto r = RunBrig({"run", "--profile", "none", "--audit-log", log, "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto events = ReadAuditEvents(log);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].sandbox_start().isolated());
}

TEST_F(Audit, OutputsInsideTheWorkspaceAreRefused) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ASSERT_EQ(mkdir((ws.path() + "/sub").c_str(), 0755), 0);
  for (const char* flag : {"--audit-log", "--result"}) {
    auto r = RunBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(), flag,
                      ws.path() + "/sub/out.json", "--", "touch", "/workspace/ran"});
    EXPECT_EQ(r.exit_code, 125) << flag;
    EXPECT_NE(r.err.find("inside the workspace"), std::string::npos) << r.err;
    EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0);
  }
}

TEST_F(Audit, APlantedSymlinkIsNotFollowed) {
  ScratchDir out;
  std::string victim = out.Write("victim", "precious\n");
  std::string log = out.path() + "/audit.jsonl";
  ASSERT_EQ(symlink(victim.c_str(), log.c_str()), 0);
  auto r = Sh("true", {"--audit-log", log});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(ReadFileOrEmpty(victim), "precious\n");
}

}  // namespace
}  // namespace brig::testing
