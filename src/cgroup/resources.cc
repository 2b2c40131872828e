// An OCI Resources as control-file writes, for v1 and v2 alike (cgroup/resources.h). Pure:
// the facts about the host come in as arguments.
#include "cgroup/resources.h"

#include <algorithm>
#include <cmath>

#include "cgroup/device_filter.h"
#include "util/parse.h"

namespace brig::cgroup {

using oci::DeviceRule;
using oci::HugepageLimit;
using oci::InterfacePriority;
using oci::NetworkResources;
using oci::Resources;
using oci::ThrottleDevice;
using oci::WeightDevice;

namespace {

using util::Split;

constexpr char kNoSwapAccounting[] =
    "this host has swap but its kernel does not account it per cgroup, so the swap limit "
    "cannot hold (boot with swapaccount=1, or run with --swap unlimited)";

std::string Prop(const std::string& name) { return "linux.resources." + name; }

std::string Indexed(const std::string& name, int i) {
  return Prop(name) + "[" + std::to_string(i) + "]";
}

// A v2 limit: -1 is "max".
std::string V2Number(int64_t v) { return v == -1 ? std::string("max") : std::to_string(v); }

// The writes being planned, and the routes they go by.
class Planner {
 public:
  Planner(const Routes& routes, const HostFacts& facts) : routes_(routes), facts_(facts) {}

  // The route of the first controller of `names` this host has, for `property`; refused
  // if there is none, or if brig did not make its group.
  Result<const Route*> For(const std::string& property, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      auto it = routes_.find(n);
      if (it == routes_.end()) continue;
      if (!it->second.owned) {
        return Fail(property, "",
                    "the group " + it->second.dir +
                        " existed before the container, and brig changes no group it did not "
                        "make",
                    ErrorKind::kBadInput);
      }
      return &it->second;
    }
    return Fail(property, "",
                std::string("the ") + *names.begin() +
                    " controller is neither a mounted cgroup v1 hierarchy nor enabled for "
                    "cgroup v2 on this host",
                ErrorKind::kBadInput);
  }
  void Add(const std::string& property, const Route& to, const std::string& file,
           const std::string& value) {
    plan_.writes.push_back({property, to.dir, file, value});
  }

  Status Memory(const oci::Memory& m);
  Status Cpu(const oci::Cpu& c);
  Status BlockIo(const oci::BlockIo& b);
  Status Hugepages(const google::protobuf::RepeatedPtrField<HugepageLimit>& limits);
  Status Network(const NetworkResources& n);
  Status Devices(const google::protobuf::RepeatedPtrField<DeviceRule>& rules);
  Status Unified(const google::protobuf::Map<std::string, std::string>& unified);

  WritePlan Take() { return std::move(plan_); }
  WritePlan& plan() { return plan_; }
  const HostFacts& facts() const { return facts_; }

