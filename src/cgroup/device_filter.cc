// Device rules: checked, completed with runc's defaults, emulated as the v1 controller
// keeps them, and compiled into the cgroup v2 device program (cgroup/device_filter.h).
#include "cgroup/device_filter.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::cgroup {
namespace {

// The devices runc lets every container use, after the spec's own rules (runc's
// specconv.AllowedDevices): mknod of any device, and the devices of the spec's default
// /dev (config-linux.md "Default Devices") with /dev/net/tun.
constexpr DeviceAccess kDefaultDevices[] = {
    {true, 'c', -1, -1, kDevMknod}, {true, 'b', -1, -1, kDevMknod}, {true, 'c', 1, 3, kDevAll},
    {true, 'c', 1, 8, kDevAll},     {true, 'c', 1, 7, kDevAll},     {true, 'c', 5, 0, kDevAll},
    {true, 'c', 1, 5, kDevAll},     {true, 'c', 1, 9, kDevAll},     {true, 'c', 136, -1, kDevAll},
    {true, 'c', 5, 2, kDevAll},     {true, 'c', 10, 200, kDevAll},
};

Error BadRule(int i, const char* field, std::string detail) {
  return BadInput("linux.resources.devices[" + std::to_string(i) + "]." + field, "",
                  std::move(detail));
}

// Majors and minors are u32 to the kernel; the program compares them as 32-bit immediates.
Result<int64_t> DeviceNumber(int i, const char* field, bool has, int64_t v) {
  if (!has || v == -1) return int64_t{-1};
  if (v < 0 || v > INT32_MAX) {
    return BadRule(i, field, std::to_string(v) + " is not a device number");
  }
  return v;
}

bool Same(const DeviceAccess& a, const DeviceAccess& b) {
  return a.type == b.type && a.major == b.major && a.minor == b.minor;
}

// Whether exception `e` covers a device of `type` and numbers at all.
bool Covers(const DeviceAccess& e, char type, uint32_t major, uint32_t minor) {
  return e.type == type && (e.major == -1 || e.major == major) &&
         (e.minor == -1 || e.minor == minor);
}

// Instruction builders for the few forms the program uses.
bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i;
  std::memset(&i, 0, sizeof i);
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}
bpf_insn LoadWord(uint8_t dst, int16_t off) {
  return Insn(BPF_LDX | BPF_MEM | BPF_W, dst, BPF_REG_1, off, 0);
}
bpf_insn Alu32(uint8_t op, uint8_t dst, int32_t imm) {
  return Insn(BPF_ALU | op | BPF_K, dst, 0, 0, imm);
}
bpf_insn JumpImm(uint8_t op, uint8_t dst, int32_t imm) {
  return Insn(BPF_JMP | op | BPF_K, dst, 0, 0, imm);
}

}  // namespace

Result<std::vector<DeviceAccess>> DeviceRules(
    const google::protobuf::RepeatedPtrField<oci::DeviceRule>& rules) {
  std::vector<DeviceAccess> out;
  for (int i = 0; i < rules.size(); ++i) {
    const oci::DeviceRule& r = rules[i];
    DeviceAccess a;
    a.allow = r.allow();
    const std::string& type = r.type();
    if (type.empty() || type == "a" || type == "c" || type == "b") {
      a.type = type.empty() ? 'a' : type[0];
    } else {
      return BadRule(i, "type", "'" + type + "' is not a, b or c");
    }
    a.major = BRIG_TRY(DeviceNumber(i, "major", r.has_major(), r.major()));
    a.minor = BRIG_TRY(DeviceNumber(i, "minor", r.has_minor(), r.minor()));
    if (!r.access().empty()) {
      a.access = 0;
      for (char c : r.access()) {
        if (c == 'r') {
          a.access |= kDevRead;
        } else if (c == 'w') {
          a.access |= kDevWrite;
        } else if (c == 'm') {
          a.access |= kDevMknod;
        } else {
          return BadRule(i, "access", "'" + r.access() + "' is not made of r, w and m");
        }
      }
    }
    out.push_back(a);
  }
  out.insert(out.end(), std::begin(kDefaultDevices), std::end(kDefaultDevices));
  return out;
}

std::string V1DeviceRule(const DeviceAccess& r) {
  if (r.type == 'a') return "a";
  auto number = [](int64_t n) { return n == -1 ? std::string("*") : std::to_string(n); };
  std::string access;
  if (r.access & kDevRead) access += 'r';
  if (r.access & kDevWrite) access += 'w';
  if (r.access & kDevMknod) access += 'm';
  return std::string(1, r.type) + " " + number(r.major) + ":" + number(r.minor) + " " + access;
}

DeviceList EmulateDevices(const std::vector<DeviceAccess>& rules) {
  DeviceList list;
  for (const DeviceAccess& r : rules) {
    if (r.type == 'a') {
      list.default_allow = r.allow;
      list.exceptions.clear();
      continue;
    }
    if (r.allow != list.default_allow) {
      // An exception to the default: added, or merged into the one for the same devices.
      bool merged = false;
      for (auto& e : list.exceptions) {
        if (Same(e, r)) {
          e.access |= r.access;
          merged = true;
        }
      }
      if (!merged) list.exceptions.push_back(r);
      continue;
    }
    // With the default: the exception for exactly these devices loses that access.
    for (auto it = list.exceptions.begin(); it != list.exceptions.end();) {
      if (Same(*it, r)) it->access &= ~r.access;
      it = it->access == 0 ? list.exceptions.erase(it) : it + 1;
    }
  }
  return list;
}

