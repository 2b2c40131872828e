// config::Resolve: the profile's posture and limits, then the run's overrides on them.
#include "config/resolve.h"

#include <string_view>

#include "config/limits.h"
#include "config/profile.h"
#include "net/network.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::config {
namespace {

// --disk-size and --copy-dir without a copy workspace.
constexpr char kNeedsCopy[] =
    "needs a copy workspace (--workspace with a profile or --workspace-mode that makes one)";

fs::WorkspaceMode ModeOf(v1::WorkspaceAccess a) {
  return a == v1::WORKSPACE_RW     ? fs::WorkspaceMode::kReadWrite
         : a == v1::WORKSPACE_COPY ? fs::WorkspaceMode::kCopy
                                   : fs::WorkspaceMode::kReadOnly;
}

// The profile's limits, then the run's (the only things a run may change).
Status MergeLimits(const Limits& l, const Overrides& run, Sandbox& sb) {
  sb.timeout = run.timeout.value_or(l.timeout);
  sb.grace = run.grace.value_or(l.grace);
  sb.wait_all = run.wait_all;
  if (run.tty)
    sb.terminal = *run.tty ? supervise::TerminalMode::kAlways : supervise::TerminalMode::kNever;
  if (sb.wait_all && !sb.isolated) {
    // Its command's orphans go to the host's init, not to brig: nothing could wait for them.
    return BadInput("--wait-all", "", "profile '" + run.profile +
                                          "' has no brig init (ISOLATION_NONE) to wait for what "
                                          "the command leaves running");
  }
  sb.fs.tmp_size = run.tmp_size.value_or(l.tmp_size);
  sb.output_limit = run.output_limit ? run.output_limit : l.output_limit;
  sb.egress_budget = run.egress_budget ? run.egress_budget : l.egress_bytes;
  sb.rlimits = l.rlimits;
  sb.rlimits.nofile = run.rlimit_nofile.value_or(l.rlimits.nofile);
  sb.rlimits.nproc = run.rlimit_nproc.value_or(l.rlimits.nproc);
  sb.rlimits.core = run.rlimit_core.value_or(l.rlimits.core);
  sb.user_counts = l.user_counts;
  cgroup::Limits& c = sb.limits;
  c = l.cgroup;
  if (run.memory) c.memory = run.memory;
  if (run.swap) c.swap = run.swap;
  if (run.pids) c.pids = run.pids;
  if (run.cpu_milli) c.cpu_milli = run.cpu_milli;
  if (run.no_memory) {
    c.memory.reset();
    c.swap.reset();
  }
  if (run.no_pids) c.pids.reset();
  if (run.no_cpu) c.cpu_milli.reset();
  // A limit the run asks for itself is never optional.
  c.memory_optional = c.memory_optional && !run.memory && !run.swap;
  c.pids_optional = c.pids_optional && !run.pids;
  c.cpu_optional = c.cpu_optional && !run.cpu_milli;
  if (run.swap && !c.memory) {
    return BadInput("--swap", "",
                    "needs a memory limit (--memory, or the profile's limits.memory)");
  }
  return {};
}

// The resolver's and proxy's policy: the profile's names (posture allowlist) and the run's
// --allow-host, the profile's floor exceptions, and the run's nameserver (without one, the
// probe reads the host's).
Result<egress::Policy> EgressPolicy(const v1::Network& n, const Overrides& run) {
  egress::Policy p;
  p.open = n.posture() == v1::POSTURE_OPEN;
  std::vector<std::string> hosts(n.allow_hosts().begin(), n.allow_hosts().end());
  hosts.insert(hosts.end(), run.allow_hosts.begin(), run.allow_hosts.end());
  p.allowlist = BRIG_TRY(egress::Allowlist::Parse(hosts));
  p.floor = BRIG_TRY(egress::Floor::WithExceptions(
      std::vector<std::string>(n.allow_addresses().begin(), n.allow_addresses().end())));
  if (run.dns_upstream) p.upstreams = {*run.dns_upstream};
  return p;
}

// Postures allowlist and open get an interface on brig's bridge; the others take no
// network flag.
Status ResolveNetwork(const v1::Profile& profile, const Overrides& run, Sandbox& sb) {
  auto posture = profile.network().posture();
  sb.deny_stop = run.deny_stop.value_or(profile.network().on_deny() == v1::ON_DENY_STOP);
  if (sb.isolated && (posture == v1::POSTURE_ALLOWLIST || posture == v1::POSTURE_OPEN)) {
    sb.network = run.subnet ? *run.subnet : BRIG_TRY(net::ParseSubnet(net::kDefaultSubnet));
    // Any address on port 53 reaches brig's resolver; the gateway is the one to name.
    sb.fs.resolver = sb.network->Gateway().Str();
    sb.egress = BRIG_TRY(EgressPolicy(profile.network(), run));
  } else {
    std::string_view flag = run.subnet                 ? "--subnet"
                            : !run.allow_hosts.empty() ? "--allow-host"
                            : run.dns_upstream         ? "--dns-upstream"
                                                       : "";
    if (!flag.empty()) {
      return BadInput(std::string(flag), "",
                      "profile '" + run.profile + "' gives the sandbox no network interface");
    }
  }
  if (!run.allow_hosts.empty() && posture == v1::POSTURE_OPEN) {
    return BadInput("--allow-host", run.allow_hosts[0],
                    "profile '" + run.profile + "' has posture open, which has no allowlist");
  }
  return {};
}

// The profile's brokers, then the run's, each checked against the others. Brokers are
// operator wiring, as --allow-host is, allowed in every posture: they reach only the
// targets named here, and nothing of theirs enters the sandbox.
Status ResolveBrokers(const v1::Profile& profile, const Overrides& run, Sandbox& sb) {
  if (!sb.isolated && !run.brokers.empty()) {
    return BadInput("--broker", run.brokers[0].first,
                    "profile '" + run.profile + "' has no sandbox (ISOLATION_NONE) to broker into");
  }
  for (const auto& b : profile.brokers()) {
    sb.brokers.push_back(
        BRIG_TRY_CTX(broker::Check(b), "profile '" + run.profile + "': broker " + b.name()));
    sb.broker_specs.emplace_back();
    BRIG_TRY_CTX(broker::CheckAll(sb.brokers), "profile '" + run.profile + "'");
  }
  for (const auto& [spec, b] : run.brokers) {
    auto c = broker::Check(b);
    if (!c) return BadInput("--broker", spec, c.error().Render());
    sb.brokers.push_back(std::move(*c));
    sb.broker_specs.push_back(spec);
    if (auto s = broker::CheckAll(sb.brokers); !s) {
      return BadInput("--broker", spec, s.error().Render());
    }
  }
  sb.attempt = run.attempt;
  return {};
}

// The workspace's access is the profile's: a flag may restate it, never widen it
// (Invariant 2). A copy in place of a read-write workspace only narrows it: the source
// stays as it is.
Status ResolveWorkspaceMode(const v1::Filesystem& f, const Overrides& run, fs::Spec& spec) {
  spec.workspace_mode = ModeOf(f.workspace());
  bool narrows = run.workspace_mode == fs::WorkspaceMode::kCopy &&
                 spec.workspace_mode == fs::WorkspaceMode::kReadWrite;
  if (narrows) spec.workspace_mode = fs::WorkspaceMode::kCopy;
  if (run.workspace_mode && *run.workspace_mode != spec.workspace_mode) {
    return Fail("--workspace-mode", fs::WorkspaceModeName(*run.workspace_mode),
                "profile '" + run.profile + "' fixes filesystem.workspace = " +
                    v1::WorkspaceAccess_Name(f.workspace()) + "; name another profile",
                ErrorKind::kPolicy);
  }
  spec.hidden_paths.assign(f.hidden_paths().begin(), f.hidden_paths().end());
  if (spec.workspace_mode == fs::WorkspaceMode::kReadOnly) return {};
  for (const auto& p : f.protected_paths()) {
    std::string norm;
    for (std::string_view part : util::Split(p, '/')) {
      if (part.empty() || part == ".") continue;
      norm += (norm.empty() ? "" : "/") + std::string(part);
    }
    if (!norm.empty()) spec.protected_paths.push_back(norm);
  }
  return {};
}

// The seccomp policy's file: a NAME in the policy directory, or a path; a relative path
// in a profile file means one beside that file. The probe checks that it is there.
Status ResolveSeccomp(const v1::Profile& profile, const Overrides& run, Sandbox& sb) {
  std::string policy = profile.security().seccomp_policy();
  std::string profile_path = BRIG_TRY(PolicyPath(run.policy_dir, "profiles", run.profile));
  sb.seccomp_policy = BRIG_TRY(SeccompPolicyPath(run.policy_dir, profile_path, policy));
  sb.seccomp_policy_name = policy.find('/') != std::string::npos ? sb.seccomp_policy : policy;
  return {};
}

// The root and the workspace. Without isolation there is neither to mount.
Status ResolveFilesystem(const v1::Profile& profile, const Overrides& run, Sandbox& sb) {
  sb.fs.workspace = run.workspace;
  sb.fs.scratch_name = run.id;
  if (!sb.isolated) {
    if (!run.rootfs.empty() || !run.layers.empty() || run.workspace_mode ||
        !run.export_changes.empty() || !run.copy_dir.empty() || run.disk_size ||
        !run.ro_binds.empty()) {
      return Fail("profile", run.profile,
                  "ISOLATION_NONE has no root or workspace mounts: --rootfs, --layer, "
                  "--workspace-mode, --copy-dir, --disk-size, --export-changes and --ro-bind "
                  "do not apply",
                  ErrorKind::kBadInput);
    }
    return {};
  }
  BRIG_TRY(ResolveWorkspaceMode(profile.filesystem(), run, sb.fs));
  BRIG_TRY(ResolveSeccomp(profile, run, sb));
  if (run.rootfs.empty() && !run.layers.empty()) {
    return BadInput("--layer", run.layers[0], "needs a --rootfs to stack on");
  }
  sb.fs.rootfs = run.rootfs;
  sb.fs.layers = run.layers;
  return {};
}

// What a copy workspace does with its changes: where they are exported, where they are
// kept (--copy-dir) and their cap: the run's --disk-size, else the profile's limits.disk
// (only a copy profile has one), else under --copy-dir kCopyDirDisk. Nothing else can be
// capped: a read-only workspace takes no changes, and a read-write one, the host's own
// directory, cannot be.
Status ResolveCopy(const Limits& l, const Overrides& run, fs::Spec& spec) {
  bool copy = spec.workspace_mode == fs::WorkspaceMode::kCopy && !spec.workspace.empty();
  if (!run.export_changes.empty() && !copy) {
    return BadInput("--export-changes", run.export_changes,
                    "needs a copy workspace (--workspace with a profile or --workspace-mode "
                    "of copy)");
  }
  spec.export_changes = run.export_changes;
  if (!run.export_owner.empty() && run.export_changes.empty()) {
    return BadInput("--export-owner", run.export_owner, "needs --export-changes");
  }
  while (spec.export_changes.size() > 1 && spec.export_changes.back() == '/') {
    spec.export_changes.pop_back();
  }
  if (run.disk_size && !copy) {
    return BadInput("--disk-size", "",
                    std::string(kNeedsCopy) +
                        ": a read-only one takes no changes, and a read-write one, the host's "
                        "own directory, cannot be capped");
  }
  if (!run.copy_dir.empty() && !copy) return BadInput("--copy-dir", run.copy_dir, kNeedsCopy);
  if (!copy) return {};
  spec.copy_dir = run.copy_dir;
  spec.disk_size = run.disk_size.value_or(l.disk.value_or(0));
  if (!spec.copy_dir.empty() && !spec.disk_size) spec.disk_size = kCopyDirDisk;
  return {};
}

// A broker's socket is bound in brig's root: under a mount at `target` it would be made in
// the host's directory.
// `what` names the mount ("mount 'data'", "a --ro-bind").
Status BrokerSocketsOutside(const Sandbox& sb, const std::string& target, const std::string& what) {
  for (const auto& b : sb.brokers) {
    if (util::PathWithin(b.unix_path, target)) {
      return BadInput("broker " + b.name, b.unix_path,
                      "its socket is in " + what + " (" + target + ")");
    }
  }
  return {};
}

// --ro-bind SRC DST: read-only mounts a run adds, each a named mount of its own ("--ro-bind
// DST") with the holds of a read-only workspace. DST is checked as a profile's mount target
// is, and against the other mounts and the brokers' sockets; the probe checks SRC.
Status ResolveRoBinds(const Overrides& run, Sandbox& sb) {
  for (const auto& [src, dst] : run.ro_binds) {
    const std::string given = src + " " + dst;
    if (std::string why = MountTargetProblem(dst); !why.empty()) {
      return BadInput("--ro-bind", given, why);
    }
    for (const fs::NamedMount& m : sb.fs.mounts) {
      if (util::PathWithin(dst, m.target) || util::PathWithin(m.target, dst)) {
        return BadInput("--ro-bind", given,
                        "'" + dst + "' overlaps " + m.target + " (" +
                            (m.ro_bind ? "another --ro-bind" : "mount '" + m.name + "'") + ")");
      }
    }
    BRIG_TRY(BrokerSocketsOutside(sb, dst, "a --ro-bind"));
    fs::NamedMount m{"--ro-bind " + dst, dst, false, false, src, 0, 0};
    m.ro_bind = true;
    sb.fs.mounts.push_back(std::move(m));
  }
  return {};
}

// The profile's named mounts with the run's sources (--mount NAME=PATH). A run names only
// sources: a name the profile does not declare, or a path for a cache, is refused, so
// nothing on the command line adds a mount (Invariant 2).
Status ResolveMounts(const v1::Profile& profile, const Overrides& run, Sandbox& sb) {
  std::string declared;
  for (const auto& m : profile.mounts()) declared += (declared.empty() ? "" : ", ") + m.name();
  for (const auto& [name, path] : run.mounts) {
    const v1::Mount* m = nullptr;
    for (const auto& d : profile.mounts()) m = d.name() == name ? &d : m;
    const std::string spec = name + "=" + path;
    if (!m) {
      return BadInput("--mount", spec,
                      "profile '" + run.profile + "' declares no mount '" + name + "' (" +
                          (declared.empty() ? "it declares none" : "it declares: " + declared) +
                          "); a read-only one is --ro-bind " + path +
                          " DST, a writable one the profile's (brig-profile(5), MOUNTS): "
                          "mounts { name: \"" +
                          name + "\" target: \"/mnt/" + name +
                          "\" writable: true source: MOUNT_PER_RUN }");
    }
    if (m->source() == v1::MOUNT_CACHE) {
      return BadInput("--mount", spec, "'" + name + "' is a cache brig keeps; it takes no path");
    }
  }
  for (const auto& m : profile.mounts()) {
    fs::NamedMount nm{m.name(), m.target(), m.writable(), m.source() == v1::MOUNT_CACHE, "", 0, 0};
    for (const auto& [name, path] : run.mounts) nm.source = name == m.name() ? path : nm.source;
    if (!nm.cache && nm.source.empty()) {
      if (m.optional()) continue;
      return BadInput("profile", run.profile,
                      "mount '" + m.name() + "' needs a source: --mount " + m.name() + "=PATH");
    }
    BRIG_TRY(BrokerSocketsOutside(sb, m.target(), "mount '" + m.name() + "'"));
    sb.fs.mounts.push_back(std::move(nm));
  }
  return ResolveRoBinds(run, sb);
}

// --chdir needs a workspace to be in; the probe checks that the directory is there.
Status ResolveChdir(const Overrides& run, Sandbox& sb) {
  if (run.chdir && run.workspace.empty()) {
    return BadInput("--chdir", *run.chdir, "needs a --workspace to be inside");
  }
  sb.chdir = run.chdir.value_or("");
  if (sb.isolated) sb.workdir = "/workspace" + (sb.chdir.empty() ? "" : "/" + sb.chdir);
  return {};
}

// "none", "broker-only", "allowlist" or "open"; "unconfined" without isolation.
std::string PostureName(const v1::Profile& p) {
  if (p.isolation() == v1::ISOLATION_NONE) return "unconfined";
  switch (p.network().posture()) {
    case v1::POSTURE_BROKER_ONLY:
      return "broker-only";
    case v1::POSTURE_ALLOWLIST:
      return "allowlist";
    case v1::POSTURE_OPEN:
      return "open";
    default:
      return "none";
  }
}

}  // namespace

