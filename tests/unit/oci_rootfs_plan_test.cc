// oci/rootfs.h: PlanRootfs turns config.json's mounts, devices, maskedPaths,
// readonlyPaths, root.readonly and rootfsPropagation into fs::Steps. Pure: a Spec in,
// steps out.
#include <gtest/gtest.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "oci/rootfs.h"
#include "oci/spec.h"
#include "sys/id_map.h"

namespace brig::oci {
namespace {

using K = fs::StepKind;

Spec SpecOf(const std::string& mounts, const std::string& linux_more = "",
            const std::string& root_more = "") {
  auto spec = ParseSpec(R"({"ociVersion": "1.1.0", "root": {"path": "rootfs")" + root_more +
                        R"(}, "process": {"args": ["sh"], "cwd": "/"}, "mounts": [)" + mounts +
                        R"(], "linux": {"namespaces": [{"type": "mount"}])" + linux_more + "}}");
  EXPECT_TRUE(spec) << spec.error().Render();
  return spec ? *spec : Spec();
}

RootfsOptions Options(bool userns = false, bool cgroupns = true) {
  RootfsOptions o;
  o.rootfs = "/b/rootfs";
  o.bundle = "/b";
  o.userns = userns;
  o.cgroupns = cgroupns;
  o.cgroup_dirs = {"/sys/fs/cgroup/memory/c1", "/sys/fs/cgroup/unified/c1"};
  return o;
}

// The steps of config.json's mounts: those before the first device.
std::vector<const fs::Step*> MountSteps(const RootfsPlan& plan) {
  std::vector<const fs::Step*> out;
  for (const fs::Step& s : plan.before_pivot) {
    if (s.field == "mounts") out.push_back(&s);
  }
  return out;
}

TEST(OciRootfsPlan, ABindCarriesItsSourcePathForInitNotATree) {
  Spec spec = SpecOf(
      R"({"destination": "/data", "type": "bind", "source": "data", "options": ["rbind", "ro",
          "nosuid", "rslave"]},
         {"destination": "/etc/hosts", "source": "/h/hosts", "options": ["bind", "rw"]},
         {"destination": "/opt", "source": "/o", "options": ["bind", "rro"]})");
  auto plan = PlanRootfs(spec, Options());
  ASSERT_TRUE(plan) << plan.error().Render();
  std::vector<const fs::Step*> m = MountSteps(*plan);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]->kind, K::kBindSource);
  EXPECT_EQ(m[0]->dest, "data");
  EXPECT_EQ(m[0]->source, "/b/data");  // relative to the bundle
  EXPECT_FALSE(m[0]->tree.valid());
  EXPECT_TRUE(m[0]->recursive);
  EXPECT_TRUE(m[0]->remount);
  EXPECT_EQ(m[0]->flags, static_cast<unsigned long>(MS_RDONLY | MS_NOSUID));
  EXPECT_EQ(m[1]->kind, K::kPropagation);
  EXPECT_EQ(m[1]->dest, "data");
  EXPECT_EQ(m[1]->flags, static_cast<unsigned long>(MS_SLAVE | MS_REC));
  // "rw" only clears: a remount still happens, with no flag.
  EXPECT_EQ(m[2]->kind, K::kBindSource);
  EXPECT_EQ(m[2]->source, "/h/hosts");
  EXPECT_FALSE(m[2]->recursive);
  EXPECT_TRUE(m[2]->remount);
  EXPECT_EQ(m[2]->flags, 0u);
  // A recursive attribute is set by mount_setattr, no remount.
  EXPECT_EQ(m[3]->kind, K::kBindSource);
  EXPECT_FALSE(m[3]->remount);
  EXPECT_EQ(m[3]->attrs, static_cast<uint64_t>(MOUNT_ATTR_RDONLY));
  EXPECT_EQ(fs::StepName(K::kBindSource), "bind source");
}

