// Profile loading and validation.
#include "config/profile.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include "broker/spec.h"
#include "proto/textproto.h"
#include "egress/allowlist.h"
#include "fs/hidden.h"
#include "egress/floor.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::config {
namespace {

Error Field(const std::string& file, const std::string& field, const std::string& why) {
  return Fail(file, field, why, ErrorKind::kBadInput);
}

// A path relative to the workspace that stays inside it.
bool IsWorkspaceRelative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

Status ValidateLimits(const v1::Limits& l, const std::string& file) {
  if (!l.timeout().empty() && !util::ParseDuration(l.timeout())) {
    return Field(file, "limits.timeout", util::ParseDuration(l.timeout()).error().detail);
  }
  if (!l.grace().empty() && !util::ParseDuration(l.grace())) {
    return Field(file, "limits.grace", util::ParseDuration(l.grace()).error().detail);
  }
  if (!l.tmp_size().empty() && !util::ParseSize(l.tmp_size())) {
    return Field(file, "limits.tmp_size", util::ParseSize(l.tmp_size()).error().detail);
  }
  if (!l.output_limit().empty() && !util::ParseSize(l.output_limit())) {
    return Field(file, "limits.output_limit", util::ParseSize(l.output_limit()).error().detail);
  }
  if (!l.memory().empty() && !util::ParseMemory(l.memory())) {
    return Field(file, "limits.memory", util::ParseMemory(l.memory()).error().detail);
  }
  if (!l.swap().empty() && !util::ParseSizeLimit(l.swap())) {
    return Field(file, "limits.swap", util::ParseSizeLimit(l.swap()).error().detail);
  }
  if (!l.swap().empty() && l.swap() != "0" && l.memory().empty()) {
    return Field(file, "limits.swap", "needs limits.memory: swap is allowed beyond memory");
  }
  if (!l.cpus().empty() && !util::ParseCpus(l.cpus())) {
    return Field(file, "limits.cpus", util::ParseCpus(l.cpus()).error().detail);
  }
  if (l.has_pids() && (l.pids() == 0 || l.pids() > 4194304)) {
    return Field(file, "limits.pids", "must be from 1 to 4194304");
  }
  if (!l.disk().empty() && !util::ParseDiskSize(l.disk())) {
    return Field(file, "limits.disk", util::ParseDiskSize(l.disk()).error().detail);
  }
  const v1::UserCounts& u = l.user_counts();
  // The kernel keeps these as ints; 0 would stop brig init making its own cgroup namespace.
  auto count = [&](const char* name, bool has, uint64_t v) -> Status {
    if (has && (v == 0 || v > 2147483647)) {
      return Field(file, std::string("limits.user_counts.") + name,
                   "must be from 1 to 2147483647");
    }
    return {};
  };
  BRIG_TRY(count("inotify_instances", u.has_inotify_instances(), u.inotify_instances()));
  BRIG_TRY(count("inotify_watches", u.has_inotify_watches(), u.inotify_watches()));
  BRIG_TRY(count("fanotify_groups", u.has_fanotify_groups(), u.fanotify_groups()));
  BRIG_TRY(count("fanotify_marks", u.has_fanotify_marks(), u.fanotify_marks()));
  BRIG_TRY(count("namespaces", u.has_namespaces(), u.namespaces()));
  BRIG_TRY(count("msgqueue_bytes", u.has_msgqueue_bytes(), u.msgqueue_bytes()));
  BRIG_TRY(count("pending_signals", u.has_pending_signals(), u.pending_signals()));
  for (int k : l.optional_limits()) {
    if (k == v1::LIMIT_UNSPECIFIED) {
      return Field(file, "limits.optional_limits", "LIMIT_UNSPECIFIED is not a limit");
    }
  }
  return {};
}

Status Validate(const v1::Profile& p, const std::string& file) {
  BRIG_TRY(ValidateLimits(p.limits(), file));
  switch (p.isolation()) {
    case v1::ISOLATION_NONE:
      // No isolation means nothing else to say: a profile that lists walls it cannot
      // have would mislead whoever reads it.
      if (p.has_filesystem() || p.has_network() || p.has_security() || p.brokers_size() > 0) {
        return Field(file, "isolation",
                     "ISOLATION_NONE takes no filesystem, network, security or broker settings");
      }
      if (!p.limits().disk().empty()) {
        return Field(file, "limits.disk", "ISOLATION_NONE has no copy workspace to cap");
      }
      return {};
    case v1::ISOLATION_SANDBOX:
      break;
    default:
      return Field(file, "isolation", "must be ISOLATION_SANDBOX or ISOLATION_NONE");
  }
  if (p.filesystem().workspace() == v1::WORKSPACE_ACCESS_UNSPECIFIED) {
    return Field(file, "filesystem.workspace", "must be set");
  }
  // Only a copy's changes can be capped: a read-only workspace takes none, and a read-write
  // one is the host's own directory, whose writes no cap of brig's holds.
  if (!p.limits().disk().empty() && p.filesystem().workspace() != v1::WORKSPACE_COPY) {
    return Field(file, "limits.disk",
                 "only a copy workspace (WORKSPACE_COPY) can be capped; a read-write one cannot");
  }
  for (const auto& path : p.filesystem().protected_paths()) {
    if (!IsWorkspaceRelative(path)) {
      return Field(file, "filesystem.protected_paths", "'" + path + "' leaves the workspace");
    }
  }
  for (const auto& path : p.filesystem().hidden_paths()) {
    if (auto h = fs::ParseHiddenPattern(path); !h) {
      return Field(file, "filesystem.hidden_paths", "'" + path + "': " + h.error().detail);
    }
  }
  if (p.network().posture() == v1::NETWORK_POSTURE_UNSPECIFIED) {
    return Field(file, "network.posture", "must be set");
  }
  if (p.network().allow_hosts_size() > 0 && p.network().posture() != v1::POSTURE_ALLOWLIST) {
    return Field(file, "network.allow_hosts", "only an allowlist posture has an allowlist");
  }
  for (const auto& host : p.network().allow_hosts()) {
    if (auto pattern = egress::ParseHostPattern(host); !pattern) {
      return Field(file, "network.allow_hosts", "'" + host + "': " + pattern.error().detail);
    }
  }
  bool interface = p.network().posture() == v1::POSTURE_ALLOWLIST ||
                   p.network().posture() == v1::POSTURE_OPEN;
  if (p.network().allow_addresses_size() > 0 && !interface) {
    return Field(file, "network.allow_addresses", "only postures allowlist and open connect anywhere");
  }
  for (const auto& a : p.network().allow_addresses()) {
    if (auto floor = egress::Floor::WithExceptions({a}); !floor) {
      return Field(file, "network.allow_addresses", "'" + a + "': " + floor.error().detail);
    }
  }
  std::vector<broker::Config> brokers;
  for (const auto& b : p.brokers()) {
    auto c = broker::Check(b);
    if (!c) return Field(file, "brokers", "'" + b.name() + "': " + c.error().Render());
    brokers.push_back(std::move(*c));
    if (auto all = broker::CheckAll(brokers); !all) {
      return Field(file, "brokers", "'" + b.name() + "': " + all.error().Render());
    }
  }
  if (p.security().seccomp_policy().empty()) {
    return Field(file, "security.seccomp_policy", "must name a policy");
  }
  return {};
}

}  // namespace

