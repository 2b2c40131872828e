// The systemd cgroup driver (systemd.h): systemd's manager over D-Bus with sd-bus, on its
// private socket as root (systemctl's way: no bus daemon needed), else the system bus.
// libsystemd is opened (dlopen) at the driver's first use, as libnftables is: linked in,
// it and what it pulls in (liblzma, libzstd, libgcrypt...) would be loaded by every
// process of brig, and only containers of --systemd-cgroup use it.
#include "cgroup/systemd.h"

#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "cgroup/resources.h"
#include "sys/library.h"
#include "util/parse.h"

namespace brig::cgroup::systemd {
namespace {

constexpr char kDest[] = "org.freedesktop.systemd1";
constexpr char kPath[] = "/org/freedesktop/systemd1";
constexpr char kManager[] = "org.freedesktop.systemd1.Manager";
// How long a job of systemd's may take (a scope starts or stops in milliseconds).
constexpr uint64_t kJobTimeoutUs = 30'000'000;

struct Libsystemd {
  decltype(&sd_bus_new) bus_new;
  decltype(&sd_bus_set_address) set_address;
  decltype(&sd_bus_start) start;
  decltype(&sd_bus_open_system) open_system;
  decltype(&sd_bus_unref) bus_unref;
  decltype(&sd_bus_flush_close_unref) flush_close_unref;
  decltype(&sd_bus_message_new_method_call) new_method_call;
  decltype(&sd_bus_message_append) append;
  decltype(&sd_bus_message_open_container) open_container;
  decltype(&sd_bus_message_close_container) close_container;
  decltype(&sd_bus_message_append_array) append_array;
  decltype(&sd_bus_message_read) read;
  decltype(&sd_bus_message_unref) message_unref;
  decltype(&sd_bus_call) call;
  decltype(&sd_bus_match_signal) match_signal;
  decltype(&sd_bus_slot_unref) slot_unref;
  decltype(&sd_bus_process) process;
  decltype(&sd_bus_wait) wait;
  decltype(&sd_bus_error_free) error_free;
};

const Libsystemd* lib = nullptr;

Status OpenLibsystemd() {
  static std::string error;
  if (!lib && error.empty()) {
    static Libsystemd l;
    sys::Library so("libsystemd.so.0");
    so.Find(l.bus_new, "sd_bus_new");
    so.Find(l.set_address, "sd_bus_set_address");
    so.Find(l.start, "sd_bus_start");
    so.Find(l.open_system, "sd_bus_open_system");
    so.Find(l.bus_unref, "sd_bus_unref");
    so.Find(l.flush_close_unref, "sd_bus_flush_close_unref");
    so.Find(l.new_method_call, "sd_bus_message_new_method_call");
    so.Find(l.append, "sd_bus_message_append");
    so.Find(l.open_container, "sd_bus_message_open_container");
    so.Find(l.close_container, "sd_bus_message_close_container");
    so.Find(l.append_array, "sd_bus_message_append_array");
    so.Find(l.read, "sd_bus_message_read");
    so.Find(l.message_unref, "sd_bus_message_unref");
    so.Find(l.call, "sd_bus_call");
    so.Find(l.match_signal, "sd_bus_match_signal");
    so.Find(l.slot_unref, "sd_bus_slot_unref");
    so.Find(l.process, "sd_bus_process");
    so.Find(l.wait, "sd_bus_wait");
    so.Find(l.error_free, "sd_bus_error_free");
    error = so.error();
    if (error.empty()) lib = &l;
  }
  if (!lib) return Fail("systemd", "libsystemd.so.0", error);
  return {};
}

struct BusUnref {
  void operator()(sd_bus* b) const { lib->flush_close_unref(b); }
};
using Bus = std::unique_ptr<sd_bus, BusUnref>;
struct MessageUnref {
  void operator()(sd_bus_message* m) const { lib->message_unref(m); }
};
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;
struct SlotUnref {
  void operator()(sd_bus_slot* s) const { lib->slot_unref(s); }
};
using Slot = std::unique_ptr<sd_bus_slot, SlotUnref>;

Error BusError(int r, const std::string& op, const std::string& unit, const sd_bus_error* e) {
  Error err = Fail("systemd", unit, op + ": " + (e && e->message ? e->message : std::strerror(-r)));
  err.err = -r;
  return err;
}

Result<Bus> Connect() {
  BRIG_TRY(OpenLibsystemd());
  sd_bus* bus = nullptr;
  int r = 0;
  if (geteuid() == 0) {
    r = lib->bus_new(&bus);
    if (r >= 0) r = lib->set_address(bus, "unix:path=/run/systemd/private");
    if (r >= 0) r = lib->start(bus);
    if (r >= 0) return Bus(bus);
    lib->bus_unref(bus);
    bus = nullptr;
  }
  r = lib->open_system(&bus);
  if (r < 0) return BusError(r, "connect to systemd", "", nullptr);
  return Bus(bus);
}

// A cpuset list ("0-3,6") as systemd's AllowedCPUs and AllowedMemoryNodes take it: a
// bitmask, bit N of byte N/8 for CPU or node N. Empty where the list is not one (the cgroup
// file's write names the error).
std::vector<uint8_t> Mask(const std::string& list) {
  std::vector<uint8_t> mask;
  auto number = [](std::string_view t) -> std::optional<unsigned> {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
    return v;
  };
  for (std::string_view part : util::Split(list, ',')) {
    size_t dash = part.find('-');
    auto lo = number(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : number(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi >= 8192) return {};
    for (unsigned n = *lo; n <= *hi; ++n) {
      if (mask.size() <= n / 8) mask.resize(n / 8 + 1);
      mask[n / 8] |= static_cast<uint8_t>(1u << (n % 8));
    }
  }
  return mask;
}

// The properties of `r` systemd knows, as runc's systemd driver gives them.
int AppendResources(sd_bus_message* m, const oci::Resources& r) {
  int e = 0;
  auto add_mask = [&](const char* name, const std::string& list) {
    std::vector<uint8_t> mask = Mask(list);
    if (mask.empty() || e < 0) return;
    e = lib->open_container(m, 'r', "sv");
    if (e >= 0) e = lib->append(m, "s", name);
    if (e >= 0) e = lib->open_container(m, 'v', "ay");
    if (e >= 0) e = lib->append_array(m, 'y', mask.data(), mask.size());
    if (e >= 0) e = lib->close_container(m);
    if (e >= 0) e = lib->close_container(m);
  };
  auto add = [&](const char* name, uint64_t v) {
    if (e >= 0) e = lib->append(m, "(sv)", name, "t", v);
  };
  const uint64_t kInfinity = UINT64_MAX;
  if (r.has_memory()) {
    const oci::Memory& mem = r.memory();
    if (mem.has_limit()) add("MemoryMax", mem.limit() < 0 ? kInfinity : mem.limit());
    if (mem.has_reservation()) add("MemoryLow", mem.reservation() < 0 ? 0 : mem.reservation());
    if (mem.has_swap() && mem.has_limit()) {
      // OCI's swap is memory plus swap; systemd's MemorySwapMax is the swap alone.
      add("MemorySwapMax",
          mem.swap() < 0 || mem.limit() < 0
              ? kInfinity
              : static_cast<uint64_t>(std::max<int64_t>(0, mem.swap() - mem.limit())));
    }
  }
  if (r.has_pids() && r.pids().has_limit()) {
    add("TasksMax", r.pids().limit() <= 0 ? kInfinity : r.pids().limit());
  }
  if (r.has_cpu()) {
    const oci::Cpu& cpu = r.cpu();
    if (cpu.has_shares() && cpu.shares() > 0) add("CPUWeight", CpuWeightFromShares(cpu.shares()));
    uint64_t period = cpu.has_period() && cpu.period() > 0 ? cpu.period() : 100000;
    if (cpu.has_period() && cpu.period() > 0) add("CPUQuotaPeriodUSec", period);
    if (cpu.has_quota()) {
      // Per second of CPU time, rounded up to a whole percent as systemd keeps it (runc).
      uint64_t per_sec = kInfinity;
      if (cpu.quota() > 0) {
        per_sec = static_cast<uint64_t>(cpu.quota()) * 1'000'000 / period;
        per_sec = (per_sec + 9'999) / 10'000 * 10'000;
      }
      add("CPUQuotaPerSecUSec", per_sec);
    }
    add_mask("AllowedCPUs", cpu.cpus());
    add_mask("AllowedMemoryNodes", cpu.mems());
  }
  return e;
}

// Calls `method` on the manager with the message `fill` completes; its reply goes to
// `reply` where one is asked for. With `missing_ok`, a unit systemd does not have is no
// error: there is nothing to do, and the answer is false.
template <typename Fill>
Result<bool> CallManager(sd_bus* bus, const char* method, const std::string& unit, const Fill& fill,
                         Message* reply, bool missing_ok) {
  sd_bus_message* raw = nullptr;
  int r = lib->new_method_call(bus, &raw, kDest, kPath, kManager, method);
  Message call(raw);
  if (r >= 0) r = fill(call.get());
  if (r < 0) return BusError(r, method, unit, nullptr);
  sd_bus_error error = SD_BUS_ERROR_NULL;
  sd_bus_message* raw_reply = nullptr;
  r = lib->call(bus, call.get(), kJobTimeoutUs, &error, &raw_reply);
  Message got(raw_reply);
  if (r < 0) {
    bool missing =
        error.name && std::string_view(error.name) == "org.freedesktop.systemd1.NoSuchUnit";
    Error e = BusError(r, method, unit, &error);
    lib->error_free(&error);
    if (missing && missing_ok) return false;
    return e;
  }
  if (reply) *reply = std::move(got);
  return true;
}

// CallManager for a method that returns a job, and waits until the job is removed: "done"
// is success, anything else the job's failure.
template <typename Fill>
Status RunJob(const char* method, const std::string& unit, const Fill& fill,
              bool missing_ok = false) {
  Bus bus = BRIG_TRY(Connect());
  struct Removed {
    std::map<std::string, std::string> results;  // job path -> result
  } removed;
  sd_bus_slot* raw_slot = nullptr;
  int r = lib->match_signal(
      bus.get(), &raw_slot, kDest, kPath, kManager, "JobRemoved",
      [](sd_bus_message* m, void* data, sd_bus_error*) -> int {
        uint32_t id = 0;
        const char *job = nullptr, *name = nullptr, *result = nullptr;
        if (lib->read(m, "uoss", &id, &job, &name, &result) >= 0) {
          static_cast<Removed*>(data)->results[job] = result;
        }
        return 0;
      },
      &removed);
  Slot slot(raw_slot);
  if (r < 0) return BusError(r, "watch jobs", unit, nullptr);
  Message reply;
  if (!BRIG_TRY(CallManager(bus.get(), method, unit, fill, &reply, missing_ok))) return {};
  const char* job = nullptr;
  r = lib->read(reply.get(), "o", &job);
  if (r < 0) return BusError(r, method, unit, nullptr);
  const std::string path = job;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    auto found = removed.results.find(path);
    if (found != removed.results.end()) {
      if (found->second == "done") return {};
      return Fail("systemd", unit, std::string(method) + ": job " + found->second);
    }
    r = lib->process(bus.get(), nullptr);
    if (r < 0) return BusError(r, "wait for the job", unit, nullptr);
    if (r > 0) continue;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t spent = static_cast<uint64_t>(now.tv_sec - start.tv_sec) * 1'000'000 +
                     (now.tv_nsec - start.tv_nsec) / 1000;
    if (spent >= kJobTimeoutUs) return Fail("systemd", unit, std::string(method) + ": no answer");
    r = lib->wait(bus.get(), kJobTimeoutUs - spent);
    if (r < 0 && r != -EINTR) return BusError(r, "wait for the job", unit, nullptr);
  }
}

// CallManager on a connection of its own, for a method that returns no job.
template <typename Fill>
Status Call(const char* method, const std::string& unit, const Fill& fill) {
  Bus bus = BRIG_TRY(Connect());
  BRIG_TRY(CallManager(bus.get(), method, unit, fill, nullptr, false));
  return {};
}

bool ValidUnitChar(char c) {
  return isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '-' || c == '_' || c == '.' ||
         c == '\\' || c == '@';
}

}  // namespace

Result<std::string> ExpandSlice(const std::string& slice) {
  const char* prop = "linux.cgroupsPath";
  const std::string_view suffix = ".slice";
  if (slice.size() <= suffix.size() ||
      slice.compare(slice.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return BadInput(prop, slice, "not a slice: a slice's name ends in '.slice'");
  }
  if (slice == "-.slice") return std::string("/");
  std::string name = slice.substr(0, slice.size() - suffix.size());
  if (name.find('/') != std::string::npos ||
      !std::all_of(name.begin(), name.end(), ValidUnitChar)) {
    return BadInput(prop, slice, "not a valid slice name");
  }
  std::string path, prefix;
  size_t start = 0;
  for (;;) {
    size_t dash = name.find('-', start);
    std::string part =
        name.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    if (part.empty()) return BadInput(prop, slice, "a slice's name has an empty component");
    prefix += (prefix.empty() ? "" : "-") + part;
    path += "/" + prefix + ".slice";
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  return path;
}

Result<UnitPath> ParsePath(const std::string& cgroups_path, const std::string& id) {
  const char* prop = "linux.cgroupsPath";
  std::string slice = "system.slice", prefix = "brig", name = id;
  if (!cgroups_path.empty()) {
    size_t a = cgroups_path.find(':');
    size_t b = a == std::string::npos ? a : cgroups_path.find(':', a + 1);
    if (b == std::string::npos || cgroups_path.find(':', b + 1) != std::string::npos) {
      return BadInput(prop, cgroups_path,
                      "expected 'slice:prefix:name' for the systemd cgroup driver");
    }
    slice = cgroups_path.substr(0, a);
    prefix = cgroups_path.substr(a + 1, b - a - 1);
    name = cgroups_path.substr(b + 1);
    if (slice.empty()) slice = "system.slice";
  }
  if (name.empty()) return BadInput(prop, cgroups_path, "the unit's name is empty");
  UnitPath u;
  u.slice = slice;
  const std::string_view dot_slice = ".slice";
  if (name.size() > dot_slice.size() &&
      name.compare(name.size() - dot_slice.size(), dot_slice.size(), dot_slice) == 0) {
    return BadInput(prop, cgroups_path, "a container's unit is a scope, not the slice " + name);
  }
  u.unit = prefix.empty() ? name + ".scope" : prefix + "-" + name + ".scope";
  if (!std::all_of(u.unit.begin(), u.unit.end(), ValidUnitChar)) {
    return BadInput(prop, cgroups_path, "'" + u.unit + "' is not a valid unit name");
  }
  std::string parent = BRIG_TRY(ExpandSlice(slice));
  if (parent.size() == 1) parent.clear();  // "/": the root
  u.path = parent + "/" + u.unit;
  return u;
}

bool Booted() {
  struct stat st;
  return lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

Result<Scope> Scope::Start(const UnitPath& u, const oci::Resources& r) {
  Scope scope(BRIG_TRY(sys::Holder(0, "systemd scope")));
  const pid_t pid = scope.holder_.pid();
  BRIG_TRY(RunJob("StartTransientUnit", u.unit, [&](sd_bus_message* m) {
    int e = lib->append(m, "ss", u.unit.c_str(), "fail");
    if (e >= 0) e = lib->open_container(m, 'a', "(sv)");
    if (e >= 0) {
      e = lib->append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s",
                      "brig container", "Slice", "s", u.slice.c_str(), "Delegate", "b", 1,
                      "DefaultDependencies", "b", 0, "MemoryAccounting", "b", 1, "CPUAccounting",
                      "b", 1, "IOAccounting", "b", 1, "TasksAccounting", "b", 1, "PIDs", "au", 1,
                      static_cast<uint32_t>(pid));
    }
    if (e >= 0) e = AppendResources(m, r);
    if (e >= 0) e = lib->close_container(m);
    if (e >= 0) e = lib->append(m, "a(sa(sv))", 0);
    return e;
  }));
  return scope;
}

void Scope::Release() { holder_.KillAndReap(); }

Status SetProperties(const std::string& unit, const oci::Resources& r) {
  return Call("SetUnitProperties", unit, [&](sd_bus_message* m) {
    int e = lib->append(m, "sb", unit.c_str(), 1);
    if (e >= 0) e = lib->open_container(m, 'a', "(sv)");
    if (e >= 0) e = AppendResources(m, r);
    if (e >= 0) e = lib->close_container(m);
    return e;
  });
}

Status Stop(const std::string& unit) {
  BRIG_TRY(RunJob(
      "StopUnit", unit,
      [&](sd_bus_message* m) { return lib->append(m, "ss", unit.c_str(), "replace"); }, true));
  // A unit that failed stays listed, failed, until its state is reset.
  (void)Call("ResetFailedUnit", unit,
             [&](sd_bus_message* m) { return lib->append(m, "s", unit.c_str()); });
  return {};
}

}  // namespace brig::cgroup::systemd