TEST(OciRootfsPlan, NewFileSystemsByTypeAndOptions) {
  Spec spec = SpecOf(
      R"({"destination": "/proc", "type": "proc", "source": "proc"},
         {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid",
          "strictatime", "mode=755", "size=65536k"]},
         {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]},
         {"destination": "/run", "type": "tmpfs", "options": ["tmpcopyup", "mode=700"]},
         {"destination": "/x", "options": ["nodev"]})");
  auto plan = PlanRootfs(spec, Options());
  ASSERT_TRUE(plan) << plan.error().Render();
  std::vector<const fs::Step*> m = MountSteps(*plan);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0]->kind, K::kMount);
  EXPECT_EQ(m[0]->type, "proc");
  EXPECT_EQ(m[0]->source, "proc");
  EXPECT_EQ(m[0]->dest, "proc");
  EXPECT_EQ(m[1]->type, "tmpfs");
  EXPECT_EQ(m[1]->flags, static_cast<unsigned long>(MS_NOSUID | MS_STRICTATIME));
  EXPECT_EQ(m[1]->data, "mode=755,size=65536k");
  EXPECT_EQ(m[2]->type, "sysfs");
  EXPECT_FALSE(m[2]->host_sys);  // no user namespace: no fallback to the host's /sys
  EXPECT_EQ(m[3]->kind, K::kTmpfsCopyUp);
  EXPECT_EQ(m[3]->data, "mode=700");
  EXPECT_EQ(m[4]->kind, K::kMount);
  EXPECT_EQ(m[4]->type, "none");
  EXPECT_EQ(m[4]->source, "none");

  auto in_userns = PlanRootfs(spec, Options(true));
  ASSERT_TRUE(in_userns);
  EXPECT_TRUE(MountSteps(*in_userns)[2]->host_sys);
}

TEST(OciRootfsPlan, CgroupMountsWithAndWithoutACgroupNamespace) {
  Spec spec = SpecOf(
      R"({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
          "options": ["ro", "nosuid"]})");
  auto own = PlanRootfs(spec, Options(false, true));
  ASSERT_TRUE(own);
  ASSERT_EQ(MountSteps(*own).size(), 1u);
  const fs::Step& fresh = *MountSteps(*own)[0];
  EXPECT_EQ(fresh.kind, K::kCgroup);
  EXPECT_EQ(fresh.dest, "sys/fs/cgroup");
  EXPECT_TRUE(fresh.groups.empty());
  EXPECT_TRUE(fresh.flags & MS_RDONLY);
  auto host = PlanRootfs(spec, Options(false, false));
  ASSERT_TRUE(host);
  const fs::Step& bound = *MountSteps(*host)[0];
  EXPECT_EQ(bound.kind, K::kCgroupGroups);
  EXPECT_EQ(bound.groups, Options().cgroup_dirs);
}

TEST(OciRootfsPlan, DevicesAreMadeOrBoundFromTheHostInAUserNamespace) {
  Spec spec = SpecOf("", R"(, "devices": [{"path": "/dev/fuse", "type": "c", "major": 10,
      "minor": 229, "fileMode": 384, "uid": 7, "gid": 8}])");
  auto plan = PlanRootfs(spec, Options());
  ASSERT_TRUE(plan) << plan.error().Render();
  const auto& s = plan->before_pivot;
  ASSERT_EQ(s.size(), 6u + 1u + 5u);  // the defaults, fuse, the links
  EXPECT_EQ(s[0].kind, K::kDevice);
  EXPECT_EQ(s[0].dest, "dev/null");
  EXPECT_EQ(s[0].mode, static_cast<uint32_t>(S_IFCHR | 0666));
  EXPECT_EQ(s[0].rdev, makedev(1, 3));
  EXPECT_EQ(s[5].dest, "dev/tty");
  EXPECT_EQ(s[6].dest, "dev/fuse");
  EXPECT_EQ(s[6].mode, static_cast<uint32_t>(S_IFCHR | 0600));
  EXPECT_EQ(s[6].rdev, makedev(10, 229));
  EXPECT_EQ(s[6].uid, 7u);
  EXPECT_EQ(s[6].gid, 8u);
  EXPECT_EQ(s[6].field, "linux.devices");
  EXPECT_EQ(s[7].kind, K::kLinkInRoot);
  EXPECT_EQ(s[7].dest, "dev/fd");
  EXPECT_EQ(s[7].data, "/proc/self/fd");
  EXPECT_FALSE(s[7].replace);
  EXPECT_EQ(s[11].dest, "dev/ptmx");
  EXPECT_EQ(s[11].data, "pts/ptmx");
  EXPECT_TRUE(s[11].replace);

  auto userns = PlanRootfs(spec, Options(true));
  ASSERT_TRUE(userns);
  const fs::Step& fuse = userns->before_pivot[6];
  EXPECT_EQ(fuse.kind, K::kBindSource);
  EXPECT_EQ(fuse.source, "/dev/fuse");
  EXPECT_EQ(fuse.attrs, static_cast<uint64_t>(MOUNT_ATTR_RDONLY));
  EXPECT_FALSE(fuse.recursive);

  // The host's /dev bound: no device nor link of brig's.
  Spec dev_bound = SpecOf(R"({"destination": "/dev", "type": "bind", "source": "/dev"})");
  auto none = PlanRootfs(dev_bound, Options());
  ASSERT_TRUE(none);
  EXPECT_EQ(none->before_pivot.size(), 1u);
}

