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
#include "util/trusted_cache.h"

namespace brig::config {
namespace {

// One validation error of a profile: the field (dots between nested ones), the element of
// a repeated one (-1: none), why. Validation lists them all; each is then placed at its
// file:line:column.
struct Problem {
  std::string field;
  int index = -1;
  std::string why;
};
using Problems = std::vector<Problem>;

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

void ValidateFilesystem(const v1::Profile& p, Problems& out) {
  const v1::Filesystem& f = p.filesystem();
  if (f.workspace() == v1::WORKSPACE_ACCESS_UNSPECIFIED) {
    out.push_back({"filesystem.workspace", -1, "must be set"});
  }
  // Only a copy's changes can be capped: a read-only workspace takes none, and a read-write
  // one is the host's own directory, whose writes no cap of brig's holds.
  if (!p.limits().disk().empty() && f.workspace() != v1::WORKSPACE_COPY) {
    out.push_back({"limits.disk", -1,
                   "only a copy workspace (WORKSPACE_COPY) can be capped; a read-write one "
                   "cannot"});
  }
  for (int i = 0; i < f.protected_paths_size(); ++i) {
    if (!IsWorkspaceRelative(f.protected_paths(i))) {
      out.push_back({"filesystem.protected_paths", i,
                     "'" + f.protected_paths(i) + "' leaves the workspace"});
    }
  }
  for (int i = 0; i < f.hidden_paths_size(); ++i) {
    if (auto h = fs::ParseHiddenPattern(f.hidden_paths(i)); !h) {
      out.push_back(
          {"filesystem.hidden_paths", i, "'" + f.hidden_paths(i) + "': " + h.error().detail});
    }
  }
}

// Paths a named mount's target may neither be, lie under, nor hold: what brig mounts
// itself, and the root's read-only system directories.
const char* const kReservedTargets[] = {"/workspace", "/tmp",   "/proc",  "/dev",  "/sys",
                                        "/etc",       "/usr",   "/bin",   "/sbin", "/lib",
                                        "/lib32",     "/lib64", "/libx32"};

// Whether one of two normalised absolute paths is the other or lies under it.
bool Overlap(const std::string& a, const std::string& b) {
  return util::PathWithin(a, b) || util::PathWithin(b, a);
}

// An absolute path with no empty, "." or ".." component, not "/".
bool IsNormalTarget(const std::string& t) {
  if (t.size() < 2 || t[0] != '/' || t.back() == '/') return false;
  for (std::string_view part : util::Split(std::string_view(t).substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

}  // namespace

std::string MountTargetProblem(const std::string& target) {
  if (!IsNormalTarget(target)) {
    return "'" + target + "' is not an absolute path without '.' or '..'";
  }
  for (const char* r : kReservedTargets) {
    if (Overlap(target, r))
      return "'" + target + "' overlaps " + r + ", which brig provides itself";
  }
  return "";
}

namespace {

// The problems of the profile's mount `i`, each at its field.
void ValidateMount(const v1::Profile& p, int i, Problems& out) {
  const v1::Mount& m = p.mounts(i);
  const std::string what = "mount '" + m.name() + "'";
  if (!util::IsObjectName(m.name())) {
    out.push_back({"mounts.name", i,
                   "'" + m.name() + "': expected [A-Za-z0-9][A-Za-z0-9_.-]{0,63}"});
  }
  if (std::string why = MountTargetProblem(m.target()); !why.empty()) {
    out.push_back({"mounts.target", i, what + ": " + why});
  }
  if (m.source() != v1::MOUNT_PER_RUN && m.source() != v1::MOUNT_CACHE) {
    out.push_back({"mounts.source", i, what + ": must be MOUNT_PER_RUN or MOUNT_CACHE"});
  }
  if (m.optional() && m.source() != v1::MOUNT_PER_RUN) {
    out.push_back({"mounts.optional", i, what + ": only a per-run mount can be optional"});
  }
  for (int j = 0; j < i; ++j) {
    if (p.mounts(j).name() == m.name()) {
      out.push_back({"mounts.name", i, "'" + m.name() + "' declared twice"});
    }
    if (Overlap(p.mounts(j).target(), m.target())) {
      out.push_back({"mounts.target", i,
                     "'" + m.target() + "' overlaps '" + p.mounts(j).target() + "'"});
    }
  }
}

void ValidateNetwork(const v1::Network& n, Problems& out) {
  if (n.posture() == v1::NETWORK_POSTURE_UNSPECIFIED) {
    out.push_back({"network.posture", -1, "must be set"});
  }
  if (n.allow_hosts_size() > 0 && n.posture() != v1::POSTURE_ALLOWLIST) {
    out.push_back({"network.allow_hosts", 0, "only an allowlist posture has an allowlist"});
  }
  for (int i = 0; i < n.allow_hosts_size(); ++i) {
    if (auto pattern = egress::ParseHostPattern(n.allow_hosts(i)); !pattern) {
      out.push_back(
          {"network.allow_hosts", i, "'" + n.allow_hosts(i) + "': " + pattern.error().detail});
    }
  }
  bool interface = n.posture() == v1::POSTURE_ALLOWLIST || n.posture() == v1::POSTURE_OPEN;
  if (n.allow_addresses_size() > 0 && !interface) {
    out.push_back(
        {"network.allow_addresses", 0, "only postures allowlist and open connect anywhere"});
  }
  for (int i = 0; i < n.allow_addresses_size(); ++i) {
    if (auto floor = egress::Floor::WithExceptions({n.allow_addresses(i)}); !floor) {
      out.push_back({"network.allow_addresses", i,
                     "'" + n.allow_addresses(i) + "': " + floor.error().detail});
    }
  }
}

void ValidateBrokers(const v1::Profile& p, Problems& out) {
  std::vector<broker::Config> brokers;
  for (int i = 0; i < p.brokers_size(); ++i) {
    const v1::Broker& b = p.brokers(i);
    auto c = broker::Check(b);
    if (!c) {
      out.push_back({"brokers", i, "'" + b.name() + "': " + c.error().Render()});
      continue;
    }
    brokers.push_back(std::move(*c));
    if (auto all = broker::CheckAll(brokers); !all) {
      out.push_back({"brokers", i, "'" + b.name() + "': " + all.error().Render()});
      brokers.pop_back();
    }
  }
}

// Clears the field at `path` ("limits.user_counts.namespaces") of `msg`; false if there is
// no such field.
bool ClearPath(google::protobuf::Message& msg, const std::string& path) {
  size_t dot = path.find('.');
  const auto* field = msg.GetDescriptor()->FindFieldByName(path.substr(0, dot));
  if (!field) return false;
  const auto* r = msg.GetReflection();
  if (dot == std::string::npos) {
    r->ClearField(&msg, field);
    return true;
  }
  if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
      field->is_repeated()) {
    return false;
  }
  return ClearPath(*r->MutableMessage(&msg, field), path.substr(dot + 1));
}

// ParseLimits names the first limit it refuses: each one is noted and cleared, and the
// rest parsed again, until they parse.
void ValidateLimits(const v1::Profile& p, const std::string& file, Problems& out) {
  v1::Profile rest = p;
  for (auto l = ParseLimits(rest.limits(), file); !l; l = ParseLimits(rest.limits(), file)) {
    for (const Problem& seen : out) {
      if (seen.field == l.error().subject) return;  // clearing it did not help: stop
    }
    out.push_back({l.error().subject, -1, l.error().detail});
    if (!ClearPath(rest, l.error().subject)) return;
  }
}

Problems Validate(const v1::Profile& p, const std::string& file) {
  Problems out;
  ValidateLimits(p, file, out);
  switch (p.isolation()) {
    case v1::ISOLATION_NONE:
      // No isolation means nothing else to say: a profile that lists walls it cannot
      // have would mislead whoever reads it.
      if (p.has_filesystem() || p.has_network() || p.has_security() || p.brokers_size() > 0 ||
          p.mounts_size() > 0) {
        out.push_back({"isolation", -1,
                       "ISOLATION_NONE takes no filesystem, network, security, broker or mount "
                       "settings"});
      }
      if (!p.limits().disk().empty()) {
        out.push_back({"limits.disk", -1, "ISOLATION_NONE has no copy workspace to cap"});
      }
      return out;
    case v1::ISOLATION_SANDBOX:
      break;
    default:
      out.push_back({"isolation", -1, "must be ISOLATION_SANDBOX or ISOLATION_NONE"});
      return out;
  }
  ValidateFilesystem(p, out);
  ValidateNetwork(p.network(), out);
  ValidateBrokers(p, out);
  for (int i = 0; i < p.mounts_size(); ++i) ValidateMount(p, i, out);
  if (p.security().seccomp_policy().empty()) {
    out.push_back({"security.seccomp_policy", -1, "must name a policy"});
  }
  return out;
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
  std::vector<Error> errors;
  v1::Profile p = BRIG_TRY(ParseProfileAll(text, name, errors));
  if (!errors.empty()) return errors.front();
  return p;
}

Result<v1::Profile> ParseProfileAll(const std::string& text, const std::string& name,
                                    std::vector<Error>& errors) {
  v1::Profile p;
  google::protobuf::TextFormat::ParseInfoTree locations;
  BRIG_TRY(proto::ParseTextProto(text, name, &p, &locations));
  for (const Problem& e : Validate(p, name)) {
    std::string where = proto::FieldLocation(v1::Profile::descriptor(), &locations, name,
                                             e.field, e.index);
    errors.push_back(Fail(where, e.field, e.why, ErrorKind::kBadInput));
  }
  return p;
}

Result<std::string> SeccompPolicyPath(const std::string& dir, const std::string& profile_path,
                                      const std::string& policy) {
  if (!policy.empty() && policy[0] != '/' && policy.find('/') != std::string::npos) {
    return PolicyPath(dir, "seccomp", profile_path.substr(0, profile_path.rfind('/') + 1) + policy);
  }
  return PolicyPath(dir, "seccomp", policy);
}

void FillDefaults(v1::Profile& p) {
  *p.mutable_limits() = WithDefaults(p.limits(), p.isolation() != v1::ISOLATION_NONE);
}

Result<LoadedProfile> LoadProfileFile(const std::string& dir, const std::string& name_or_path,
                                      const std::string& cache_dir) {
  LoadedProfile l;
  l.path = BRIG_TRY(PolicyFilePath(dir, "profiles", name_or_path));
  l.text = BRIG_TRY_CTX(util::ReadUserFile(l.path), "profile");
  util::TrustedCache cache(cache_dir, "profile");
  std::optional<std::string> hit = cache.Get(l.text);
  if (!hit || !l.profile.ParseFromString(*hit) || !Validate(l.profile, l.path).empty()) {
    l.profile = BRIG_TRY(ParseProfile(l.text, l.path));
    std::string bytes;
    if (l.profile.SerializeToString(&bytes)) cache.Put(l.text, bytes);
  }
  FillDefaults(l.profile);
  return l;
}

Result<v1::Profile> LoadProfile(const std::string& dir, const std::string& name_or_path) {
  return BRIG_TRY(LoadProfileFile(dir, name_or_path)).profile;
}

}  // namespace brig::config
