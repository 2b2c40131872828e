// config::ProbeHost: what the host says about a resolved plan.
#include "config/probe.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "config/profile.h"
#include "egress/upstream.h"
#include "fs/disk_image.h"
#include "fs/outputs.h"
#include "security/caps.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::config {
namespace {

// The operator's path, symlinks resolved, so the sandbox gets the directory itself.
Status Canonicalize(std::string& path, const char* flag) {
  std::optional<std::string> real = util::RealPath(path);
  if (!real) return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  path = std::move(*real);
  return {};
}

// An existing directory, canonical.
Status CheckDir(std::string& path, const char* flag) {
  BRIG_TRY(Canonicalize(path, flag));
  struct stat st;
  if (stat(path.c_str(), &st) < 0) return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  if (!S_ISDIR(st.st_mode)) return BadInput(flag, path, "not a directory");
  return {};
}

// init runs in a user namespace and cannot raise a hard limit above brig's own.
Status CheckRlimits(const security::Rlimits& limits) {
  for (const security::Rlimit& r : security::RlimitList(limits)) {
    struct rlimit cur;
    if (getrlimit(r.resource, &cur) < 0) return SysError("getrlimit", r.name);
    if (cur.rlim_max != RLIM_INFINITY && r.hard > cur.rlim_max) {
      return BadInput("rlimit", r.name + "=" + std::to_string(r.hard),
                      "above brig's own hard limit " + std::to_string(cur.rlim_max));
    }
  }
  return {};
}

// A root-owned workspace is read through an id map (ProbeWorkspace), never written: a
// copy reads it so too, and its changes stay in brig's scratch space until they are
// exported, set-id bits dropped, to the export's owner.
Status CheckRootOwned(const Sandbox& sb, const struct stat& st) {
  if (st.st_uid != 0 || sb.fs.workspace_mode != fs::WorkspaceMode::kReadWrite) return {};
  return BadInput("workspace", sb.fs.workspace,
                  "owned by root (uid 0); brig will not write through an id map onto a "
                  "root-owned tree (a set-uid path onto the host); use a copy workspace "
                  "(--workspace-mode copy, with --export-changes), or chown it");
}

// --export-owner's "USER[:GROUP]": names or numbers; a user's group is its primary one.
Result<std::pair<uid_t, gid_t>> ParseOwner(const std::string& spec) {
  const std::string flag = "--export-owner";
  size_t colon = spec.find(':');
  std::string user = spec.substr(0, colon);
  std::optional<std::string> grp;
  if (colon != std::string::npos) grp = spec.substr(colon + 1);
  std::pair<uid_t, gid_t> out;
  std::optional<gid_t> primary;
  if (auto n = util::ParseLimit(user); n && *n < UINT32_MAX) {
    out.first = static_cast<uid_t>(*n);
    if (const passwd* pw = getpwuid(out.first)) primary = pw->pw_gid;
  } else if (const passwd* pw = user.empty() ? nullptr : getpwnam(user.c_str())) {
    out.first = pw->pw_uid;
    primary = pw->pw_gid;
  } else {
    return BadInput(flag, spec, "no such user '" + user + "' on this host");
  }
  if (!grp) {
    if (!primary) return BadInput(flag, spec, "uid " + user + " has no entry here; name its group");
    out.second = *primary;
  } else if (auto n = util::ParseLimit(*grp); n && *n < UINT32_MAX) {
    out.second = static_cast<gid_t>(*n);
  } else if (const struct group* gr = grp->empty() ? nullptr : getgrnam(grp->c_str())) {
    out.second = gr->gr_gid;
  } else {
    return BadInput(flag, spec, "no such group '" + *grp + "' on this host");
  }
  return out;
}

// Whose the export is: --export-owner's, else the workspace's owner, else (root's
// workspace) brig's caller, who runs the harness. Without root brig can give it only to
// the caller.
Status ProbeExportOwner(Sandbox& sb, const struct stat& ws) {
  if (sb.fs.export_changes.empty()) return {};
  std::pair<uid_t, gid_t> owner = {ws.st_uid, ws.st_gid};
  if (!sb.export_owner.empty()) {
    owner = BRIG_TRY(ParseOwner(sb.export_owner));
  } else if (ws.st_uid == 0) {
    owner = {getuid(), getgid()};
  }
  if (geteuid() != 0 && (owner.first != geteuid() || owner.second != getegid())) {
    return BadInput("--export-owner", sb.export_owner.empty() ? sb.fs.workspace : sb.export_owner,
                    "without root brig gives the export only to its caller (uid " +
                        std::to_string(geteuid()) + ", gid " + std::to_string(getegid()) + ")");
  }
  sb.fs.export_owner = owner;
  return {};
}

// The workspace, canonical, and its owner, whom the sandbox's ids map to.
Status ProbeWorkspace(Sandbox& sb) {
  std::string& w = sb.fs.workspace;
  if (w.empty()) return {};
  BRIG_TRY(Canonicalize(w, "--workspace"));
  struct stat st;
  if (stat(w.c_str(), &st) < 0) return SysError("--workspace", w).WithKind(ErrorKind::kBadInput);
  if (!S_ISDIR(st.st_mode)) return BadInput("--workspace", w, "not a directory");
  if (access(w.c_str(), R_OK | X_OK) < 0) {
    return SysError("--workspace", w).WithKind(ErrorKind::kBadInput);
  }
  // Files the sandbox creates belong to the workspace's owner on the host: the workspace
  // is mounted id-mapped from its owner to the sandbox user (fs/idmap.h). Host root is never
  // mapped, so a root-owned workspace is read so, as its owner, and never written.
  if (st.st_uid != 0) sb.host_uid = st.st_uid;
  if (st.st_gid != 0) sb.host_gid = st.st_gid;
  BRIG_TRY(CheckRootOwned(sb, st));
  BRIG_TRY(ProbeExportOwner(sb, st));
  // The sandbox user is the workspace's owner inside: its owner bits are what it may do.
  const bool rw = sb.fs.workspace_mode == fs::WorkspaceMode::kReadWrite;
  const mode_t need = rw ? S_IRWXU : S_IRUSR | S_IXUSR;
  if ((st.st_mode & need) == need) return {};
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  return BadInput("workspace", w,
                  std::string("mode ") + mode + ": its owner (uid " + std::to_string(st.st_uid) +
                      "), as whom the sandbox user runs, may not " +
                      (rw ? "read, write and enter it; chmod u+rwx it"
                          : "read and enter it; chmod u+rx it"));
}

// --chdir's directory, reached inside the workspace as the sandbox will reach it (a
// symlink on the way resolves within it), so a missing one is refused before anything
// starts. Without isolation the command starts in the workspace's own path.
Status ProbeChdir(Sandbox& sb) {
  if (!sb.isolated) {
    sb.workdir = sb.fs.workspace;
    if (!sb.chdir.empty()) sb.workdir += "/" + sb.chdir;
  }
  if (sb.chdir.empty()) return {};
  sys::UniqueFd ws(open(sb.fs.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!ws) return SysError("--workspace", sb.fs.workspace).WithKind(ErrorKind::kBadInput);
  auto dir = sys::Openat2(ws.get(), sb.chdir, O_PATH | O_DIRECTORY,
                          RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (!dir) {
    return BadInput(
        "--chdir", "/workspace/" + sb.chdir,
        std::string("not a directory of the workspace (") + strerror(dir.error().err) + ")");
  }
  return {};
}

// A per-run mount's source, checked as the workspace is: an existing directory, not a
// symlink at its own name, canonical; never brig's own state or caches, nor anything that
// holds them, nor the workspace or a directory above or in it (which would show the
// hidden paths, or write past a read-only workspace).
Status ProbeMountSource(const Sandbox& sb, fs::NamedMount& m) {
  const std::string flag = "--mount";
  const std::string given = m.name + "=" + m.source;
  struct stat st;
  if (lstat(m.source.c_str(), &st) < 0) return SysError(flag, given).WithKind(ErrorKind::kBadInput);
  if (S_ISLNK(st.st_mode)) return BadInput(flag, given, "a symlink; name the directory itself");
  BRIG_TRY(CheckDir(m.source, "--mount"));
  for (const std::string& own : {util::RunDir(), util::CacheDir(), std::string("/proc"),
                                 std::string("/sys"), std::string("/dev")}) {
    if (util::PathWithin(m.source, own) || util::PathWithin(own, m.source)) {
      return BadInput(flag, given,
                      std::string("overlaps ") + own + ", which is brig's or the kernel's");
    }
  }
  const std::string& w = sb.fs.workspace;
  if (!w.empty() && (util::PathWithin(m.source, w) || util::PathWithin(w, m.source))) {
    return BadInput(flag, given, "overlaps the workspace " + w + "; the workspace is mounted once");
  }
  return {};
}

// brig's files for the user (--result, --audit-log, --export-changes, --copy-dir) never in
// a writable mount's source, where the sandbox could forge or truncate them.
Status CheckOutputsOutside(const Sandbox& sb, const fs::NamedMount& m) {
  for (const std::string* out :
       {&sb.result_path, &sb.audit_path, &sb.fs.export_changes, &sb.fs.copy_dir}) {
    if (out->empty()) continue;
    std::string dir = out->substr(0, out->rfind('/') + 1);
    std::optional<std::string> real = util::RealPath(dir.empty() ? "." : dir);
    if (real && util::PathWithin(*real, m.source)) {
      return BadInput("--mount", m.name + "=" + m.source,
                      "writable, and it holds " + *out + ", which brig writes for you");
    }
  }
  return {};
}

// The named mounts: per-run sources checked, and the sandbox user's host ids for caches.
Status ProbeMounts(Sandbox& sb) {
  for (fs::NamedMount& m : sb.fs.mounts) {
    m.uid = sb.host_uid;
    m.gid = sb.host_gid;
    if (m.cache) continue;
    BRIG_TRY(ProbeMountSource(sb, m));
    if (m.writable) BRIG_TRY(CheckOutputsOutside(sb, m));
  }
  return {};
}

// The root, the layers and the workspace, then brig's outputs (fs/outputs.h): every
// directory brig will write in exists, is writable and lies outside the workspace.
Status ProbePaths(Sandbox& sb) {
  if (!sb.fs.rootfs.empty()) BRIG_TRY(CheckDir(sb.fs.rootfs, "--rootfs"));
  for (std::string& layer : sb.fs.layers) BRIG_TRY(CheckDir(layer, "--layer"));
  BRIG_TRY(ProbeWorkspace(sb));
  BRIG_TRY(ProbeChdir(sb));
  fs::Outputs outputs{sb.result_path, sb.audit_path, sb.fs.export_changes, sb.fs.copy_dir,
                      sb.manifest_path};
  BRIG_TRY(fs::CheckOutputs(outputs, sb.fs.workspace));
  sb.fs.export_changes = outputs.export_changes;
  sb.fs.copy_dir = outputs.copy_dir;
  BRIG_TRY(ProbeMounts(sb));
  // A cap is never dropped for want of what enforces it (design.md, Invariant 1).
  if (!sb.fs.copy_dir.empty() && sb.fs.disk_size) {
    BRIG_TRY(fs::CheckDiskImage(sb.fs.copy_dir));
  }
  return {};
}

// Each broker's header values, read from brig's environment or files, and its target's
// addresses, found before anything starts.
Status ProbeBrokers(Sandbox& sb, char** environ) {
  for (size_t i = 0; i < sb.brokers.size(); ++i) {
    broker::Config& c = sb.brokers[i];
    auto s = broker::Resolve(c, environ, sb.dry_run);
    if (s) continue;
    const std::string spec = i < sb.broker_specs.size() ? sb.broker_specs[i] : "";
    if (!spec.empty()) return BadInput("--broker", spec, s.error().Render());
    return std::move(s).error().Wrap("profile '" + sb.profile + "': broker " + c.name);
  }
  return {};
}

// brig without root makes cgroups only in the one it runs in, where that is delegated to
// it (cgroup::Delegated): a limit no group there can hold is refused, never dropped,
// unless the profile marks it optional or the run says it is not wanted (--memory none).
// Without a delegated group, the sandbox still ends with its pid namespace: brig init is
// its pid 1.
Status FitDelegated(Sandbox& sb) {
  if (!sb.cgroup_parent.empty()) {
    return BadInput("--cgroup-parent", sb.cgroup_parent, cgroup::kNoParentWithoutRoot);
  }
  cgroup::Layout layout = BRIG_TRY_CTX(cgroup::ProbeLayout(), "cgroup");
  std::string why;
  std::optional<cgroup::Plan> plan = cgroup::Delegated(layout, geteuid(), &why);
  for (cgroup::LimitSlot h : cgroup::Slots(sb.limits)) {
    if (!h.value || (plan && plan->For(h.controller) == cgroup::Path::kV2)) continue;
    if (!h.optional) {
      std::string lacks = plan ? "its delegated cgroup " + plan->parent + " offers no " +
                                     std::string(cgroup::Name(h.controller)) + " controller"
                               : why;
      return Fail(std::string("limits.") + h.name, sb.profile,
                  "brig without root has no cgroup to hold it (" + lacks +
                      "); run brig in a cgroup delegated to you (systemd-run --user --scope -p "
                      "Delegate=yes brig run ...), or say it is not wanted with --" +
                      h.name + " none (brig-run(1), Limits without root)",
                  ErrorKind::kSetup);
    }
    h.value.reset();
  }
  if (!sb.limits.memory) sb.limits.swap.reset();
  if (plan) {
    // Its v2 group alone: an ordinary user is delegated nothing in a v1 hierarchy.
    sb.cgroup_layout.v2 = layout.v2;
    sb.cgroup_plan = *plan;
  }
  return {};
}

// The host's cgroups, the path each controller takes under --cgroup-parent, and the limits
// that can hold there (an optional one without its controller is dropped).
Status FitCgroups(Sandbox& sb) {
  if (util::Rootless()) return FitDelegated(sb);
  sb.cgroup_layout = BRIG_TRY_CTX(cgroup::ProbeLayout(), "cgroup");
  sb.cgroup_plan = cgroup::PlanFor(sb.cgroup_layout, sb.cgroup_parent);
  return cgroup::FitLimits(sb.cgroup_plan, sb.limits);
}

}  // namespace

supervise::TerminalCodeset TerminalCodesetOf(char** environ) {
  auto get = [environ](std::string_view key) {
    return util::EnvLookup(environ, key).value_or(std::string_view());
  };
  return supervise::CodesetOfLocale(get("LC_ALL"), get("LC_CTYPE"), get("LANG"));
}

Status ProbeHost(Sandbox& sb, char** environ) {
  sb.terminal_codeset = TerminalCodesetOf(environ);
  if (sb.network && sb.egress.upstreams.empty()) {
    sb.egress.upstreams = BRIG_TRY(egress::HostUpstreams());
  }
  BRIG_TRY(ProbeBrokers(sb, environ));
  if (sb.isolated) {
    BRIG_TRY(CheckPolicyFile(sb.seccomp_policy, "seccomp", sb.seccomp_policy_name));
  }
  BRIG_TRY(ProbePaths(sb));
  BRIG_TRY(CheckRlimits(sb.rlimits));
  return FitCgroups(sb);
}

}  // namespace brig::config
