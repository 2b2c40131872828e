// The planner of every cgroup limit (cgroup/resources.h): an OCI Resources as the writes
// of a hybrid (v1 + empty cgroup2) and a pure v2 layout with what each refuses, runc's
// conversions, device rules as v1 keeps them and as the v2 eBPF program decides them, and
// where a group's directory is in a hierarchy.
#include <gtest/gtest.h>

#include <algorithm>

#include "cgroup/cgroup.h"
#include "cgroup/device_filter.h"
#include "cgroup/resources.h"

namespace brig::cgroup {
namespace {

using oci::Resources;

TEST(CgroupGroupDir, AbsoluteIsUnderTheMountRelativeUnderBrigsOwnGroup) {
  Hierarchy memory{"/sys/fs/cgroup/memory", "/process_api/94b2"};
  Hierarchy v2{"/sys/fs/cgroup/unified", "/"};
  EXPECT_EQ(GroupDir(memory, "/brig/c1"), "/sys/fs/cgroup/memory/brig/c1");
  EXPECT_EQ(GroupDir(memory, "pods/c1"), "/sys/fs/cgroup/memory/process_api/94b2/pods/c1");
  EXPECT_EQ(GroupDir(v2, "pods/c1"), "/sys/fs/cgroup/unified/pods/c1");
}
// This development machine: every controller on v1 but hugetlb, which is on cgroup2.
Routes Hybrid() {
  Routes r;
  for (const char* c :
       {"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer"}) {
    r[c] = Route{std::string("/v1/") + c + "/c1", false, true};
  }
  r["cgroup"] = Route{"/v2/c1", true, true};
  r["hugetlb"] = Route{"/v2/c1", true, true};
  return r;
}

Routes PureV2() {
  Routes r;
  for (const char* c : {"cgroup", "cpu", "cpuset", "io", "memory", "pids", "hugetlb"}) {
    r[c] = Route{"/cg/c1", true, true};
  }
  return r;
}

Resources Typical() {
  Resources r;
  r.mutable_memory()->set_limit(64 << 20);
  r.mutable_memory()->set_swap(96 << 20);
  r.mutable_memory()->set_reservation(32 << 20);
  r.mutable_pids()->set_limit(10);
  r.mutable_cpu()->set_shares(1024);
  r.mutable_cpu()->set_quota(50000);
  r.mutable_cpu()->set_period(100000);
  r.mutable_cpu()->set_cpus("0");
  auto* h = r.add_hugepage_limits();
  h->set_page_size("2MB");
  h->set_limit(4 << 20);
  auto* deny = r.add_devices();
  deny->set_access("rwm");
  auto* null = r.add_devices();
  null->set_allow(true);
  null->set_type("c");
  null->set_major(1);
  null->set_minor(3);
  null->set_access("rw");
  return r;
}

std::vector<std::string> Files(const WritePlan& p) {
  std::vector<std::string> out;
  for (const auto& w : p.writes) out.push_back(w.dir + "/" + w.file + "=" + w.value);
  return out;
}

TEST(CgroupResources, HybridWritesEachControllerInItsHierarchy) {
  HostFacts facts;
  facts.swap_accounting = true;
  auto plan = PlanWrites(Typical(), Hybrid(), facts);
  ASSERT_TRUE(plan) << plan.error().Render();
  std::vector<std::string> want = {
      "/v1/pids/c1/pids.max=10",
      "/v1/memory/c1/memory.limit_in_bytes=67108864",
      "/v1/memory/c1/memory.memsw.limit_in_bytes=100663296",
      "/v1/memory/c1/memory.soft_limit_in_bytes=33554432",
      "/v1/cpu/c1/cpu.shares=1024",
      "/v1/cpu/c1/cpu.cfs_period_us=100000",
      "/v1/cpu/c1/cpu.cfs_quota_us=50000",
      "/v1/cpuset/c1/cpuset.cpus=0",
      "/v1/devices/c1/devices.deny=a",
      "/v1/devices/c1/devices.allow=c 1:3 rw",
      "/v1/devices/c1/devices.allow=c *:* m",
      "/v1/devices/c1/devices.allow=b *:* m",
      "/v1/devices/c1/devices.allow=c 1:3 rwm",
      "/v1/devices/c1/devices.allow=c 1:8 rwm",
      "/v1/devices/c1/devices.allow=c 1:7 rwm",
      "/v1/devices/c1/devices.allow=c 5:0 rwm",
      "/v1/devices/c1/devices.allow=c 1:5 rwm",
      "/v1/devices/c1/devices.allow=c 1:9 rwm",
      "/v1/devices/c1/devices.allow=c 136:* rwm",
      "/v1/devices/c1/devices.allow=c 5:2 rwm",
      "/v1/devices/c1/devices.allow=c 10:200 rwm",
      "/v2/c1/hugetlb.2MB.max=4194304",
  };
  EXPECT_EQ(Files(*plan), want);
  EXPECT_FALSE(plan->v2_devices) << "v1 has a devices hierarchy";
  EXPECT_EQ(plan->writes[1].property, "linux.resources.memory.limit");
  EXPECT_EQ(plan->writes[2].property, "linux.resources.memory.swap");
}

TEST(CgroupResources, PureV2ConvertsTheV1ShapedValues) {
  HostFacts facts;
  facts.swap_accounting = true;
  auto plan = PlanWrites(Typical(), PureV2(), facts);
  ASSERT_TRUE(plan) << plan.error().Render();
  std::vector<std::string> want = {
      "/cg/c1/pids.max=10",
      "/cg/c1/memory.swap.max=33554432",  // memory+swap 96M less memory 64M
      "/cg/c1/memory.max=67108864",
      "/cg/c1/memory.low=33554432",
      "/cg/c1/cpu.weight=100",  // the v1 default of 1024 shares is the v2 default weight
      "/cg/c1/cpu.max=50000 100000",
      "/cg/c1/cpuset.cpus=0",
      "/cg/c1/hugetlb.2MB.max=4194304",
  };
  EXPECT_EQ(Files(*plan), want);
  EXPECT_TRUE(plan->v2_devices) << "no devices hierarchy: the rules need the eBPF filter";
}

TEST(CgroupResources, MinusOneIsMaxAndPidsZeroIsNoLimit) {
  Resources r;
  r.mutable_memory()->set_limit(-1);
  r.mutable_pids()->set_limit(0);
  r.mutable_cpu()->set_quota(-1);
  HostFacts facts;
  facts.swap_accounting = true;
  facts.default_devices = false;
  auto v2 = PlanWrites(r, PureV2(), facts);
  ASSERT_TRUE(v2) << v2.error().Render();
  EXPECT_EQ(Files(*v2),
            (std::vector<std::string>{"/cg/c1/pids.max=max", "/cg/c1/memory.swap.max=max",
                                      "/cg/c1/memory.max=max", "/cg/c1/cpu.max=max 100000"}));
  auto v1 = PlanWrites(r, Hybrid(), facts);
  ASSERT_TRUE(v1) << v1.error().Render();
  EXPECT_EQ(Files(*v1),
            (std::vector<std::string>{
                "/v1/pids/c1/pids.max=max", "/v1/memory/c1/memory.memsw.limit_in_bytes=-1",
                "/v1/memory/c1/memory.limit_in_bytes=-1", "/v1/cpu/c1/cpu.cfs_quota_us=-1"}))
      << "unlimited memory lifts the swap limit first, as runc";
}

TEST(CgroupResources, AnUpdateWritesOnlyWhatItSetsAndRaisesSwapBeforeMemory) {
  Resources r;
  r.mutable_memory()->set_limit(256 << 20);
  r.mutable_memory()->set_swap(512 << 20);
  HostFacts facts;
  facts.default_devices = false;
  facts.v1_memory_limit = 64 << 20;
  auto plan = PlanWrites(r, Hybrid(), facts);
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(Files(*plan),
            (std::vector<std::string>{"/v1/memory/c1/memory.memsw.limit_in_bytes=536870912",
                                      "/v1/memory/c1/memory.limit_in_bytes=268435456"}))
      << "memsw may never be below the limit: raised first";
  r.mutable_cpu()->set_period(50000);
  facts.v2_cpu_quota = "20000";
  auto v2 = PlanWrites(r, PureV2(), facts);
  ASSERT_TRUE(v2) << v2.error().Render();
  EXPECT_EQ(Files(*v2).back(), "/cg/c1/cpu.max=20000 50000") << "the quota is kept";
}

TEST(CgroupResources, BlockIoOnBothVersions) {
  Resources r;
  auto* b = r.mutable_block_io();
  b->set_weight(500);
  auto* t = b->add_throttle_read_bps_device();
  t->set_major(8);
  t->set_minor(0);
  t->set_rate(1048576);
  auto* w = b->add_throttle_write_iops_device();
  w->set_major(8);
  w->set_minor(16);
  w->set_rate(100);
  HostFacts facts;
  facts.default_devices = false;
  auto v1 = PlanWrites(r, Hybrid(), facts);
  ASSERT_TRUE(v1) << v1.error().Render();
  EXPECT_EQ(Files(*v1),
            (std::vector<std::string>{"/v1/blkio/c1/blkio.weight=500",
                                      "/v1/blkio/c1/blkio.throttle.read_bps_device=8:0 1048576",
                                      "/v1/blkio/c1/blkio.throttle.write_iops_device=8:16 100"}));
  auto v2 = PlanWrites(r, PureV2(), facts);
  ASSERT_TRUE(v2) << v2.error().Render();
  EXPECT_EQ(Files(*v2),
            (std::vector<std::string>{"/cg/c1/io.weight=4950", "/cg/c1/io.max=8:0 rbps=1048576",
                                      "/cg/c1/io.max=8:16 wiops=100"}));
  facts.bfq = true;
  EXPECT_EQ(Files(*PlanWrites(r, PureV2(), facts))[0], "/cg/c1/io.bfq.weight=500")
      << "BFQ takes the v1 range as it is";
  EXPECT_EQ(Files(*PlanWrites(r, Hybrid(), facts))[0], "/v1/blkio/c1/blkio.bfq.weight=500");
  b->set_leaf_weight(300);
  auto leaf = PlanWrites(r, PureV2(), facts);
  ASSERT_FALSE(leaf);
  EXPECT_EQ(leaf.error().Render(),
            "linux.resources.blockIO.leafWeight: cgroup v2 has no leaf weight");
}

std::string Refusal(const Resources& r, const Routes& routes) {
  HostFacts facts;
  auto plan = PlanWrites(r, routes, facts);
  return plan ? std::string("(planned)") : plan.error().Render();
}

TEST(CgroupResources, WhatALayoutCannotHonourIsRefusedNamingTheProperty) {
  Resources net;
  net.mutable_network()->set_class_id(0x100001);
  EXPECT_EQ(Refusal(net, PureV2()),
            "linux.resources.network.classID: the net_cls controller is neither a mounted "
            "cgroup v1 hierarchy nor enabled for cgroup v2 on this host");
  Resources swappiness;
  swappiness.mutable_memory()->set_swappiness(10);
  EXPECT_EQ(Refusal(swappiness, PureV2()),
            "linux.resources.memory.swappiness: cgroup v2 has no per-group swappiness");
  Resources rt;
  rt.mutable_cpu()->set_realtime_runtime(950000);
  EXPECT_NE(Refusal(rt, PureV2()).find("linux.resources.cpu.realtimeRuntime: "), std::string::npos);
  Resources swap_below;
  swap_below.mutable_memory()->set_limit(100);
  swap_below.mutable_memory()->set_swap(50);
  EXPECT_EQ(Refusal(swap_below, Hybrid()),
            "linux.resources.memory.swap: memory+swap 50 is below memory.limit 100");
  Resources pages;
  pages.add_hugepage_limits()->set_page_size("2MB");
  Routes no_hugetlb = Hybrid();
  no_hugetlb.erase("hugetlb");
  EXPECT_EQ(Refusal(pages, no_hugetlb).rfind("linux.resources.hugepageLimits[0]: the hugetlb", 0),
            0u);
  Resources bad_device;
  bad_device.add_devices()->set_type("x");
  EXPECT_EQ(Refusal(bad_device, Hybrid()), "linux.resources.devices[0].type: 'x' is not a, b or c");
}

TEST(CgroupResources, AJoinedGroupIsNotWritten) {
  Routes routes = Hybrid();
  routes["memory"].owned = false;
  Resources r;
  r.mutable_memory()->set_limit(1 << 30);
  EXPECT_EQ(Refusal(r, routes),
            "linux.resources.memory.limit: the group /v1/memory/c1 existed before the "
            "container, and brig changes no group it did not make");
  Resources none;
  routes["devices"].owned = false;
  auto plan = PlanWrites(none, routes, HostFacts{});
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_TRUE(plan->writes.empty()) << "runc's default device rules are not imposed on it";
  none.add_devices()->set_access("rwm");
  EXPECT_EQ(Refusal(none, routes).rfind("linux.resources.devices: the group", 0), 0u);
}

TEST(CgroupResources, UnifiedKeysGoToTheV2GroupOnlyForItsControllers) {
  Resources r;
  (*r.mutable_unified())["memory.high"] = "100000000";
  (*r.mutable_unified())["io.max"] = "8:0 rbps=1\n8:16 wbps=2\n";
  auto plan = PlanWrites(r, PureV2(), HostFacts{});
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(Files(*plan),
            (std::vector<std::string>{"/cg/c1/io.max=8:0 rbps=1", "/cg/c1/io.max=8:16 wbps=2",
                                      "/cg/c1/memory.high=100000000"}));
  EXPECT_EQ(plan->writes[0].property, "linux.resources.unified.io.max");
  Resources v1_key;
  (*v1_key.mutable_unified())["memory.high"] = "1";
  EXPECT_EQ(Refusal(v1_key, Hybrid()),
            "linux.resources.unified.memory.high: the memory controller is not enabled for "
            "cgroup v2 here (it is a v1 hierarchy)");
  Resources hugetlb_key;
  (*hugetlb_key.mutable_unified())["hugetlb.2MB.max"] = "0";
  EXPECT_TRUE(PlanWrites(hugetlb_key, Hybrid(), HostFacts{})) << "hugetlb is on v2 there";
  for (const char* bad : {"../x", "memory", "cgroup.procs", "a/b.c"}) {
    Resources k;
    (*k.mutable_unified())[bad] = "1";
    EXPECT_NE(Refusal(k, PureV2()).find("linux.resources.unified."), std::string::npos) << bad;
  }
  Routes no_v2 = Hybrid();
  no_v2.erase("cgroup");
  no_v2.erase("hugetlb");
  EXPECT_EQ(Refusal(hugetlb_key, no_v2),
            "linux.resources.unified.hugetlb.2MB.max: this host has no cgroup v2 mount");
}

TEST(CgroupResources, DeviceRulesAreAppliedAtCreateAndOnlyIfGivenOnUpdate) {
  Resources none;
  HostFacts facts;
  auto create = PlanWrites(none, Hybrid(), facts);
  ASSERT_TRUE(create);
  ASSERT_FALSE(create->writes.empty());
  EXPECT_EQ(Files(*create)[0], "/v1/devices/c1/devices.deny=a") << "runc's start: deny all";
  facts.default_devices = false;
  EXPECT_TRUE(PlanWrites(none, Hybrid(), facts)->writes.empty());
  Resources allow_all;
  allow_all.add_devices()->set_allow(true);
  auto all = PlanWrites(allow_all, Hybrid(), facts);
  ASSERT_TRUE(all);
  EXPECT_EQ(Files(*all)[0], "/v1/devices/c1/devices.allow=a")
      << "an \"a\" rule starts the list afresh";
}

TEST(CgroupConversions, AsRunc) {
  EXPECT_EQ(CpuWeightFromShares(0), 0u);
  EXPECT_EQ(CpuWeightFromShares(2), 1u);
  EXPECT_EQ(CpuWeightFromShares(1024), 100u);
  EXPECT_EQ(CpuWeightFromShares(262144), 10000u);
  EXPECT_EQ(CpuWeightFromShares(512), 59u);
  EXPECT_EQ(IoWeightFromBlkioWeight(10), 1u);
  EXPECT_EQ(IoWeightFromBlkioWeight(1000), 10000u);
}

DeviceAccess Rule(bool allow, char type, int64_t major, int64_t minor, uint32_t access) {
  return DeviceAccess{allow, type, major, minor, access};
}

TEST(CgroupDevices, EmulatedAsTheV1ControllerKeepsThem) {
  // Deny all, allow /dev/null read-write, then take its write away again.
  auto list = EmulateDevices({Rule(false, 'a', -1, -1, kDevAll),
                              Rule(true, 'c', 1, 3, kDevRead | kDevWrite),
                              Rule(false, 'c', 1, 3, kDevWrite)});
  EXPECT_FALSE(list.default_allow);
  ASSERT_EQ(list.exceptions.size(), 1u);
  EXPECT_EQ(list.exceptions[0].access, kDevRead);
  EXPECT_TRUE(DeviceAllowed(list, 'c', 1, 3, kDevRead));
  EXPECT_FALSE(DeviceAllowed(list, 'c', 1, 3, kDevRead | kDevWrite));
  EXPECT_FALSE(DeviceAllowed(list, 'b', 1, 3, kDevRead));
  // Allow all but block device 8:*; a narrower allow does not split the wildcard (v1).
  auto black = EmulateDevices({Rule(true, 'a', -1, -1, kDevAll), Rule(false, 'b', 8, -1, kDevAll),
                               Rule(true, 'b', 8, 1, kDevAll)});
  EXPECT_TRUE(black.default_allow);
  EXPECT_FALSE(DeviceAllowed(black, 'b', 8, 1, kDevRead));
  EXPECT_TRUE(DeviceAllowed(black, 'b', 9, 1, kDevRead));
  EXPECT_TRUE(AllowsAll(EmulateDevices({Rule(true, 'a', -1, -1, kDevAll)})));
}

TEST(CgroupDevices, RunsDefaultsFollowTheSpecsRules) {
  google::protobuf::RepeatedPtrField<oci::DeviceRule> rules;
  rules.Add()->set_access("rwm");  // deny all, as `runc spec` writes it
  auto all = DeviceRules(rules);
  ASSERT_TRUE(all) << all.error().Render();
  DeviceList list = EmulateDevices(*all);
  EXPECT_FALSE(list.default_allow);
  EXPECT_TRUE(DeviceAllowed(list, 'c', 1, 3, kDevAll)) << "/dev/null";
  EXPECT_TRUE(DeviceAllowed(list, 'c', 136, 7, kDevRead | kDevWrite)) << "a pts";
  EXPECT_TRUE(DeviceAllowed(list, 'b', 8, 0, kDevMknod)) << "mknod of any device";
  EXPECT_FALSE(DeviceAllowed(list, 'b', 8, 0, kDevRead)) << "but not reading a disk";
  EXPECT_EQ(V1DeviceRule(Rule(true, 'c', 136, -1, kDevRead | kDevMknod)), "c 136:* rm");
  rules.Add()->set_access("rwx");
  auto bad = DeviceRules(rules);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Render(),
            "linux.resources.devices[1].access: 'rwx' is not made of r, w and m");
}

// Runs the device program on one request: the instructions DeviceProgram emits, and only
// those, interpreted as the kernel would.
int RunProgram(const std::vector<bpf_insn>& prog, uint32_t type, uint32_t major, uint32_t minor,
               uint32_t access) {
  uint32_t ctx[3] = {access << 16 | type, major, minor};
  uint64_t reg[11] = {};
  for (size_t pc = 0; pc < prog.size(); ++pc) {
    const bpf_insn& i = prog[pc];
    uint64_t& dst = reg[i.dst_reg];
    switch (i.code) {
      case BPF_LDX | BPF_MEM | BPF_W:
        dst = ctx[i.off / 4];
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        dst = static_cast<uint32_t>(dst & i.imm);
        break;
      case BPF_ALU | BPF_RSH | BPF_K:
        dst = static_cast<uint32_t>(dst) >> i.imm;
        break;
      case BPF_ALU | BPF_MOV | BPF_K:
        dst = static_cast<uint32_t>(i.imm);
        break;
      case BPF_ALU | BPF_MOV | BPF_X:
        dst = static_cast<uint32_t>(reg[i.src_reg]);
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (dst != static_cast<uint64_t>(static_cast<int64_t>(i.imm))) pc += i.off;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        if (dst == static_cast<uint64_t>(static_cast<int64_t>(i.imm))) pc += i.off;
        break;
      case BPF_JMP | BPF_EXIT:
        return static_cast<int>(reg[0]);
      default:
        ADD_FAILURE() << "unexpected instruction " << int(i.code);
        return -1;
    }
  }
  ADD_FAILURE() << "ran off the end";
  return -1;
}

TEST(CgroupDevices, TheV2ProgramDecidesAsTheV1ListDoes) {
  std::vector<std::vector<DeviceAccess>> cases = {
      *DeviceRules({}),
      {Rule(true, 'a', -1, -1, kDevAll), Rule(false, 'b', 8, -1, kDevRead | kDevWrite),
       Rule(false, 'c', 1, 5, kDevMknod)},
      {Rule(false, 'a', -1, -1, kDevAll), Rule(true, 'c', -1, 3, kDevRead),
       Rule(true, 'b', 8, 0, kDevAll)},
  };
  for (size_t n = 0; n < cases.size(); ++n) {
    DeviceList list = EmulateDevices(cases[n]);
    auto prog = DeviceProgram(list);
    for (char type : {'c', 'b'}) {
      for (uint32_t major : {1u, 5u, 8u, 10u, 136u}) {
        for (uint32_t minor : {0u, 1u, 2u, 3u, 5u, 200u}) {
          for (uint32_t access = 1; access <= kDevAll; ++access) {
            uint32_t t = type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
            ASSERT_EQ(RunProgram(prog, t, major, minor, access),
                      DeviceAllowed(list, type, major, minor, access) ? 1 : 0)
                << "case " << n << ": " << type << " " << major << ":" << minor << " access "
                << access;
          }
        }
      }
    }
  }
}

// brig run's limits as ResourcesOf hands them to the planner, and the writes the planner
// makes of them: the ones brig run wrote itself before it fed the planner.
constexpr uint64_t kMiB = 1 << 20;
// A fresh v1 memory group's memory.limit_in_bytes.
constexpr uint64_t kV1Unlimited = 9223372036854771712ull;

Plan AllOn(Path p) {
  Plan plan;
  plan.memory = plan.pids = plan.cpu = p;
  return plan;
}

// A sandbox's groups as Groups::ForSandbox routes them: all on v2, or each controller in its v1
// hierarchy beside a v2 group without controllers (this host).
Routes SandboxV2() {
  Routes r;
  for (const char* c : {"cgroup", "memory", "pids", "cpu"}) r[c] = Route{"/v2/s", true, true};
  return r;
}
Routes SandboxV1() {
  Routes r;
  r["cgroup"] = Route{"/v2/s", true, true};
  for (const char* c : {"memory", "pids", "cpu"}) {
    r[c] = Route{std::string("/v1/") + c + "/s", false, true};
  }
  return r;
}

// The writes of `limits` on v2 and on v1, swap accounted.
std::pair<std::vector<std::string>, std::vector<std::string>> NativeWrites(const Limits& limits) {
  HostFacts facts;
  facts.swap_accounting = true;
  facts.default_devices = false;
  facts.v1_memory_limit = kV1Unlimited;
  auto v2 = ResourcesOf(limits, AllOn(Path::kV2), true, false);
  auto v1 = ResourcesOf(limits, AllOn(Path::kV1), true, false);
  EXPECT_TRUE(v2 && v1);
  if (!v2 || !v1) return {};
  auto v2_plan = PlanWrites(*v2, SandboxV2(), facts);
  auto v1_plan = PlanWrites(*v1, SandboxV1(), facts);
  EXPECT_TRUE(v2_plan) << v2_plan.error().Render();
  EXPECT_TRUE(v1_plan) << v1_plan.error().Render();
  if (!v2_plan || !v1_plan) return {};
  return {Files(*v2_plan), Files(*v1_plan)};
}

TEST(CgroupNativeLimits, SwapBeyondMemoryBecomesMemoryPlusSwap) {
  Limits l;
  l.memory = 64 * kMiB;
  l.swap = 32 * kMiB;
  auto r = ResourcesOf(l, AllOn(Path::kV2), true, false);
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->memory().limit(), int64_t{64 * kMiB});
  EXPECT_EQ(r->memory().swap(), int64_t{96 * kMiB}) << "OCI's swap is memory+swap";
  auto [v2, v1] = NativeWrites(l);
  EXPECT_EQ(v2, (std::vector<std::string>{"/v2/s/memory.swap.max=33554432",
                                          "/v2/s/memory.max=67108864", "/v2/s/memory.oom.group=1"}))
      << "memory.swap.max is the swap alone again";
  EXPECT_EQ(v1, (std::vector<std::string>{"/v1/memory/s/memory.limit_in_bytes=67108864",
                                          "/v1/memory/s/memory.memsw.limit_in_bytes=100663296"}));
}

