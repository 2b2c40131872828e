// Profile loading and validation.
#include "config/profile.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include "broker/spec.h"
#include "config/limits.h"
#include "egress/allowlist.h"
#include "egress/floor.h"
#include "fs/hidden.h"
#include "proto/textproto.h"
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

Status ValidateFilesystem(const v1::Profile& p, const std::string& file) {
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
  return {};
}

// Paths a named mount's target may neither be, lie under, nor hold: what brig mounts
// itself, and the root's read-only system directories.
const char* const kReservedTargets[] = {"/workspace", "/tmp",   "/proc",  "/dev",  "/sys",
                                        "/etc",       "/usr",   "/bin",   "/sbin", "/lib",
                                        "/lib32",     "/lib64", "/libx32"};

// Whether one of two normalised absolute paths is the other or lies under it.
bool Overlap(const std::string& a, const std::string& b) {
  auto under = [](const std::string& x, const std::string& y) {
    return x == y || (x.size() > y.size() && x.compare(0, y.size(), y) == 0 && x[y.size()] == '/');
  };
  return under(a, b) || under(b, a);
}

// An absolute path with no empty, "." or ".." component, not "/".
bool IsNormalTarget(const std::string& t) {
  if (t.size() < 2 || t[0] != '/' || t.back() == '/') return false;
  for (std::string_view part : util::Split(std::string_view(t).substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

Status ValidateMount(const v1::Mount& m, const std::string& file) {
  const std::string what = "mount '" + m.name() + "'";
  if (!util::IsObjectName(m.name())) {
    return Field(file, "mounts.name",
                 "'" + m.name() + "': expected [A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  }
  if (!IsNormalTarget(m.target())) {
    return Field(file, "mounts.target",
                 what + ": '" + m.target() + "' is not an absolute path without '.' or '..'");
  }
  for (const char* r : kReservedTargets) {
    if (Overlap(m.target(), r)) {
      return Field(file, "mounts.target",
                   what + ": '" + m.target() + "' overlaps " + r + ", which brig provides itself");
    }
  }
  if (m.source() != v1::MOUNT_PER_RUN && m.source() != v1::MOUNT_CACHE) {
    return Field(file, "mounts.source", what + ": must be MOUNT_PER_RUN or MOUNT_CACHE");
  }
  if (m.optional() && m.source() != v1::MOUNT_PER_RUN) {
    return Field(file, "mounts.optional", what + ": only a per-run mount can be optional");
  }
  return {};
}

Status ValidateMounts(const v1::Profile& p, const std::string& file) {
  for (int i = 0; i < p.mounts_size(); ++i) {
    BRIG_TRY(ValidateMount(p.mounts(i), file));
    for (int j = 0; j < i; ++j) {
      if (p.mounts(j).name() == p.mounts(i).name()) {
        return Field(file, "mounts.name", "'" + p.mounts(i).name() + "' declared twice");
      }
      if (Overlap(p.mounts(j).target(), p.mounts(i).target())) {
        return Field(file, "mounts.target",
                     "'" + p.mounts(i).target() + "' overlaps '" + p.mounts(j).target() + "'");
      }
    }
  }
  return {};
}

Status ValidateNetwork(const v1::Network& n, const std::string& file) {
  if (n.posture() == v1::NETWORK_POSTURE_UNSPECIFIED) {
    return Field(file, "network.posture", "must be set");
  }
  if (n.allow_hosts_size() > 0 && n.posture() != v1::POSTURE_ALLOWLIST) {
    return Field(file, "network.allow_hosts", "only an allowlist posture has an allowlist");
  }
  for (const auto& host : n.allow_hosts()) {
    if (auto pattern = egress::ParseHostPattern(host); !pattern) {
      return Field(file, "network.allow_hosts", "'" + host + "': " + pattern.error().detail);
    }
  }
  bool interface = n.posture() == v1::POSTURE_ALLOWLIST || n.posture() == v1::POSTURE_OPEN;
  if (n.allow_addresses_size() > 0 && !interface) {
    return Field(file, "network.allow_addresses",
                 "only postures allowlist and open connect anywhere");
  }
  for (const auto& a : n.allow_addresses()) {
    if (auto floor = egress::Floor::WithExceptions({a}); !floor) {
      return Field(file, "network.allow_addresses", "'" + a + "': " + floor.error().detail);
    }
  }
  return {};
}

Status ValidateBrokers(const v1::Profile& p, const std::string& file) {
  std::vector<broker::Config> brokers;
  for (const auto& b : p.brokers()) {
    auto c = broker::Check(b);
    if (!c) return Field(file, "brokers", "'" + b.name() + "': " + c.error().Render());
    brokers.push_back(std::move(*c));
    if (auto all = broker::CheckAll(brokers); !all) {
      return Field(file, "brokers", "'" + b.name() + "': " + all.error().Render());
    }
  }
  return {};
}

Status Validate(const v1::Profile& p, const std::string& file) {
  BRIG_TRY(ParseLimits(p.limits(), file));
  switch (p.isolation()) {
    case v1::ISOLATION_NONE:
      // No isolation means nothing else to say: a profile that lists walls it cannot
      // have would mislead whoever reads it.
      if (p.has_filesystem() || p.has_network() || p.has_security() || p.brokers_size() > 0 ||
          p.mounts_size() > 0) {
        return Field(file, "isolation",
                     "ISOLATION_NONE takes no filesystem, network, security, broker or mount "
                     "settings");
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
  BRIG_TRY(ValidateFilesystem(p, file));
  BRIG_TRY(ValidateNetwork(p.network(), file));
  BRIG_TRY(ValidateBrokers(p, file));
  BRIG_TRY(ValidateMounts(p, file));
  if (p.security().seccomp_policy().empty()) {
    return Field(file, "security.seccomp_policy", "must name a policy");
  }
  return {};
}

// Names of `dir`/*.textproto, sorted.
std::vector<std::string> NamesIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
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

}  // namespace

std::string ResolvePolicyDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (access(BRIG_POLICY_DIR, F_OK) == 0) return BRIG_POLICY_DIR;
  return BRIG_SOURCE_POLICY_DIR;
}

Result<std::string> PolicyPath(const std::string& dir, const std::string& kind,
                               const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos) return name_or_path;
  if (name_or_path.empty() || name_or_path[0] == '.') {
    return BadInput(kind == "profiles" ? "profile" : "seccomp policy", name_or_path,
                    "not a valid name");
  }
  return dir + "/" + kind + "/" + name_or_path + ".textproto";
}

Status CheckPolicyFile(const std::string& path, const std::string& kind,
                       const std::string& name_or_path) {
  if (access(path.c_str(), R_OK) == 0) return {};
  Error e = SysError(kind == "profiles" ? "profile" : "seccomp policy", name_or_path);
  e.kind = ErrorKind::kBadInput;
  if (name_or_path.find('/') == std::string::npos) {
    // PolicyPath put a NAME in DIR/<kind>.
    std::string kind_dir = path.substr(0, path.rfind('/'));
    std::string known;
    for (const auto& n : NamesIn(kind_dir)) known += (known.empty() ? "" : ", ") + n;
    e.err = 0;
    e.detail = known.empty() ? "unknown (" + kind_dir + " holds none)"
                             : "unknown (known in " + kind_dir + ": " + known + ")";
  }
  return e;
}

Result<std::string> PolicyFilePath(const std::string& dir, const std::string& kind,
                                   const std::string& name_or_path) {
  std::string path = BRIG_TRY(PolicyPath(dir, kind, name_or_path));
  BRIG_TRY(CheckPolicyFile(path, kind, name_or_path));
  return path;
}

std::vector<std::string> ListPolicyNames(const std::string& dir, const std::string& kind) {
  return NamesIn(dir + "/" + kind);
}

Result<v1::Profile> ParseProfile(const std::string& text, const std::string& name) {
  v1::Profile p;
  BRIG_TRY(proto::ParseTextProto(text, name, &p));
  BRIG_TRY(Validate(p, name));
  return p;
}

void FillDefaults(v1::Profile& p) {
  *p.mutable_limits() = WithDefaults(p.limits(), p.isolation() != v1::ISOLATION_NONE);
}

Result<v1::Profile> LoadProfile(const std::string& dir, const std::string& name_or_path) {
  std::string path = BRIG_TRY(PolicyFilePath(dir, "profiles", name_or_path));
  std::string text = BRIG_TRY_CTX(util::ReadUserFile(path), "profile");
  v1::Profile p = BRIG_TRY(ParseProfile(text, path));
  FillDefaults(p);
  return p;
}

}  // namespace brig::config