std::string ResolvePolicyDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (access(BRIG_POLICY_DIR, F_OK) == 0) return BRIG_POLICY_DIR;
  return BRIG_SOURCE_POLICY_DIR;
}

Result<std::string> PolicyFilePath(const std::string& dir, const std::string& kind,
                                   const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos) {
    if (name_or_path.empty() || name_or_path[0] == '.') {
      return BadInput(kind == "profiles" ? "profile" : "seccomp policy", name_or_path,
                      "not a valid name");
    }
    path = dir + "/" + kind + "/" + name_or_path + ".textproto";
  }
  if (access(path.c_str(), R_OK) < 0) {
    std::vector<std::string> names = ListPolicyNames(dir, kind);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    Error e = SysError(kind == "profiles" ? "profile" : "seccomp policy", name_or_path);
    e.kind = ErrorKind::kBadInput;
    if (name_or_path.find('/') == std::string::npos) {
      e.err = 0;
      e.detail = known.empty() ? "unknown (" + dir + "/" + kind + " holds none)"
                               : "unknown (known in " + dir + "/" + kind + ": " + known + ")";
    }
    return e;
  }
  return path;
}

std::vector<std::string> ListPolicyNames(const std::string& dir, const std::string& kind) {
  std::vector<std::string> names;
  DIR* d = opendir((dir + "/" + kind).c_str());
  if (!d) return names;
  const std::string ext = ".textproto";
  while (struct dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0 &&
        n[0] != '.') {
      names.push_back(n.substr(0, n.size() - ext.size()));
    }
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<v1::Profile> ParseProfile(const std::string& text, const std::string& name) {
  v1::Profile p;
  BRIG_TRY(proto::ParseTextProto(text, name, &p));
  BRIG_TRY(Validate(p, name));
  return p;
}

void FillDefaults(v1::Profile& p) {
  v1::Limits* l = p.mutable_limits();
  if (l->timeout().empty()) l->set_timeout("30m");
  if (l->grace().empty()) l->set_grace("10s");
  if (!l->has_rlimit_nofile()) l->set_rlimit_nofile(4096);
  if (!l->has_rlimit_nproc()) l->set_rlimit_nproc(4096);
  if (!l->has_rlimit_core()) l->set_rlimit_core(0);
  // Why these: limits.user_counts in brig-profile(5).
  v1::UserCounts* u = l->mutable_user_counts();
  if (!u->has_inotify_instances()) u->set_inotify_instances(32);
  if (!u->has_inotify_watches()) u->set_inotify_watches(4096);
  if (!u->has_fanotify_groups()) u->set_fanotify_groups(8);
  if (!u->has_fanotify_marks()) u->set_fanotify_marks(4096);
  if (!u->has_namespaces()) u->set_namespaces(64);
  if (!u->has_msgqueue_bytes()) u->set_msgqueue_bytes(65536);
  if (!u->has_pending_signals()) u->set_pending_signals(1024);
  // Without isolation there is no /tmp of brig's to size.
  if (p.isolation() == v1::ISOLATION_NONE) return;
  if (l->tmp_size().empty()) l->set_tmp_size("1G");
}

Result<v1::Profile> LoadProfile(const std::string& dir, const std::string& name_or_path) {
  std::string path = BRIG_TRY(PolicyFilePath(dir, "profiles", name_or_path));
  std::string text = BRIG_TRY_CTX(util::ReadUserFile(path), "profile");
  v1::Profile p = BRIG_TRY(ParseProfile(text, path));
  FillDefaults(p);
  return p;
}

}  // namespace brig::config