TEST(CgroupNativeLimits, NoSwapIsNoneBeyondMemory) {
  Limits l;
  l.memory = 64 * kMiB;
  l.swap = 0;
  auto [v2, v1] = NativeWrites(l);
  EXPECT_EQ(v2, (std::vector<std::string>{"/v2/s/memory.swap.max=0", "/v2/s/memory.max=67108864",
                                          "/v2/s/memory.oom.group=1"}));
  EXPECT_EQ(v1, (std::vector<std::string>{"/v1/memory/s/memory.limit_in_bytes=67108864",
                                          "/v1/memory/s/memory.memsw.limit_in_bytes=67108864"}));
  l.swap.reset();
  EXPECT_EQ(NativeWrites(l).first[0], "/v2/s/memory.swap.max=0") << "unset is no swap too";
}

TEST(CgroupNativeLimits, UnlimitedSwapWritesNoSwapFile) {
  Limits l;
  l.memory = 64 * kMiB;
  l.swap = UINT64_MAX;
  auto [v2, v1] = NativeWrites(l);
  EXPECT_EQ(v2,
            (std::vector<std::string>{"/v2/s/memory.max=67108864", "/v2/s/memory.oom.group=1"}));
  EXPECT_EQ(v1, (std::vector<std::string>{"/v1/memory/s/memory.limit_in_bytes=67108864"}));
}

