// Pure parts of the cgroup layer and its inputs: the host layout from mountinfo and
// /proc/self/cgroup, limit values, --cgroup-parent, and sandbox records.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "state/record.h"
#include "util/files.h"
#include "util/parse.h"
#include "testlib/testlib.h"

namespace brig {
namespace {

// This development machine: v1 controllers, cgroup2 with no controllers of its own.
constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime shared:9 - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr char kHybridCgroup[] =
    "8:pids:/\n6:freezer:/\n4:memory:/process_api/94b2\n2:cpuacct:/\n1:cpu:/\n0::/\n";

TEST(CgroupLayout, HybridHostUsesEachV1Hierarchy) {
  cgroup::Layout l = cgroup::ParseLayout(kHybridMountinfo, kHybridCgroup);
  ASSERT_TRUE(l.v2);
  EXPECT_EQ(l.v2->mount, "/sys/fs/cgroup/unified");
  EXPECT_EQ(l.v2->self, "/");
  ASSERT_TRUE(l.v1_memory);
  EXPECT_EQ(l.v1_memory->mount, "/sys/fs/cgroup/memory");
  EXPECT_EQ(l.v1_memory->self, "/process_api/94b2");
  ASSERT_TRUE(l.v1_pids);
  EXPECT_EQ(l.v1_pids->mount, "/sys/fs/cgroup/pids");
  ASSERT_TRUE(l.v1_cpu);
  EXPECT_EQ(l.v1_cpu->mount, "/sys/fs/cgroup/cpu") << "cpuacct alone is not cpu";
  ASSERT_TRUE(l.v1_freezer);
  EXPECT_EQ(cgroup::ParentDir(*l.v1_memory, ""), "/sys/fs/cgroup/memory/process_api/94b2");
  EXPECT_EQ(cgroup::ParentDir(*l.v1_memory, "/ci/jobs/"), "/sys/fs/cgroup/memory/ci/jobs");
  EXPECT_EQ(cgroup::ParentDir(*l.v2, ""), "/sys/fs/cgroup/unified");
}

// A named hierarchy (systemd's) has no controller and gets no group, but is listed apart
// for an OCI container's /sys/fs/cgroup.
TEST(CgroupLayout, NamedHierarchiesAreListedApart) {
  cgroup::Layout l = cgroup::ParseLayout(
      std::string(kHybridMountinfo) +
          "30 31 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n",
      std::string(kHybridCgroup) + "9:name=systemd:/init.scope\n");
  ASSERT_EQ(l.v1_named.size(), 1u);
  EXPECT_EQ(l.v1_named[0].at.mount, "/sys/fs/cgroup/systemd");
  EXPECT_EQ(l.v1_named[0].at.self, "/init.scope");
  EXPECT_EQ(l.v1_named[0].controllers, std::vector<std::string>{"name=systemd"});
  for (const auto& h : l.v1) EXPECT_NE(h.controllers[0], "name=systemd");
  EXPECT_EQ(l.v1.size(), 5u);
}

TEST(CgroupLayout, PureV2HasNoV1Hierarchies) {
  cgroup::Layout l = cgroup::ParseLayout(
      "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
      "0::/user.slice/session-1.scope\n");
  ASSERT_TRUE(l.v2);
  EXPECT_EQ(l.v2->self, "/user.slice/session-1.scope");
  EXPECT_FALSE(l.v1_memory || l.v1_pids || l.v1_cpu || l.v1_freezer);
}

TEST(CgroupLayout, CombinedCpuCpuacctAndEscapedMountPoints) {
  cgroup::Layout l = cgroup::ParseLayout(
      "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "31 25 0:27 / /mnt/my\\040cgroups rw - cgroup cgroup rw,pids\n",
      "3:cpu,cpuacct:/a\n2:pids:/b:c\n");
  ASSERT_TRUE(l.v1_cpu);
  EXPECT_EQ(l.v1_cpu->mount, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l.v1_cpu->self, "/a");
  ASSERT_TRUE(l.v1_pids);
  EXPECT_EQ(l.v1_pids->mount, "/mnt/my cgroups");
  EXPECT_EQ(l.v1_pids->self, "/b:c");
  EXPECT_FALSE(l.v2);
}

TEST(CgroupLayout, MountOfASubtreeIsRelativeToItsRoot) {
  // Inside a cgroup namespace or a bind mount of a subtree, the mount's root is not "/".
  cgroup::Layout l = cgroup::ParseLayout(
      "40 30 0:30 /jobs /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/jobs/7\n");
  ASSERT_TRUE(l.v2);
  EXPECT_EQ(l.v2->self, "/7");
  EXPECT_EQ(cgroup::ParentDir(*l.v2, ""), "/sys/fs/cgroup/7");
}

TEST(CgroupLayout, EveryV1HierarchyWithAControllerIsListedOnce) {
  cgroup::Layout l = cgroup::ParseLayout(
      "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "31 25 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset,clone_children\n"
      "32 25 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
      "33 25 0:29 / /sys/fs/cgroup/net_cls,net_prio rw - cgroup cgroup rw,net_cls,net_prio\n"
      "34 25 0:27 / /mnt/cpuset-again rw - cgroup cgroup rw,cpuset,clone_children\n",
      "5:net_cls,net_prio:/\n4:name=systemd:/init.scope\n3:cpuset:/x\n2:cpu,cpuacct:/a\n");
  ASSERT_EQ(l.v1.size(), 3u) << "name=systemd is no controller; a second mount is not listed";
  EXPECT_EQ(l.v1[0].at.mount, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l.v1[0].at.self, "/a");
  EXPECT_EQ(l.v1[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(l.v1[1].at.mount, "/sys/fs/cgroup/cpuset");
  EXPECT_EQ(l.v1[1].at.self, "/x");
  EXPECT_EQ(l.v1[1].controllers, (std::vector<std::string>{"cpuset"}));
  EXPECT_EQ(l.v1[2].controllers, (std::vector<std::string>{"net_cls", "net_prio"}));
  EXPECT_TRUE(cgroup::ParseLayout(kHybridMountinfo, kHybridCgroup).v1.size() == 5u);
}

TEST(CgroupLayout, GarbageIsIgnored) {
  cgroup::Layout l = cgroup::ParseLayout("x\n\n- - -\n1 2 3\n", "::\n:\nfoo\n");
  EXPECT_FALSE(l.v2 || l.v1_memory || l.v1_pids || l.v1_cpu || l.v1_freezer);
  EXPECT_TRUE(l.v1.empty());
}

TEST(CgroupLimits, OptionalLimitsAreDroppedWhereTheirControllerIsMissing) {
  cgroup::Plan plan;
  plan.memory = cgroup::Path::kV1;
  plan.pids = cgroup::Path::kMissing;
  plan.cpu = cgroup::Path::kMissing;
  cgroup::Limits l;
  l.memory = 64 << 20;
  l.pids = 10;
  l.pids_optional = true;
  ASSERT_TRUE(cgroup::FitLimits(plan, l));
  EXPECT_EQ(l.memory, 64u << 20) << "its controller is there";
  EXPECT_FALSE(l.pids) << "optional, and its controller is missing";
  EXPECT_FALSE(l.cpu_milli);
}

TEST(CgroupLimits, ARequiredLimitWithoutItsControllerNamesIt) {
  cgroup::Plan plan;
  plan.memory = cgroup::Path::kV2;
  plan.pids = cgroup::Path::kV2;
  plan.cpu = cgroup::Path::kMissing;
  plan.parent = "/ci";
  cgroup::Limits l;
  l.cpu_milli = 500;
  auto s = cgroup::FitLimits(plan, l);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().Render().rfind("cgroup 'cpu': cpu controller", 0), 0u) << s.error().Render();
  EXPECT_NE(s.error().Render().find("'/ci'"), std::string::npos) << s.error().Render();
  // No limit, no need for the controller.
  cgroup::Limits none;
  EXPECT_TRUE(cgroup::FitLimits(plan, none));
}

// cgroup.kill is looked for, not inferred from the kernel's version: a tree without the
// file says no whatever the running kernel is.
TEST(CgroupKill, TheFileIsLookedForInTheNearestGroupBelowTheRoot) {
  testing::ScratchDir root;
  cgroup::Hierarchy v2{root.path(), "/brig"};
  EXPECT_EQ(cgroup::ProbeCgroupKill(v2, ""), std::nullopt) << "no group below the root to look in";
  ASSERT_EQ(mkdir((root.path() + "/brig").c_str(), 0755), 0);
  EXPECT_EQ(cgroup::ProbeCgroupKill(v2, ""), false);
  EXPECT_EQ(cgroup::ProbeCgroupKill(v2, "/brig/not/made/yet"), false);
  root.Write("brig/cgroup.kill", "");
  EXPECT_EQ(cgroup::ProbeCgroupKill(v2, ""), true);
  EXPECT_EQ(cgroup::ProbeCgroupKill(v2, "/brig/not/made/yet"), true);
  // At the root, which never has the file, a group just below it is asked.
  EXPECT_EQ(cgroup::ProbeCgroupKill(cgroup::Hierarchy{root.path(), "/"}, ""), true);
}

TEST(CgroupParent, OnlyPlainAbsolutePaths) {
  EXPECT_TRUE(cgroup::CheckParent("/brig"));
  EXPECT_TRUE(cgroup::CheckParent("/ci/jobs.slice/"));
  EXPECT_TRUE(cgroup::CheckParent("/a/..b"));
  for (const char* bad : {"", "brig", "/a/../b", "/..", "/a/./b", "/a\nb", "/a\x1b"}) {
    EXPECT_FALSE(cgroup::CheckParent(bad)) << bad;
  }
}

TEST(LimitValues, Cpus) {
  EXPECT_EQ(*util::ParseCpus("0.5"), 500u);
  EXPECT_EQ(*util::ParseCpus("2"), 2000u);
  EXPECT_EQ(*util::ParseCpus("0.01"), 10u);
  EXPECT_EQ(*util::ParseCpus("1.25"), 1250u);
  for (const char* bad : {"", "0", "0.001", "-1", "1e3", "2000", "one", "0.5 ", ".", "1."}) {
    EXPECT_FALSE(util::ParseCpus(bad)) << bad;
  }
}

TEST(LimitValues, SwapTakesZeroAndUnlimited) {
  EXPECT_EQ(*util::ParseSizeLimit("0"), 0u);
  EXPECT_EQ(*util::ParseSizeLimit("unlimited"), UINT64_MAX);
  EXPECT_EQ(*util::ParseSizeLimit("1G"), 1u << 30);
  EXPECT_FALSE(util::ParseSizeLimit("none"));
  EXPECT_FALSE(util::ParseSizeLimit("-1"));
}

TEST(SandboxRecord, ParseSkipsMalformedLines) {
  auto e = state::ParseRecord("cgroup /sys/fs/cgroup/a b\nnospace\n cgroup\ncgroup \n\nveth x");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].kind, "cgroup");
  EXPECT_EQ(e[0].value, "/sys/fs/cgroup/a b");
  EXPECT_EQ(e[1].kind, "veth");
  EXPECT_EQ(e[1].value, "x");
}

// A workspace path may hold spaces, newlines and percent signs: each comes back as it went
// in, and no value can add a line of its own.
TEST(SandboxRecord, ValuesRoundTripWhateverTheyHold) {
  char dir[] = "/tmp/brig-record-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string values[] = {"/a b/c", "/x\ncgroup /sys/fs/cgroup", "100%25 % %zz\t"};
  {
    auto r = state::Record::Create(dir, "brig-000000000001");
    ASSERT_TRUE(r) << r.error().Render();
    for (const auto& v : values) ASSERT_TRUE(r->Add("placeholder", v));
    auto text = util::ReadFile(std::string(dir) + "/brig-000000000001");
    ASSERT_TRUE(text);
    auto e = state::ParseRecord(*text);
    ASSERT_EQ(e.size(), 3u) << *text;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(e[i].kind, "placeholder");
      EXPECT_EQ(e[i].value, values[i]);
    }
  }
  EXPECT_EQ(rmdir(dir), 0) << "the record removes itself";
}

}  // namespace
}  // namespace brig