 private:
  const Routes& routes_;
  const HostFacts& facts_;
  WritePlan plan_;
};

Status CheckLimit(const std::string& property, int64_t v) {
  if (v < -1) {
    return BadInput(property, "", std::to_string(v) + " is not a limit (bytes, or -1 for none)");
  }
  return {};
}

Status Planner::Memory(const oci::Memory& m) {
  int64_t limit = m.has_limit() ? m.limit() : 0, swap = m.has_swap() ? m.swap() : 0;
  int64_t reservation = m.has_reservation() ? m.reservation() : 0;
  bool swappiness = m.has_swappiness() && m.swappiness() != UINT64_MAX;  // -1: unset (runc)
  bool no_oom_killer = m.disable_oom_killer();
  // kernel, kernelTCP, useHierarchy: ignored, as runc ignores them (gone from the kernel).
  if (!limit && !swap && !reservation && !swappiness && !no_oom_killer) return {};
  BRIG_TRY(CheckLimit(Prop("memory.limit"), limit));
  BRIG_TRY(CheckLimit(Prop("memory.swap"), swap));
  BRIG_TRY(CheckLimit(Prop("memory.reservation"), reservation));
  if (swap > 0 && limit > 0 && swap < limit) {
    return BadInput(
        Prop("memory.swap"), "",
        "memory+swap " + std::to_string(swap) + " is below memory.limit " + std::to_string(limit));
  }
  const char* first = limit         ? "memory.limit"
                      : swap        ? "memory.swap"
                      : reservation ? "memory.reservation"
                      : swappiness  ? "memory.swappiness"
                                    : "memory.disableOOMKiller";
  const Route& to = *BRIG_TRY(For(Prop(first), {"memory"}));
  if (to.v2) {
    if (swappiness) {
      return BadInput(Prop("memory.swappiness"), "", "cgroup v2 has no per-group swappiness");
    }
    if (no_oom_killer) {
      return BadInput(Prop("memory.disableOOMKiller"), "",
                      "cgroup v2 cannot turn the OOM killer off for a group");
    }
    // The spec's swap is memory+swap; memory.swap.max is swap alone (runc's conversion).
    std::optional<std::string> swap_max;
    if (limit == -1 && swap == 0) {
      if (facts_.swap_accounting) swap_max = "max";
    } else if (swap == -1) {
      swap_max = "max";
    } else if (swap > 0 && limit == -1) {
      swap_max = std::to_string(swap);
    } else if (swap > 0 && limit == 0) {
      return BadInput(Prop("memory.swap"), "", "a swap limit needs memory.limit on cgroup v2");
    } else if (swap > 0) {
      swap_max = std::to_string(swap - limit);
    }
    if (swap_max) Add(Prop("memory.swap"), to, "memory.swap.max", *swap_max);
    if (limit) Add(Prop("memory.limit"), to, "memory.max", V2Number(limit));
    if (reservation) Add(Prop("memory.reservation"), to, "memory.low", V2Number(reservation));
    return {};
  }
  // v1: memory.memsw.limit_in_bytes may never be below memory.limit_in_bytes, so a raise
  // of both goes swap first, a cut limit first (runc).
  if (limit == -1 && swap == 0 && facts_.swap_accounting) swap = -1;
  bool swap_first =
      limit && swap &&
      (swap == -1 || facts_.v1_memory_limit.value_or(UINT64_MAX) < static_cast<uint64_t>(swap));
  auto write_swap = [&] {
    if (swap) Add(Prop("memory.swap"), to, "memory.memsw.limit_in_bytes", std::to_string(swap));
  };
  if (swap_first) write_swap();
  if (limit) Add(Prop("memory.limit"), to, "memory.limit_in_bytes", std::to_string(limit));
  if (!swap_first) write_swap();
  if (reservation) {
    Add(Prop("memory.reservation"), to, "memory.soft_limit_in_bytes", std::to_string(reservation));
  }
  if (no_oom_killer) Add(Prop("memory.disableOOMKiller"), to, "memory.oom_control", "1");
  if (swappiness) {
    if (m.swappiness() > 100) {
      return BadInput(Prop("memory.swappiness"), "",
                      std::to_string(m.swappiness()) + " is not within 0 to 100");
    }
    Add(Prop("memory.swappiness"), to, "memory.swappiness", std::to_string(m.swappiness()));
  }
  return {};
}

Status Planner::Cpu(const oci::Cpu& c) {
  bool shares = c.has_shares() && c.shares() != 0;
  bool quota = c.has_quota() && c.quota() != 0, period = c.has_period() && c.period() != 0;
  bool rt = (c.has_realtime_runtime() && c.realtime_runtime() != 0) ||
            (c.has_realtime_period() && c.realtime_period() != 0);
  if (shares || quota || period || c.has_burst() || c.has_idle() || rt) {
    const char* first = shares          ? "cpu.shares"
                        : quota         ? "cpu.quota"
                        : period        ? "cpu.period"
                        : c.has_burst() ? "cpu.burst"
                        : c.has_idle()  ? "cpu.idle"
                                        : "cpu.realtimeRuntime";
    const Route& to = *BRIG_TRY(For(Prop(first), {"cpu"}));
    if (quota && c.quota() < -1) {
      return BadInput(Prop("cpu.quota"), "", std::to_string(c.quota()) + " is not a quota");
    }
    if (to.v2) {
      if (rt) {
        return BadInput(Prop("cpu.realtimeRuntime"), "",
                        "cgroup v2 has no real-time bandwidth per group");
      }
      if (c.has_idle()) Add(Prop("cpu.idle"), to, "cpu.idle", std::to_string(c.idle()));
      if (shares) {
        Add(Prop("cpu.shares"), to, "cpu.weight", std::to_string(CpuWeightFromShares(c.shares())));
      }
      if (quota || period) {
        std::string q = !quota          ? facts_.v2_cpu_quota
                        : c.quota() > 0 ? std::to_string(c.quota())
                                        : std::string("max");
        Add(Prop(quota ? "cpu.quota" : "cpu.period"), to, "cpu.max",
            q + " " + std::to_string(period ? c.period() : 100000));
      }
      if (c.has_burst()) Add(Prop("cpu.burst"), to, "cpu.max.burst", std::to_string(c.burst()));
    } else {
      if (shares) Add(Prop("cpu.shares"), to, "cpu.shares", std::to_string(c.shares()));
      if (period) Add(Prop("cpu.period"), to, "cpu.cfs_period_us", std::to_string(c.period()));
      if (quota) Add(Prop("cpu.quota"), to, "cpu.cfs_quota_us", std::to_string(c.quota()));
      if (c.has_burst()) Add(Prop("cpu.burst"), to, "cpu.cfs_burst_us", std::to_string(c.burst()));
      if (c.has_idle()) Add(Prop("cpu.idle"), to, "cpu.idle", std::to_string(c.idle()));
      if (c.has_realtime_period() && c.realtime_period() != 0) {
        Add(Prop("cpu.realtimePeriod"), to, "cpu.rt_period_us",
            std::to_string(c.realtime_period()));
      }
      if (c.has_realtime_runtime() && c.realtime_runtime() != 0) {
        Add(Prop("cpu.realtimeRuntime"), to, "cpu.rt_runtime_us",
            std::to_string(c.realtime_runtime()));
      }
    }
  }
  if (!c.cpus().empty() || !c.mems().empty()) {
    const Route& to = *BRIG_TRY(For(Prop(c.cpus().empty() ? "cpu.mems" : "cpu.cpus"), {"cpuset"}));
    if (!c.cpus().empty()) Add(Prop("cpu.cpus"), to, "cpuset.cpus", c.cpus());
    if (!c.mems().empty()) Add(Prop("cpu.mems"), to, "cpuset.mems", c.mems());
  }
  return {};
}

std::string DeviceNumbers(int64_t major, int64_t minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

Status Planner::BlockIo(const oci::BlockIo& b) {
  bool weight = b.has_weight() && b.weight() != 0;
  bool leaf = b.has_leaf_weight() && b.leaf_weight() != 0;
  if (!weight && !leaf && b.weight_device().empty() && b.throttle_read_bps_device().empty() &&
      b.throttle_write_bps_device().empty() && b.throttle_read_iops_device().empty() &&
      b.throttle_write_iops_device().empty()) {
    return {};
  }
  const Route& to = *BRIG_TRY(For(Prop("blockIO"), {"blkio", "io"}));
  auto check_weight = [](const std::string& property, uint32_t w) -> Status {
    if (w < 10 || w > 1000) {
      return BadInput(property, "", std::to_string(w) + " is not within 10 to 1000");
    }
    return {};
  };
  if (weight) {
    BRIG_TRY(check_weight(Prop("blockIO.weight"), b.weight()));
    if (to.v2 && !facts_.bfq) {
      Add(Prop("blockIO.weight"), to, "io.weight",
          std::to_string(IoWeightFromBlkioWeight(b.weight())));
    } else {
      Add(Prop("blockIO.weight"), to,
          to.v2        ? "io.bfq.weight"
          : facts_.bfq ? "blkio.bfq.weight"
                       : "blkio.weight",
          std::to_string(b.weight()));
    }
  }
  if (leaf) {
    if (to.v2) return BadInput(Prop("blockIO.leafWeight"), "", "cgroup v2 has no leaf weight");
    Add(Prop("blockIO.leafWeight"), to, "blkio.leaf_weight", std::to_string(b.leaf_weight()));
  }
  for (int i = 0; i < b.weight_device().size(); ++i) {
    const WeightDevice& d = b.weight_device(i);
    std::string property = Indexed("blockIO.weightDevice", i);
    std::string dev = DeviceNumbers(d.major(), d.minor());
    if (d.has_weight() && d.weight() != 0) {
      BRIG_TRY(check_weight(property + ".weight", d.weight()));
      if (to.v2) {
        uint64_t w = facts_.bfq ? d.weight() : IoWeightFromBlkioWeight(d.weight());
        Add(property, to, facts_.bfq ? "io.bfq.weight" : "io.weight",
            dev + " " + std::to_string(w));
      } else {
        Add(property, to, facts_.bfq ? "blkio.bfq.weight_device" : "blkio.weight_device",
            dev + " " + std::to_string(d.weight()));
      }
    }
    if (d.has_leaf_weight() && d.leaf_weight() != 0) {
      if (to.v2) return BadInput(property + ".leafWeight", "", "cgroup v2 has no leaf weight");
      Add(property, to, "blkio.leaf_weight_device", dev + " " + std::to_string(d.leaf_weight()));
    }
  }
  struct Throttle {
    const google::protobuf::RepeatedPtrField<ThrottleDevice>& devices;
    const char *name, *v1_file, *v2_key;
  };
  const Throttle throttles[] = {
      {b.throttle_read_bps_device(), "blockIO.throttleReadBpsDevice",
       "blkio.throttle.read_bps_device", "rbps"},
      {b.throttle_write_bps_device(), "blockIO.throttleWriteBpsDevice",
       "blkio.throttle.write_bps_device", "wbps"},
      {b.throttle_read_iops_device(), "blockIO.throttleReadIOPSDevice",
       "blkio.throttle.read_iops_device", "riops"},
      {b.throttle_write_iops_device(), "blockIO.throttleWriteIOPSDevice",
       "blkio.throttle.write_iops_device", "wiops"},
  };
  for (const auto& t : throttles) {
    for (int i = 0; i < t.devices.size(); ++i) {
      const ThrottleDevice& d = t.devices[i];
      std::string dev = DeviceNumbers(d.major(), d.minor()), rate = std::to_string(d.rate());
      if (to.v2) {
        Add(Indexed(t.name, i), to, "io.max", dev + " " + t.v2_key + "=" + rate);
      } else {
        Add(Indexed(t.name, i), to, t.v1_file, dev + " " + rate);
      }
    }
  }
  return {};
}

bool Alnum(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

Status Planner::Hugepages(const google::protobuf::RepeatedPtrField<HugepageLimit>& limits) {
  for (int i = 0; i < limits.size(); ++i) {
    const HugepageLimit& l = limits[i];
    std::string property = Indexed("hugepageLimits", i);
    if (!Alnum(l.page_size())) {
      return BadInput(property + ".pageSize", l.page_size(), "not a page size such as 2MB");
    }
    const Route& to = *BRIG_TRY(For(property, {"hugetlb"}));
    Add(property, to, "hugetlb." + l.page_size() + (to.v2 ? ".max" : ".limit_in_bytes"),
        std::to_string(l.limit()));
  }
  return {};
}

Status Planner::Network(const NetworkResources& n) {
  if (n.has_class_id()) {
    const Route& to = *BRIG_TRY(For(Prop("network.classID"), {"net_cls"}));
    Add(Prop("network.classID"), to, "net_cls.classid", std::to_string(n.class_id()));
  }
  for (int i = 0; i < n.priorities().size(); ++i) {
    const InterfacePriority& p = n.priorities(i);
    std::string property = Indexed("network.priorities", i);
    const Route& to = *BRIG_TRY(For(property, {"net_prio"}));
    bool plain = !p.name().empty() && std::none_of(p.name().begin(), p.name().end(), [](char c) {
      return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
    });
    if (!plain) return BadInput(property + ".name", p.name(), "not an interface name");
    Add(property, to, "net_prio.ifpriomap", p.name() + " " + std::to_string(p.priority()));
  }
  return {};
}

Status Planner::Devices(const google::protobuf::RepeatedPtrField<DeviceRule>& given) {
  if (given.empty() && !facts_.default_devices) return {};
  std::vector<DeviceAccess> rules = BRIG_TRY(DeviceRules(given));
  std::string property = Prop("devices");
  // runc's defaults are not imposed on a joined group; rules the spec gives are refused
  // there (For).
  auto joined = [&](const char* name) {
    auto it = routes_.find(name);
    return it != routes_.end() && !it->second.owned;
  };
  if (given.empty() && (joined("devices") || (!routes_.count("devices") && joined("cgroup")))) {
    return {};
  }
  if (routes_.count("devices")) {
    const Route& to = *BRIG_TRY(For(property, {"devices"}));
    // From "deny all" (runc's start), or from the last rule about every device: what came
    // before it no longer counts.
    size_t from = 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      if (rules[i].type == 'a') from = i;
    }
    if (rules[from].type != 'a') Add(property, to, "devices.deny", "a");
    for (size_t i = from; i < rules.size(); ++i) {
      Add(property, to, rules[i].allow ? "devices.allow" : "devices.deny", V1DeviceRule(rules[i]));
    }
    return {};
  }
  if (routes_.count("cgroup")) {
    BRIG_TRY(For(property, {"cgroup"}));
    plan_.v2_devices = true;
    return {};
  }
  if (!given.empty() && !AllowsAll(EmulateDevices(rules))) {
    return BadInput(property, "",
                    "this host has neither a v1 devices hierarchy nor cgroup v2 to filter "
                    "devices with");
  }
  return {};
}

Status Planner::Unified(const google::protobuf::Map<std::string, std::string>& unified) {
  // In name order: a map has none of its own.
  std::vector<std::string> keys;
  for (const auto& [k, v] : unified) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  for (const auto& key : keys) {
    std::string property = Prop("unified") + "." + key;
    size_t dot = key.find('.');
    bool plain = std::none_of(key.begin(), key.end(), [](char c) {
      return c == '/' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
    });
    if (!plain || dot == 0 || dot == std::string::npos || dot + 1 == key.size()) {
      return BadInput(property, "", "not a cgroup v2 file name such as memory.high");
    }
    std::string controller = key.substr(0, dot);
    if (key == "cgroup.procs" || key == "cgroup.threads" || key == "cgroup.kill" ||
        key == "cgroup.freeze") {
      return BadInput(property, "", "brig itself moves, freezes and kills the container");
    }
    if (!routes_.count("cgroup")) {
      return BadInput(property, "", "this host has no cgroup v2 mount");
    }
    auto it = routes_.find(controller);
    if (controller != "cgroup" && (it == routes_.end() || !it->second.v2)) {
      return BadInput(property, "",
                      "the " + controller + " controller is not enabled for cgroup v2 here" +
                          (it == routes_.end() ? "" : " (it is a v1 hierarchy)"));
    }
    const Route& to = *BRIG_TRY(For(property, {controller.c_str()}));
    // One write a line, as runc: io.max takes one device at a time.
    for (auto line : Split(unified.at(key), '\n')) {
      if (!line.empty()) Add(property, to, key, std::string(line));
    }
  }
  return {};
}

}  // namespace

Result<WritePlan> PlanWrites(const Resources& r, const Routes& routes, const HostFacts& facts) {
  Planner p(routes, facts);
  // runc's order on v2 (pids, memory, io, cpu, devices, cpuset, hugetlb, unified last): a
  // unified key overrides what the typed properties wrote.
  if (r.has_pids()) {
    const Route& to = *BRIG_TRY(p.For(Prop("pids.limit"), {"pids"}));
    int64_t limit = r.pids().limit();
    p.Add(Prop("pids.limit"), to, "pids.max", limit > 0 ? std::to_string(limit) : "max");
  }
  if (r.has_memory()) BRIG_TRY(p.Memory(r.memory()));
  if (r.has_block_io()) BRIG_TRY(p.BlockIo(r.block_io()));
  if (r.has_cpu()) BRIG_TRY(p.Cpu(r.cpu()));
  BRIG_TRY(p.Devices(r.devices()));
  BRIG_TRY(p.Hugepages(r.hugepage_limits()));
  if (r.has_network()) BRIG_TRY(p.Network(r.network()));
  BRIG_TRY(p.Unified(r.unified()));
  return p.Take();
}

Result<Resources> ResourcesOf(const Limits& limits, const Plan& plan, bool swap_accounted,
                              bool swap_in_use) {
  // The spec's numbers are int64; brig's own never come near (util::ParseSize).
  auto int64 = [](uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); };
  Resources r;
  if (limits.pids) r.mutable_pids()->set_limit(int64(*limits.pids));
  if (limits.cpu_milli) {
    r.mutable_cpu()->set_quota(int64(*limits.cpu_milli * kCpuPeriodUs / 1000));
    r.mutable_cpu()->set_period(kCpuPeriodUs);
  }
  if (plan.memory == Path::kV2) (*r.mutable_unified())["memory.oom.group"] = "1";
  if (!limits.memory) return r;
  int64_t memory = int64(*limits.memory);
  r.mutable_memory()->set_limit(memory);
  uint64_t swap = limits.swap.value_or(0);
  if (swap == UINT64_MAX) return r;
  if (!swap_accounted) {
    if (swap_in_use) return Fail("cgroup", "swap", kNoSwapAccounting, ErrorKind::kSetup);
    return r;
  }
  r.mutable_memory()->set_swap(swap > uint64_t{INT64_MAX} - memory ? INT64_MAX
                                                                   : memory + int64(swap));
  return r;
}