TEST(CgroupNativeLimits, ASwapLimitWithoutSwapAccountingHoldsOnlyWithoutSwap) {
  Limits l;
  l.memory = 64 * kMiB;
  l.swap = 0;
  auto none = ResourcesOf(l, AllOn(Path::kV2), false, false);
  ASSERT_TRUE(none) << none.error().Render();
  EXPECT_FALSE(none->memory().has_swap()) << "no swap in use: nothing to bound";
  EXPECT_EQ(none->memory().limit(), int64_t{64 * kMiB});
  auto refused = ResourcesOf(l, AllOn(Path::kV2), false, true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().Render(),
            "cgroup 'swap': this host has swap but its kernel does not account it per cgroup, "
            "so the swap limit cannot hold (boot with swapaccount=1, or run with --swap "
            "unlimited)");
  l.swap = UINT64_MAX;
  EXPECT_TRUE(ResourcesOf(l, AllOn(Path::kV2), false, true)) << "unlimited swap needs no bound";
}

TEST(CgroupNativeLimits, CpuThousandthsAreAQuotaOfTheHundredMillisecondPeriod) {
  for (auto [milli, quota] : {std::pair<uint64_t, std::string>{500, "50000"},
                              {10, "1000"},
                              {2500, "250000"},
                              {1024000, "102400000"}}) {
    Limits l;
    l.cpu_milli = milli;
    auto r = ResourcesOf(l, AllOn(Path::kV2), true, false);
    ASSERT_TRUE(r) << r.error().Render();
    EXPECT_EQ(r->cpu().period(), kCpuPeriodUs);
    auto [v2, v1] = NativeWrites(l);
    EXPECT_EQ(v2, (std::vector<std::string>{"/v2/s/cpu.max=" + quota + " 100000",
                                            "/v2/s/memory.oom.group=1"}))
        << milli;
    EXPECT_EQ(v1, (std::vector<std::string>{"/v1/cpu/s/cpu.cfs_period_us=100000",
                                            "/v1/cpu/s/cpu.cfs_quota_us=" + quota}))
        << milli;
  }
}

