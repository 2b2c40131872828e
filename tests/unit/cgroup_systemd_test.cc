// runc's systemd cgroupsPath, "slice:prefix:name", read as its driver reads it
// (cgroup/systemd.h): the scope unit's name and its cgroup, the slice expanded.
#include "cgroup/systemd.h"

#include <gtest/gtest.h>

#include <string>

namespace brig::cgroup::systemd {
namespace {

TEST(SystemdCgroup, ASliceExpandsToItsAncestors) {
  EXPECT_EQ(*ExpandSlice("-.slice"), "/");
  EXPECT_EQ(*ExpandSlice("system.slice"), "/system.slice");
  EXPECT_EQ(*ExpandSlice("kubepods-besteffort-pod1234.slice"),
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice");
  for (const char* bad :
       {"system", ".slice", "a--b.slice", "-a.slice", "a-.slice", "a/b.slice", "a b.slice"}) {
    auto r = ExpandSlice(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput) << bad;
  }
}

TEST(SystemdCgroup, APathNamesAScopeInASlice) {
  auto kubelet = ParsePath("kubepods-burstable-podab12.slice:cri-containerd:f00d", "f00d");
  ASSERT_TRUE(kubelet) << kubelet.error().Render();
  EXPECT_EQ(kubelet->slice, "kubepods-burstable-podab12.slice");
  EXPECT_EQ(kubelet->unit, "cri-containerd-f00d.scope");
  EXPECT_EQ(kubelet->path,
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab12.slice/"
            "cri-containerd-f00d.scope");
  // runc's defaults: an empty slice is system.slice; an empty path, the container's id.
  EXPECT_EQ(ParsePath(":docker:abc", "abc")->path, "/system.slice/docker-abc.scope");
  EXPECT_EQ(ParsePath("", "web")->unit, "brig-web.scope");
  EXPECT_EQ(ParsePath("", "web")->path, "/system.slice/brig-web.scope");
  EXPECT_EQ(ParsePath("-.slice::x", "x")->path, "/x.scope");
}

TEST(SystemdCgroup, WhatIsNotAScopeIsRefused) {
  struct Case {
    const char* path;
    const char* said;
  } cases[] = {
      {"/a/b", "expected 'slice:prefix:name'"},
      {"a:b", "expected 'slice:prefix:name'"},
      {"a.slice:b:c:d", "expected 'slice:prefix:name'"},
      {"system.slice:p:", "the unit's name is empty"},
      {"system.slice:p:x.slice", "a container's unit is a scope, not the slice x.slice"},
      {"system.slice:p:a/b", "is not a valid unit name"},
      {"system:p:x", "not a slice"},
  };
  for (const Case& c : cases) {
    auto r = ParsePath(c.path, "id");
    ASSERT_FALSE(r) << c.path;
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput) << c.path;
    EXPECT_NE(r.error().Render().find(c.said), std::string::npos) << r.error().Render();
    EXPECT_NE(r.error().Render().find("linux.cgroupsPath"), std::string::npos)
        << r.error().Render();
  }
}

}  // namespace
}  // namespace brig::cgroup::systemd