bool DeviceAllowed(const DeviceList& list, char type, uint32_t major, uint32_t minor,
                   uint32_t access) {
  for (const auto& e : list.exceptions) {
    if (!Covers(e, type, major, minor)) continue;
    // Allowed only by an exception that grants all of `access`; denied by one that names
    // any of it.
    if (!list.default_allow && (access & ~e.access) == 0) return true;
    if (list.default_allow && (access & e.access) != 0) return false;
  }
  return list.default_allow;
}

std::vector<bpf_insn> DeviceProgram(const DeviceList& list) {
  // struct bpf_cgroup_dev_ctx { u32 access_type (access << 16 | type); u32 major, minor; }
  std::vector<bpf_insn> p = {
      LoadWord(BPF_REG_2, 0), Alu32(BPF_AND, BPF_REG_2, 0xffff),  // r2: type
      LoadWord(BPF_REG_3, 0), Alu32(BPF_RSH, BPF_REG_3, 16),      // r3: access
      LoadWord(BPF_REG_4, 4),                                     // r4: major
      LoadWord(BPF_REG_5, 8),                                     // r5: minor
  };
  for (const auto& e : list.exceptions) {
    // One block per exception; every test that fails jumps to the next block.
    std::vector<size_t> to_next;
    auto jump = [&](bpf_insn i) {
      to_next.push_back(p.size());
      p.push_back(i);
    };
    jump(JumpImm(BPF_JNE, BPF_REG_2, e.type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK));
    if (e.access != kDevAll) {
      p.push_back(Insn(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0));
      if (e.allow) {
        // An allowing exception covers the request only if it grants every bit asked.
        p.push_back(Alu32(BPF_AND, BPF_REG_1, static_cast<int32_t>(~e.access & kDevAll)));
        jump(JumpImm(BPF_JNE, BPF_REG_1, 0));
      } else {
        // A denying one, if it names any bit asked.
        p.push_back(Alu32(BPF_AND, BPF_REG_1, static_cast<int32_t>(e.access)));
        jump(JumpImm(BPF_JEQ, BPF_REG_1, 0));
      }
    }
    if (e.major != -1) jump(JumpImm(BPF_JNE, BPF_REG_4, static_cast<int32_t>(e.major)));
    if (e.minor != -1) jump(JumpImm(BPF_JNE, BPF_REG_5, static_cast<int32_t>(e.minor)));
    p.push_back(Alu32(BPF_MOV, BPF_REG_0, e.allow ? 1 : 0));
    p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    for (size_t at : to_next) p[at].off = static_cast<int16_t>(p.size() - at - 1);
  }
  p.push_back(Alu32(BPF_MOV, BPF_REG_0, list.default_allow ? 1 : 0));
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return p;
}

Status AttachDeviceFilter(int cgroup_fd, const std::vector<bpf_insn>& program) {
  // The programs attached before, to go once the new one is in force.
  uint32_t ids[64];
  bpf_attr query;
  std::memset(&query, 0, sizeof query);
  query.query.target_fd = cgroup_fd;
  query.query.attach_type = BPF_CGROUP_DEVICE;
  query.query.prog_ids = reinterpret_cast<uintptr_t>(ids);
  query.query.prog_cnt = 64;
  BRIG_TRY(sys::Bpf(BPF_PROG_QUERY, query, "query device programs"));

  static const char kLicense[] = "Apache-2.0";
  bpf_attr load;
  std::memset(&load, 0, sizeof load);
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uintptr_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uintptr_t>(kLicense);
  sys::UniqueFd prog(
      static_cast<int>(BRIG_TRY(sys::Bpf(BPF_PROG_LOAD, load, "load the device program"))));

  bpf_attr attach;
  std::memset(&attach, 0, sizeof attach);
  attach.target_fd = cgroup_fd;
  attach.attach_bpf_fd = prog.get();
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  BRIG_TRY(sys::Bpf(BPF_PROG_ATTACH, attach, "attach the device program"));

  for (uint32_t i = 0; i < query.query.prog_cnt && i < 64; ++i) {
    bpf_attr get;
    std::memset(&get, 0, sizeof get);
    get.prog_id = ids[i];
    auto got = sys::Bpf(BPF_PROG_GET_FD_BY_ID, get, "open an earlier device program");
    if (!got && got.error().err == ENOENT) continue;
    sys::UniqueFd old(static_cast<int>(BRIG_TRY(std::move(got))));
    bpf_attr detach;
    std::memset(&detach, 0, sizeof detach);
    detach.target_fd = cgroup_fd;
    detach.attach_bpf_fd = old.get();
    detach.attach_type = BPF_CGROUP_DEVICE;
    if (auto s = sys::Bpf(BPF_PROG_DETACH, detach, "detach an earlier device program");
        !s && s.error().err != ENOENT) {
      return std::move(s).error();
    }
  }
  return {};
}

}  // namespace brig::cgroup