TEST(CgroupNativeLimits, PidsAndTheOomGroupOnlyOnV2) {
  Limits l;
  l.pids = 64;
  auto [v2, v1] = NativeWrites(l);
  EXPECT_EQ(v2, (std::vector<std::string>{"/v2/s/pids.max=64", "/v2/s/memory.oom.group=1"}))
      << "memory on v2 ends the whole sandbox on an OOM kill, memory limit or not";
  EXPECT_EQ(v1, (std::vector<std::string>{"/v1/pids/s/pids.max=64"}));
  Plan mixed = AllOn(Path::kV2);
  mixed.memory = Path::kMissing;
  EXPECT_TRUE(ResourcesOf(l, mixed, false, false)->unified().empty());
}

TEST(CgroupNativeLimits, NoLimitsAreNoWritesAndNoDeviceRules) {
  auto r = ResourcesOf(Limits{}, AllOn(Path::kV1), true, false);
  ASSERT_TRUE(r) << r.error().Render();
  HostFacts facts;
  facts.default_devices = false;
  Routes routes = SandboxV1();
  routes["devices"] = Route{"/v1/devices/s", false, true};
  auto plan = PlanWrites(*r, routes, facts);
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(Files(*plan), std::vector<std::string>{});
  EXPECT_FALSE(plan->v2_devices);
}

}  // namespace
}  // namespace brig::cgroup
