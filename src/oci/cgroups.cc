// An OCI container's cgroups, the front end's half (oci/cgroups.h): config.json's
// cgroupsPath and resources to cgroup::Groups, the record's directories back, and the
// stats as runc prints them.
#include "oci/cgroups.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "log/log.h"
#include "util/dirs.h"
#include "util/parse.h"

namespace brig::oci {

using util::Split;

Result<std::string> CleanCgroupsPath(const std::string& path, const std::string& id) {
  const char* prop = "linux.cgroupsPath";
  if (path.empty()) return "/brig/" + id;
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return BadInput(prop, path, "control characters are not allowed");
  }
  if (path[0] != '/' && path.find('/') == std::string::npos &&
      std::count(path.begin(), path.end(), ':') == 2) {
    return BadInput(prop, path,
                    "a systemd cgroup path ('slice:prefix:name') needs --systemd-cgroup");
  }
  std::string out = path[0] == '/' ? "/" : "";
  for (auto part : Split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return BadInput(prop, path, "'..' components are not allowed");
    if (!out.empty() && out.back() != '/') out += '/';
    out += part;
  }
  if (out.empty() || out == "/") {
    return BadInput(prop, path, "names the group brig runs in or the root, not a group of its own");
  }
  return out;
}
Result<std::unique_ptr<cgroup::Groups>> CreateCgroups(const Spec& spec, const std::string& id,
                                                      const cgroup::Groups::Note& note,
                                                      const std::string* scope) {
  std::string path = scope ? *scope : BRIG_TRY(CleanCgroupsPath(spec.linux().cgroups_path(), id));
  return cgroup::Groups::Create(path, spec.linux().resources(), note, scope != nullptr);
}

Result<bool> GoesWithoutCgroups(const Spec& spec, const cgroup::Groups::Planned& planned) {
  if (!util::Rootless() && !util::NamespacedRoot()) return false;
  std::string denied;
  for (const cgroup::Groups::Noted& n : planned.noted) {
    if (!n.owned) continue;
    std::string dir = n.dir;
    while (dir.size() > 1 && access(dir.c_str(), F_OK) != 0) {
      size_t slash = dir.rfind('/');
      dir.resize(slash == 0 ? 1 : slash);
    }
    if (access(dir.c_str(), W_OK) != 0) {
      denied = n.dir;
      break;
    }
  }
  if (denied.empty()) return false;
  Resources limits = spec.linux().resources();
  limits.clear_devices();
  if (limits.ByteSizeLong() != 0) {
    return Fail("linux.resources", "",
                "sets a limit, and brig, not root here, may make no cgroup to hold it (" + denied +
                    " is not delegated to it): run the engine where a cgroup v2 subtree is "
                    "delegated to its user, or set no limit");
  }
  log::Debug("no cgroups: ", denied, " is not delegated to brig");
  return true;
}

std::unique_ptr<cgroup::Groups> CgroupsOf(const Container& c) {
  return cgroup::Groups::Existing({c.cgroups().begin(), c.cgroups().end()},
                                  {c.joined_cgroups().begin(), c.joined_cgroups().end()});
}

namespace {

void JsonNumber(std::string& out, const char* key, uint64_t v, bool& first) {
  out += first ? "\"" : ",\"";
  out += key;
  out += "\":" + std::to_string(v);
  first = false;
}

// A runc MemoryEntry: limit and failcnt always, usage and max if not zero; the whole
// entry only if any is.
std::string MemoryEntry(std::optional<uint64_t> limit, std::optional<uint64_t> usage,
                        std::optional<uint64_t> max, std::optional<uint64_t> failcnt) {
  if (!limit.value_or(0) && !usage.value_or(0) && !max.value_or(0) && !failcnt.value_or(0)) {
    return "";
  }
  std::string out = "{";
  bool first = true;
  JsonNumber(out, "limit", limit.value_or(0), first);
  if (usage.value_or(0)) JsonNumber(out, "usage", *usage, first);
  if (max.value_or(0)) JsonNumber(out, "max", *max, first);
  JsonNumber(out, "failcnt", failcnt.value_or(0), first);
  return out + "}";
}

// A JSON string: log::JsonEscape's escaping, in quotes.
std::string JsonString(std::string_view s) { return "\"" + log::JsonEscape(s) + "\""; }

}  // namespace

std::string StatsJson(const std::string& id, const cgroup::Stats& s) {
  // runc's types.Stats, with its omitempty members left out when zero.
  std::string cpu = "{";
  bool first = true;
  if (s.cpu_usage_ns.value_or(0) || s.cpu_user_ns.value_or(0) || s.cpu_system_ns.value_or(0)) {
    std::string usage = "{";
    bool f = true;
    if (s.cpu_usage_ns.value_or(0)) JsonNumber(usage, "total", *s.cpu_usage_ns, f);
    JsonNumber(usage, "kernel", s.cpu_system_ns.value_or(0), f);
    JsonNumber(usage, "user", s.cpu_user_ns.value_or(0), f);
    cpu += "\"usage\":" + usage + "}";
    first = false;
  }
  if (s.cpu_periods.value_or(0) || s.cpu_throttled_periods.value_or(0) ||
      s.cpu_throttled_ns.value_or(0)) {
    std::string t = "{";
    bool f = true;
    if (s.cpu_periods.value_or(0)) JsonNumber(t, "periods", *s.cpu_periods, f);
    if (s.cpu_throttled_periods.value_or(0)) {
      JsonNumber(t, "throttledPeriods", *s.cpu_throttled_periods, f);
    }
    if (s.cpu_throttled_ns.value_or(0)) JsonNumber(t, "throttledTime", *s.cpu_throttled_ns, f);
    cpu += std::string(first ? "" : ",") + "\"throttling\":" + t + "}";
  }
  cpu += "}";

  std::string memory = "{";
  first = true;
  if (s.memory_cache.value_or(0)) JsonNumber(memory, "cache", *s.memory_cache, first);
  std::string usage =
      MemoryEntry(s.memory_limit, s.memory_usage, s.memory_max_usage, s.memory_failcnt);
  if (!usage.empty()) {
    memory += std::string(first ? "" : ",") + "\"usage\":" + usage;
    first = false;
  }
  std::string swap = MemoryEntry(s.swap_limit, s.swap_usage, std::nullopt, std::nullopt);
  if (!swap.empty()) memory += std::string(first ? "" : ",") + "\"swap\":" + swap;
  memory += "}";

  std::string pids = "{";
  first = true;
  if (s.pids_current.value_or(0)) JsonNumber(pids, "current", *s.pids_current, first);
  // No limit is "max", which runc reports as the largest uint64.
  if (s.pids_current) JsonNumber(pids, "limit", s.pids_limit.value_or(UINT64_MAX), first);
  pids += "}";

  return "{\"type\":\"stats\",\"id\":" + JsonString(id) + ",\"data\":{\"cpu\":" + cpu +
         ",\"memory\":" + memory + ",\"pids\":" + pids + "}}";
}

}  // namespace brig::oci