TEST(OciRootfsPlan, AfterPivotMaskedReadOnlyRootAndPropagation) {
  Spec spec = SpecOf("", R"(, "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"],
      "rootfsPropagation": "rshared")",
                     R"(, "readonly": true)");
  auto plan = PlanRootfs(spec, Options());
  ASSERT_TRUE(plan) << plan.error().Render();
  const auto& s = plan->after_pivot;
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].kind, K::kMask);
  EXPECT_EQ(s[0].dest, "proc/kcore");
  EXPECT_EQ(s[0].field, "linux.maskedPaths");
  EXPECT_EQ(s[1].kind, K::kReadOnly);
  EXPECT_EQ(s[1].dest, "proc/sys");
  EXPECT_EQ(s[2].kind, K::kSealRoRecursive);
  EXPECT_EQ(s[2].dest, "");
  EXPECT_EQ(s[2].field, "root.readonly");
  EXPECT_EQ(s[3].kind, K::kPropagation);
  EXPECT_EQ(s[3].dest, "");
  EXPECT_EQ(s[3].flags, static_cast<unsigned long>(MS_SHARED | MS_REC));

  auto bare = PlanRootfs(SpecOf(""), Options());
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->after_pivot.empty());
}

// An id-mapped bind keeps the mount's mappings for the copy brig makes (SendMountSources);
// runc's ridmap maps its submounts too, and idmap alone takes the container's mappings.
TEST(OciRootfsPlan, AnIdMappedBindCarriesItsMappings) {
  auto spec = ParseSpec(R"({"ociVersion": "1.1.0", "root": {"path": "rootfs"},
      "process": {"args": ["sh"], "cwd": "/"}, "mounts": [
      {"destination": "/d", "type": "bind", "source": "/d", "options": ["rbind", "ridmap"],
       "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
       "gidMappings": [{"containerID": 0, "hostID": 2000, "size": 3}]},
      {"destination": "/e", "type": "bind", "source": "/e", "options": ["idmap"]},
      {"destination": "/f", "type": "bind", "source": "/f"}],
      "linux": {"namespaces": [{"type": "mount"}, {"type": "user"}],
      "uidMappings": [{"containerID": 0, "hostID": 300000, "size": 65536}],
      "gidMappings": [{"containerID": 0, "hostID": 400000, "size": 65536}]}})");
  ASSERT_TRUE(spec) << spec.error().Render();
  auto plan = PlanRootfs(*spec, Options());
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_TRUE(HasIdmappedSources(*plan));
  const fs::Step& d = plan->before_pivot[0];
  ASSERT_TRUE(d.idmap);
  EXPECT_TRUE(d.recursive);
  EXPECT_TRUE(d.idmap_recursive);
  EXPECT_EQ(sys::RenderIdMap(d.idmap->uids), "0 1000 1\n");
  EXPECT_EQ(sys::RenderIdMap(d.idmap->gids), "0 2000 3\n");
  const fs::Step& e = plan->before_pivot[1];
  ASSERT_TRUE(e.idmap);
  EXPECT_FALSE(e.idmap_recursive);
  EXPECT_EQ(sys::RenderIdMap(e.idmap->uids), "0 300000 65536\n");
  EXPECT_EQ(sys::RenderIdMap(e.idmap->gids), "0 400000 65536\n");
  EXPECT_FALSE(plan->before_pivot[2].idmap);
  EXPECT_FALSE(HasIdmappedSources(
      *PlanRootfs(SpecOf(R"({"destination": "/f", "type": "bind", "source": "/f"})"), Options())));
}

}  // namespace
}  // namespace brig::oci
