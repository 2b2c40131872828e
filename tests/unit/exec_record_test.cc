// What a running sandbox's record says for brig exec (container/exec_record.h): the lines
// a session writes read back as what exec joins with, and the sandbox a name or id picks.
#include "container/exec_record.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>

namespace brig::container {
namespace {

state::LiveRecord Recorded(const std::string& id, const AboutLines& lines) {
  state::LiveRecord rec;
  rec.id = id;
  for (const auto& [key, value] : lines)
    rec.entries.push_back({state::kAboutKind, key + "=" + value});
  return rec;
}

config::Sandbox Confined() {
  config::Sandbox sb;
  sb.workdir = "/workspace/sub";
  sb.audit_path = "logs/audit.log";
  sb.seccomp_policy = "/usr/share/brig/policies/seccomp/default.textproto";
  sb.rlimits.nofile = 1024;
  sb.rlimits.nproc = 512;
  return sb;
}

TEST(ExecRecord, WhatASessionWritesReadsBackAsItWas) {
  security::SeccompProgram p;
  p.flags = 3;
  p.insns = {{0x20, 0, 0, 4}, {0x15, 1, 0, 0xc000003e}, {0x06, 0, 0, 0x7fff0000}};
  AboutLines lines = ExecAbout(Confined(), p, "/home/h");
  lines.push_back({"name", "task-7"});
  lines.push_back({"pid", "4242"});
  lines.push_back(InitStartAbout(987654));
  state::LiveRecord rec = Recorded("brig-task-7-0123456789ab", lines);
  rec.entries.push_back({"cgroup", "/sys/fs/cgroup/unified/brig-task-7-0123456789ab"});
  auto r = ReadExecRecord(rec);
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->name, "task-7");
  EXPECT_EQ(r->init_pid, 4242);
  EXPECT_EQ(r->init_start, 987654u);
  EXPECT_EQ(r->uid, config::kSandboxUid);
  EXPECT_EQ(r->gid, config::kSandboxGid);
  EXPECT_EQ(r->workdir, "/workspace/sub");
  EXPECT_EQ(r->audit_path, "/home/h/logs/audit.log");
  EXPECT_EQ(r->seccomp.flags, 3u);
  ASSERT_EQ(r->seccomp.insns.size(), 3u);
  EXPECT_EQ(memcmp(r->seccomp.insns.data(), p.insns.data(), 3 * sizeof(sock_filter)), 0);
  ASSERT_EQ(r->rlimits.size(), 5u);
  EXPECT_EQ(r->rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(r->rlimits[0].soft, 1024u);
  EXPECT_EQ(r->rlimits[1].hard, 512u);
  EXPECT_EQ(r->cgroups,
            std::vector<std::string>{"/sys/fs/cgroup/unified/brig-task-7-0123456789ab"});
}

TEST(ExecRecord, ASandboxWithoutIsolationOrNotStartedIsRefused) {
  state::LiveRecord unconfined = Recorded("brig-0123456789ab", {{"pid", "4242"}});
  auto r = ReadExecRecord(unconfined);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  AboutLines lines = ExecAbout(Confined(), security::SeccompProgram{{{6, 0, 0, 0}}, 0, ""}, "/");
  EXPECT_FALSE(ReadExecRecord(Recorded("brig-0123456789ab", lines)));  // no pid yet
  lines.push_back({"seccomp_program", "0:zz"});
  lines.push_back({"pid", "1"});
  lines.push_back(InitStartAbout(1));
  EXPECT_EQ(ReadExecRecord(Recorded("brig-0123456789ab", lines)).error().kind,
            ErrorKind::kInternal);
}

TEST(ExecRecord, AnIdComesFirstAndANameTwoShareIsRefusedNamingBoth) {
  std::vector<state::LiveRecord> live = {
      Recorded("brig-a-000000000001", {{"name", "a"}}),
      Recorded("brig-a-000000000002", {{"name", "a"}}),
      Recorded("brig-b-000000000003", {{"name", "b"}}),
      Recorded("brig-x-000000000004", {{"name", "brig-b-000000000003"}})};
  auto b = FindSandbox(live, "b");
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)->id, "brig-b-000000000003");
  auto by_id = FindSandbox(live, "brig-b-000000000003");
  ASSERT_TRUE(by_id);
  EXPECT_EQ((*by_id)->id, "brig-b-000000000003");
  auto a = FindSandbox(live, "a");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(a.error().Render().find("brig-a-000000000001, brig-a-000000000002"), std::string::npos)
      << a.error().Render();
  EXPECT_FALSE(FindSandbox(live, "c"));
  EXPECT_TRUE(Matching(live, "c").empty());
  EXPECT_EQ(Matching(live, "a").size(), 2u);
}

}  // namespace
}  // namespace brig::container
