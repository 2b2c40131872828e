// The host tier's residue check (testlib.h's Residue) on a shared host: what a test's own
// sandbox leaves is named, what other work on the host makes meanwhile (another brig's
// groups and records, a tool's empty brig-* parent) is not the test's (issue 27, item 8).
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <fstream>
#include <string>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The cgroup2 hierarchy: /sys/fs/cgroup on a pure v2 host, else a hybrid host's unified.
std::string V2Mount() {
  struct statfs fs;
  if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
    return "/sys/fs/cgroup";
  }
  return "/sys/fs/cgroup/unified";
}

class Residues : public HostTest {
 protected:
  ScratchDir out_;
};

TEST_F(Residues, WhatTheTestsOwnSandboxLeavesIsNamed) {
  Residue before = TakeResidue();
  std::string marker = "sleep " + std::to_string(4000000 + getpid());
  pid_t pid = SpawnBrig({"run", "--memory", "64M", "--", "sh", "-c", marker}, out_.path());
  ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }))
      << ReadFileOrEmpty(out_.path() + "/stderr");
  std::string running = DiffResidue(before, TakeResidue());
  EXPECT_TRUE(Has(running, "process left: brig-init pid ")) << running;
  EXPECT_TRUE(Has(running, "cgroup left: ")) << running;
  EXPECT_TRUE(Has(running, "sandbox record left: /run/brig/sandboxes/brig-")) << running;

  // Killed, brig leaves its record and groups for brig gc: still the test's, by the brig_pid
  // the record notes, though nothing holds the record's lock any more.
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);
  SettleUntilGone("brig-init");
  std::string left = DiffResidue(before, TakeResidue());
  EXPECT_FALSE(Has(left, "process left")) << left;
  EXPECT_TRUE(Has(left, "cgroup left: ")) << left;
  EXPECT_TRUE(Has(left, "sandbox record left: /run/brig/sandboxes/brig-")) << left;

  RunBrig({"gc"});
  EXPECT_EQ(DiffResidue(before, TakeResidue()), "") << "brig gc left the test's own residue";
}

TEST_F(Residues, WhatOtherWorkOnTheHostMakesIsNotTheTests) {
  Residue before = TakeResidue();
  // Another brig's sandbox, whose brig is gone (pid 1 was never one this test spawned): its
  // record and group; and an empty parent group as tools/bench or the engine tier makes.
  std::string id = "brig-residue" + std::to_string(getpid());
  std::string group = V2Mount() + "/" + id;
  std::string parent = V2Mount() + "/brig-residue-parent-" + std::to_string(getpid());
  std::string record = std::string("/run/brig/sandboxes/") + id;
  ASSERT_EQ(RunCommand({"mkdir", "-p", "/run/brig/sandboxes"}).exit_code, 0);
  ASSERT_EQ(mkdir(group.c_str(), 0755), 0) << group;
  ASSERT_EQ(mkdir(parent.c_str(), 0755), 0) << parent;
  std::ofstream(record) << "about brig_pid=1\ncgroup " << group << "\n";

  std::string diff = DiffResidue(before, TakeResidue());
  rmdir(group.c_str());
  rmdir(parent.c_str());
  unlink(record.c_str());
  EXPECT_EQ(diff, "") << "another's residue was counted as the test's";
}

}  // namespace
}  // namespace brig::testing