std::set<std::string> V2ControllersFor(const Resources& r) {
  std::set<std::string> out;
  if (r.has_pids()) out.insert("pids");
  const auto& m = r.memory();
  if (m.has_limit() || m.has_swap() || m.has_reservation()) out.insert("memory");
  const auto& c = r.cpu();
  if (c.has_shares() || c.has_quota() || c.has_period() || c.has_burst() || c.has_idle()) {
    out.insert("cpu");
  }
  if (!c.cpus().empty() || !c.mems().empty()) out.insert("cpuset");
  if (r.has_block_io()) out.insert("io");
  if (!r.hugepage_limits().empty()) out.insert("hugetlb");
  for (const auto& [key, value] : r.unified()) {
    std::string controller = key.substr(0, key.find('.'));
    if (controller != "cgroup" && !controller.empty()) out.insert(controller);
  }
  return out;
}

uint64_t CpuWeightFromShares(uint64_t shares) {
  // runc's quadratic fit in log2(shares) through (2, 1), (1024, 100) and (262144, 10000):
  // the v1 and v2 defaults map onto each other and the ranges' ends too.
  if (shares == 0) return 0;
  if (shares <= 2) return 1;
  if (shares >= 262144) return 10000;
  double l = std::log2(static_cast<double>(shares));
  double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
  return static_cast<uint64_t>(std::ceil(std::pow(10, exponent)));
}

uint64_t IoWeightFromBlkioWeight(uint64_t weight) {
  // [10, 1000] onto [1, 10000], linearly (runc).
  if (weight == 0) return 0;
  return 1 + (weight - 10) * 9999 / 990;
}

}  // namespace brig::cgroup