Result<Sandbox> Resolve(const v1::Profile& profile, const Overrides& run) {
  Sandbox sb;
  if (profile.isolation() != v1::ISOLATION_SANDBOX && profile.isolation() != v1::ISOLATION_NONE) {
    return BadInput(run.profile, "isolation", "must be ISOLATION_SANDBOX or ISOLATION_NONE");
  }
  sb.isolated = profile.isolation() == v1::ISOLATION_SANDBOX;
  sb.id = run.id;
  sb.name = run.name;
  sb.profile = run.profile;
  sb.posture_name = PostureName(profile);
  sb.argv = run.argv;
  sb.result_path = run.result_path;
  sb.audit_path = run.audit_path;
  sb.manifest_path = run.manifest_path;
  sb.dry_run = run.dry_run;
  sb.posture = profile.network().posture();
  sb.loaded_profile = profile;
  sb.cgroup_parent = run.cgroup_parent;
  Limits limits = BRIG_TRY(ParseLimits(profile.limits(), run.profile));
  BRIG_TRY(MergeLimits(limits, run, sb));
  BRIG_TRY(ResolveNetwork(profile, run, sb));
  BRIG_TRY(ResolveBrokers(profile, run, sb));
  BRIG_TRY(ResolveFilesystem(profile, run, sb));
  BRIG_TRY(ResolveCopy(limits, run, sb.fs));
  sb.export_owner = run.export_owner;
  BRIG_TRY(ResolveChdir(run, sb));
  BRIG_TRY(ResolveMounts(profile, run, sb));
  sb.env = BuildEnv(run);
  return sb;
}

std::vector<std::string> BuildEnv(const Overrides& run) {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp",
      "LANG=C.UTF-8"};
  auto set = [&](const std::string& kv) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    for (auto& e : env) {
      if (e.compare(0, key.size(), key) == 0) {
        e = kv;
        return;
      }
    }
    env.push_back(kv);
  };
  for (const auto& kv : run.passed_env) set(kv);
  for (const auto& kv : run.set_env) set(kv);
  return env;
}

}  // namespace brig::config
