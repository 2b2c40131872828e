// runc's systemd cgroup driver (--systemd-cgroup, cgroup/systemd.h): where systemd is pid 1
// (the vm tier's `tools/vmtest --systemd`), a container's cgroup is a transient scope,
// delegated, whose limits systemd keeps too; elsewhere the flag is refused in one line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cgroup/systemd.h"
#include "host/oci_fixture.h"

namespace brig::testing::oci {
namespace {

class OciSystemd : public Oci {
 protected:
  void SetUp() override {
    if (!cgroup::systemd::Booted()) GTEST_SKIP() << "systemd is not pid 1 here";
    Oci::SetUp();
  }

  // `systemctl show -p PROP --value UNIT`.
  static std::string Show(const std::string& unit, const std::string& prop) {
    RunOutput r = RunCommand({"systemctl", "show", "-p", prop, "--value", unit});
    return Trim(r.out);
  }
  static std::string Cgroup(const std::string& dir, const std::string& file) {
    return Trim(ReadFileOrEmpty("/sys/fs/cgroup" + dir + "/" + file));
  }
  static void DaemonReload() {
    RunOutput r = RunCommand({"systemctl", "daemon-reload"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

// The container's process is in the scope, which is delegated and holds only it; the
// limits are in its files and in systemd's unit, so that a daemon-reload, which writes
// every unit's properties to its cgroup again, keeps them, after `update` too. pause,
// resume and delete work on it, and delete leaves no unit and no group.
TEST_F(OciSystemd, AContainersGroupIsADelegatedScopeThatKeepsItsLimits) {
  const std::string unit = "brig-test-sd.scope", dir = "/system.slice/" + unit;
  Config c = Cfg("sd");
  c.cgroups_path = "system.slice:brig-test:sd";
  c.resources_json =
      R"({"memory": {"limit": 67108864}, "pids": {"limit": 64},
          "cpu": {"quota": 50000, "period": 100000, "cpus": "0"}})";
  // It may make device nodes; the device rules (runc's defaults) refuse /dev/mem's use.
  c.bounding = c.effective = c.permitted = {"CAP_MKNOD"};
  // Without the flag, the path is refused (runc's cgroupfs driver would take it as a path).
  RunOutput plain = Run({"create", "--bundle", Bundle(c, "sd"), "sd"});
  ExpectCleanFailure(plain, "sd");
  EXPECT_NE(plain.err.find("needs --systemd-cgroup"), std::string::npos) << plain.err;
  RunOutput made = Run({"--systemd-cgroup", "create", "--bundle", Bundle(c, "sd"), "--pid-file",
                        scratch_.path() + "/sd.pid", "sd"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  pid_t pid = std::stoi(ReadFileOrEmpty(scratch_.path() + "/sd.pid"));
  EXPECT_EQ(Trim(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup")), "0::" + dir);
  EXPECT_EQ(Cgroup(dir, "cgroup.procs"), std::to_string(pid)) << "brig's holder is gone";
  EXPECT_EQ(Show(unit, "ActiveState"), "active");
  EXPECT_EQ(Show(unit, "Delegate"), "yes");
  EXPECT_EQ(Show(unit, "MemoryMax"), "67108864");
  EXPECT_EQ(Show(unit, "TasksMax"), "64");
  EXPECT_EQ(Cgroup(dir, "memory.max"), "67108864");
  EXPECT_EQ(Cgroup(dir, "pids.max"), "64");
  EXPECT_EQ(Cgroup(dir, "cpu.max"), "50000 100000");
  EXPECT_EQ(Cgroup(dir, "cpuset.cpus"), "0");
  ASSERT_EQ(Run({"start", "sd"}).exit_code, 0);
  const std::vector<std::string> mem = {
      "exec", "sd", "sh", "-c",
      "mknod /dev/mem-test c 1 1 && { head -c1 /dev/mem-test >/dev/null 2>&1 && echo opened || "
      "echo refused; }; rm -f /dev/mem-test"};
  EXPECT_EQ(Run(mem).out, "refused\n");
  DaemonReload();
  EXPECT_EQ(Cgroup(dir, "memory.max"), "67108864") << "a daemon-reload lost the limit";
  EXPECT_EQ(Cgroup(dir, "pids.max"), "64") << "a daemon-reload lost the limit";
  EXPECT_EQ(Cgroup(dir, "cpu.max"), "50000 100000") << "a daemon-reload lost the limit";
  EXPECT_EQ(Cgroup(dir, "cpuset.cpus"), "0") << "a daemon-reload lost the limit";
  EXPECT_EQ(Run(mem).out, "refused\n") << "a daemon-reload lost the device rules";

  RunOutput up = Run({"update", "--memory", "134217728", "--pids-limit", "100", "sd"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(Cgroup(dir, "memory.max"), "134217728");
  EXPECT_EQ(Show(unit, "MemoryMax"), "134217728");
  DaemonReload();
  EXPECT_EQ(Cgroup(dir, "memory.max"), "134217728") << "a daemon-reload undid the update";
  EXPECT_EQ(Cgroup(dir, "pids.max"), "100") << "a daemon-reload undid the update";

  ASSERT_EQ(Run({"pause", "sd"}).exit_code, 0);
  EXPECT_EQ(Cgroup(dir, "cgroup.freeze"), "1");
  EXPECT_EQ(StateOf("sd").status, "paused");
  ASSERT_EQ(Run({"resume", "sd"}).exit_code, 0);
  EXPECT_EQ(Cgroup(dir, "cgroup.freeze"), "0");
  ASSERT_EQ(Run({"kill", "--all", "sd", "KILL"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
  RunOutput del = Run({"delete", "sd"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_NE(Show(unit, "LoadState"), "loaded") << "delete left the unit";
  struct stat st;
  EXPECT_NE(stat(("/sys/fs/cgroup" + dir).c_str(), &st), 0) << "delete left the group";
}

// A create that fails after systemd made the scope leaves no unit, as it leaves no group.
TEST_F(OciSystemd, AFailedCreateLeavesNoScope) {
  Config c = Cfg("sdbad");
  c.cgroups_path = "system.slice:brig-test:sdbad";
  c.resources_json = R"({"cpu": {"cpus": "4096"}})";
  RunOutput r = Run({"--systemd-cgroup", "create", "--bundle", Bundle(c, "sdbad"), "sdbad"});
  ExpectCleanFailure(r, "sdbad");
  EXPECT_NE(r.err.find("linux.resources.cpu.cpus"), std::string::npos) << r.err;
  EXPECT_NE(Show("brig-test-sdbad.scope", "LoadState"), "loaded") << "the scope is left";
}

// Where systemd is not init, --systemd-cgroup is refused in one line, before anything.
TEST_F(Oci, TheSystemdCgroupDriverIsRefusedWhereSystemdIsNotInit) {
  if (cgroup::systemd::Booted()) GTEST_SKIP() << "systemd is pid 1 here";
  Config c = Cfg("nosd");
  c.cgroups_path = "system.slice:brig-test:nosd";
  RunOutput r = Run({"--systemd-cgroup", "create", "--bundle", Bundle(c, "nosd"), "nosd"});
  ExpectCleanFailure(r, "nosd");
  EXPECT_NE(r.err.find("--systemd-cgroup: this host's init is not systemd"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace brig::testing::oci
