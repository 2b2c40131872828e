#include "fs/kernel_paths.h"

#include <algorithm>

namespace brig::fs {

const std::vector<KernelPath>& KernelPaths() {
  using R = KernelPathRule;
  static const std::vector<KernelPath> paths = {
      {"/proc/acpi", R::kMasked, "ACPI state and events of the host's hardware"},
      {"/proc/asound", R::kMasked, "the host's sound cards and their streams"},
      {"/proc/interrupts", R::kMasked,
       "every interrupt count of the host, per CPU and device: a hardware inventory and a "
       "side channel on other work (Docker GHSA-6fw5-f8r9-fgfm)"},
      {"/proc/kcore", R::kMasked, "the host kernel's memory as an ELF core file"},
      {"/proc/keys", R::kMasked, "the kernel keyrings the caller can view, with descriptions"},
      {"/proc/latency_stats", R::kMasked, "kernel latency records of host processes"},
      {"/proc/sched_debug", R::kMasked, "the scheduler's state: every task on the host, by name"},
      {"/proc/scsi", R::kMasked, "the host's SCSI devices; writes add and remove devices"},
      {"/proc/timer_list", R::kMasked, "every pending timer of the host, with its owner"},
      {"/proc/timer_stats", R::kMasked, "timer statistics of host processes (old kernels)"},
      {"/proc/bus", R::kReadOnly, "PCI and USB configuration space"},
      {"/proc/fs", R::kReadOnly, "file system tunables (nfsd, ...)"},
      {"/proc/irq", R::kReadOnly, "interrupt affinity of the host's devices"},
      {"/proc/sys", R::kReadOnly,
       "kernel parameters (sysctl), those of the sandbox's own namespaces included"},
      {"/proc/sysrq-trigger", R::kReadOnly, "a write reboots, syncs or crashes the host"},
      {"/sys", R::kAbsent,
       "no sysfs: what Docker masks there is absent with the rest (/sys/firmware: firmware "
       "tables; /sys/devices/virtual/powercap: energy counters, a side channel, Docker "
       "GHSA-jq35-85cj-fj4p; /sys/devices/system/cpu/cpu*/thermal_throttle: Docker "
       "GHSA-6fw5-f8r9-fgfm)"},
  };
  return paths;
}

const char* KernelPathRuleName(KernelPathRule rule) {
  switch (rule) {
    case KernelPathRule::kMasked:
      return "masked";
    case KernelPathRule::kReadOnly:
      return "read-only";
    case KernelPathRule::kAbsent:
      return "absent";
  }
  return "?";
}

std::string FormatKernelPaths() {
  size_t width = 4;
  for (const auto& p : KernelPaths()) width = std::max(width, std::string(p.path).size());
  auto row = [&](const std::string& path, const std::string& rule, const std::string& why) {
    return path + std::string(width - path.size() + 2, ' ') + rule +
           std::string(11 - rule.size(), ' ') + why + "\n";
  };
  std::string out = row("PATH", "RULE", "WHY");
  for (const auto& p : KernelPaths()) out += row(p.path, KernelPathRuleName(p.rule), p.why);
  return out;
}

}  // namespace brig::fs
