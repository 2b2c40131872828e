// The pure parts of an OCI container's cgroups that are the front end's: linux.cgroupsPath
// checked and tidied, and the stats JSON (the planner and the device rules are
// cgroup/resources.h's and cgroup/device_filter.h's, tests/unit/cgroup_resources_test.cc).
#include <gtest/gtest.h>

#include "oci/cgroups.h"

namespace brig::oci {
namespace {

TEST(OciCgroupsPath, EmptyIsBrigSlashId) {
  auto p = CleanCgroupsPath("", "web1");
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_EQ(*p, "/brig/web1");
}

TEST(OciCgroupsPath, IsTidiedAndKeepsBeingRelativeOrAbsolute) {
  EXPECT_EQ(*CleanCgroupsPath("/a//b/./c/", "x"), "/a/b/c");
  EXPECT_EQ(*CleanCgroupsPath("a/./b", "x"), "a/b");
  EXPECT_EQ(*CleanCgroupsPath("pod:1", "x"), "pod:1") << "one colon is just a name";
}

TEST(OciCgroupsPath, RefusesDotDotControlCharactersAndTheRoot) {
  for (const char* bad : {"/a/../b", "..", "a/..", "/", ".", "/./", "/a\nb", "a\x7f"}) {
    auto p = CleanCgroupsPath(bad, "x");
    ASSERT_FALSE(p) << bad;
    EXPECT_EQ(p.error().Render().rfind("linux.cgroupsPath '", 0), 0u) << p.error().Render();
  }
}

TEST(OciCgroupsPath, SystemdSliceIsRefusedInOneLine) {
  auto p = CleanCgroupsPath("system.slice:docker:abc", "x");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().Render(),
            "linux.cgroupsPath 'system.slice:docker:abc': a systemd cgroup path "
            "('slice:prefix:name') needs --systemd-cgroup");
}

TEST(OciCgroupsStats, JsonHasRuncsShape) {
  cgroup::Stats s;
  s.cpu_usage_ns = 3000;
  s.cpu_user_ns = 2000;
  s.cpu_system_ns = 1000;
  s.cpu_periods = 7;
  s.cpu_throttled_periods = 2;
  s.cpu_throttled_ns = 500;
  s.memory_usage = 4096;
  s.memory_max_usage = 8192;
  s.memory_limit = 67108864;
  s.memory_failcnt = 0;
  s.swap_usage = 4096;
  s.swap_limit = 100663296;
  s.pids_current = 1;
  EXPECT_EQ(StatsJson("web\"1", s),
            "{\"type\":\"stats\",\"id\":\"web\\\"1\",\"data\":{"
            "\"cpu\":{\"usage\":{\"total\":3000,\"kernel\":1000,\"user\":2000},"
            "\"throttling\":{\"periods\":7,\"throttledPeriods\":2,\"throttledTime\":500}},"
            "\"memory\":{\"usage\":{\"limit\":67108864,\"usage\":4096,\"max\":8192,"
            "\"failcnt\":0},\"swap\":{\"limit\":100663296,\"usage\":4096,\"failcnt\":0}},"
            "\"pids\":{\"current\":1,\"limit\":18446744073709551615}}}");
  EXPECT_EQ(StatsJson("x", cgroup::Stats{}),
            "{\"type\":\"stats\",\"id\":\"x\",\"data\":{\"cpu\":{},\"memory\":{},\"pids\":{}}}");
}

}  // namespace
}  // namespace brig::oci
