// The about lines brig exec takes (exec_record.h).
#include "container/exec_record.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace brig::container {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// "FLAGS:HEX": the program's flags in decimal, then its instructions' bytes (native order).
std::string EncodeProgram(const security::SeccompProgram& p) {
  std::string out = std::to_string(p.flags) + ":";
  const auto* bytes = reinterpret_cast<const unsigned char*>(p.insns.data());
  size_t n = p.insns.size() * sizeof(sock_filter);
  out.reserve(out.size() + 2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

std::optional<security::SeccompProgram> DecodeProgram(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  security::SeccompProgram p;
  auto [end, ec] = std::from_chars(s.data(), s.data() + colon, p.flags);
  std::string_view hex = s.substr(colon + 1);
  if (ec != std::errc() || end != s.data() + colon || hex.empty() ||
      hex.size() % (2 * sizeof(sock_filter)) != 0) {
    return std::nullopt;
  }
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const char* hi = strchr(kHex, hex[i]);
    const char* lo = strchr(kHex, hex[i + 1]);
    if (!hex[i] || !hex[i + 1] || !hi || !lo) return std::nullopt;
    bytes += static_cast<char>((hi - kHex) << 4 | (lo - kHex));
  }
  p.insns.resize(bytes.size() / sizeof(sock_filter));
  memcpy(p.insns.data(), bytes.data(), bytes.size());
  return p;
}

template <typename T>
std::optional<T> Number(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "uid:gid"
bool ParseUser(std::string_view s, ExecRecord& r) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  auto uid = Number<uid_t>(s.substr(0, colon));
  auto gid = Number<gid_t>(s.substr(colon + 1));
  if (!uid || !gid) return false;
  r.uid = *uid;
  r.gid = *gid;
  return true;
}

// "NAME SOFT HARD", NAME one of security::RlimitList's.
bool ParseRlimit(std::string_view s, ExecRecord& r) {
  size_t a = s.find(' '), b = s.rfind(' ');
  if (a == std::string_view::npos || a == b) return false;
  auto soft = Number<uint64_t>(s.substr(a + 1, b - a - 1));
  auto hard = Number<uint64_t>(s.substr(b + 1));
  if (!soft || !hard) return false;
  for (security::Rlimit l : security::RlimitList({})) {
    if (l.name != s.substr(0, a)) continue;
    l.soft = *soft;
    l.hard = *hard;
    r.rlimits.push_back(std::move(l));
    return true;
  }
  return false;
}

// One about line into `r`; false if a line exec needs does not parse.
bool Take(std::string_view key, std::string_view value, ExecRecord& r, bool& has_program) {
  if (key == "name") r.name = value;
  if (key == "workdir") r.workdir = value;
  if (key == "audit") r.audit_path = value;
  if (key == "user") return ParseUser(value, r);
  if (key == "rlimit") return ParseRlimit(value, r);
  if (key == "pid") {
    auto pid = Number<pid_t>(value);
    r.init_pid = pid.value_or(0);
    return pid && *pid > 0;
  }
  if (key == "init_start") {
    auto start = Number<uint64_t>(value);
    r.init_start = start.value_or(0);
    return start.has_value();
  }
  if (key == "seccomp_program") {
    auto p = DecodeProgram(value);
    if (p) r.seccomp = std::move(*p);
    has_program = p.has_value();
    return has_program;
  }
  return true;
}

}  // namespace

AboutLines ExecAbout(const config::Sandbox& sb, const security::SeccompProgram& program,
                     const std::string& cwd) {
  AboutLines out = {
      {"user", std::to_string(config::kSandboxUid) + ":" + std::to_string(config::kSandboxGid)},
      {"workdir", sb.workdir},
      {"seccomp", sb.seccomp_policy},
      {"seccomp_program", EncodeProgram(program)}};
  if (!sb.audit_path.empty()) {
    out.emplace_back("audit", sb.audit_path[0] == '/' ? sb.audit_path : cwd + "/" + sb.audit_path);
  }
  for (const security::Rlimit& l : security::RlimitList(sb.rlimits)) {
    out.emplace_back("rlimit",
                     l.name + " " + std::to_string(l.soft) + " " + std::to_string(l.hard));
  }
  return out;
}

std::pair<std::string, std::string> InitStartAbout(uint64_t start_time) {
  return {"init_start", std::to_string(start_time)};
}

Result<ExecRecord> ReadExecRecord(const state::LiveRecord& rec) {
  ExecRecord r;
  r.id = rec.id;
  bool has_program = false;
  for (const state::Entry& e : rec.entries) {
    if (e.kind == "cgroup") r.cgroups.push_back(e.value);
    auto about = state::About(e);
    if (!about) continue;
    auto [key, value] = *about;
    if (!Take(key, value, r, has_program)) {
      return Fail("sandbox", rec.id, "its record's " + std::string(key) + " does not parse",
                  ErrorKind::kInternal);
    }
  }
  if (!has_program) {
    return BadInput("sandbox", rec.id,
                    "runs without isolation (a profile of isolation none): there is no sandbox "
                    "to exec in");
  }
  if (r.init_pid == 0 || r.init_start == 0) {
    return BadInput("sandbox", rec.id, "is not running yet (brig init has not started)");
  }
  return r;
}

std::vector<const state::LiveRecord*> Matching(const std::vector<state::LiveRecord>& live,
                                               const std::string& target) {
  std::vector<const state::LiveRecord*> out;
  for (const state::LiveRecord& rec : live) {
    bool named = rec.id == target;
    for (const state::Entry& e : rec.entries) {
      auto about = state::About(e);
      named |= about && about->first == "name" && about->second == target;
    }
    if (named) out.push_back(&rec);
  }
  return out;
}

Result<const state::LiveRecord*> FindSandbox(const std::vector<state::LiveRecord>& live,
                                             const std::string& target) {
  std::vector<const state::LiveRecord*> named = Matching(live, target);
  // An id is unique: the sandbox of that id comes first, and a --name that spells it does
  // not take it.
  for (const state::LiveRecord* rec : named) {
    if (rec->id == target) return rec;
  }
  if (named.size() == 1) return named[0];
  if (named.empty()) {
    return BadInput("brig exec", target, "no running sandbox has that id or --name (brig list)");
  }
  std::string ids;
  for (const state::LiveRecord* rec : named) ids += (ids.empty() ? "" : ", ") + rec->id;
  return BadInput(
      "brig exec", target,
      "names " + std::to_string(named.size()) + " running sandboxes (" + ids + "); give the id");
}

}  // namespace brig::container
