// Device rules for a container's cgroups (an OCI container's linux.resources.devices; brig
// run's sandbox sets none, its /dev holds only what it allows): the rules checked and
// completed as runc completes them, their meaning as the v1 devices controller gives it (an
// emulation of its allow/deny list), and that meaning as the eBPF program cgroup v2 needs
// instead. Pure but for AttachDeviceFilter, which loads and attaches the program.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "brig/result.h"
#include "proto/oci.pb.h"

namespace brig::cgroup {

// Access bits, as the kernel's BPF_DEVCG_ACC_* (mknod 1, read 2, write 4).
inline constexpr uint32_t kDevMknod = BPF_DEVCG_ACC_MKNOD, kDevRead = BPF_DEVCG_ACC_READ,
                          kDevWrite = BPF_DEVCG_ACC_WRITE;
inline constexpr uint32_t kDevAll = kDevMknod | kDevRead | kDevWrite;

// One rule: type 'a' (every device), 'c' or 'b'; major and minor -1 for any.
struct DeviceAccess {
  bool allow = false;
  char type = 'a';
  int64_t major = -1, minor = -1;
  uint32_t access = kDevAll;
  bool operator==(const DeviceAccess&) const = default;
};

// The spec's rules, checked (an error names linux.resources.devices[i]), followed by the
// devices every container may use, as runc appends them: mknod of any device, and
// /dev/null, zero, full, random, urandom, tty, ptmx, the pts devices and /dev/net/tun.
// Like runc, the list starts from "deny all": an "a" rule is needed to allow everything.
Result<std::vector<DeviceAccess>> DeviceRules(
    const google::protobuf::RepeatedPtrField<oci::DeviceRule>& rules);

// A rule as devices.allow and devices.deny take it: "a", "c 1:3 rwm", "b *:* m".
std::string V1DeviceRule(const DeviceAccess& r);

// What a v1 devices group holds after `rules` are written to it in order, starting from
// "deny all": allow everything but the exceptions, or deny everything but them. A rule
// against the default adds an exception; one with it takes the access it names from the
// exception of exactly that type and numbers (as the kernel does: a wildcard exception
// is not split by a narrower rule).
struct DeviceList {
  bool default_allow = false;
  std::vector<DeviceAccess> exceptions;  // each with allow == !default_allow
};
DeviceList EmulateDevices(const std::vector<DeviceAccess>& rules);
// Whether `list` lets a device of `type` ('c' or 'b') and numbers be used for `access`.
bool DeviceAllowed(const DeviceList& list, char type, uint32_t major, uint32_t minor,
                   uint32_t access);
// Nothing is denied: the list needs no filter.
inline bool AllowsAll(const DeviceList& list) {
  return list.default_allow && list.exceptions.empty();
}

// The BPF_PROG_TYPE_CGROUP_DEVICE program that decides as `list` does (DeviceAllowed).
std::vector<bpf_insn> DeviceProgram(const DeviceList& list);

// Loads `program` and attaches it to the cgroup v2 directory `cgroup_fd` (BPF_F_ALLOW_MULTI,
// as runc), then detaches the device programs attached there before it: the new one is in
// force before the old ones go.
Status AttachDeviceFilter(int cgroup_fd, const std::vector<bpf_insn>& program);

}  // namespace brig::cgroup
