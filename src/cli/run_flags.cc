// `brig run` flags: parsing (pure) and resolution against the host.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "broker/spec.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "proto/brig.pb.h"
#include "egress/upstream.h"
#include "fs/disk_image.h"
#include "fs/outputs.h"
#include "net/network.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

using Apply = std::function<Status(RunRequest&, const std::string&)>;

// The kernel's PID_MAX_LIMIT, the largest pids.max it accepts.
constexpr uint64_t kMaxPids = 4194304;

struct Flag {
  const char* name;
  const char* metavar;  // nullptr: takes no value
  const char* help;
  Apply apply;
};

Status SetRlimit(RunRequest& r, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos) return BadInput("--rlimit", v, "expected NAME=VALUE");
  std::string name = v.substr(0, eq);
  auto value = util::ParseLimit(v.substr(eq + 1));
  if (!value) return BadInput("--rlimit", v, value.error().detail);
  if (name == "nofile") {
    r.rlimit_nofile = *value;
  } else if (name == "nproc") {
    r.rlimit_nproc = *value;
  } else if (name == "core") {
    r.rlimit_core = *value;
  } else {
    return BadInput("--rlimit", v, "unknown limit '" + name + "' (nofile, nproc, core)");
  }
  return {};
}

Status SetDuration(std::optional<std::chrono::milliseconds>& out, const char* flag,
                   const std::string& v) {
  auto d = util::ParseDuration(v);
  if (!d) return BadInput(flag, v, d.error().detail);
  out = *d;
  return {};
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--profile", "NAME|PATH", "the profile that fixes the sandbox's posture "
                                 "(default untrusted-code-read)",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--profile", v, "empty name");
         r.profile = v;
         return {};
       }},
      {"--workspace", "DIR", "mount DIR at /workspace (the working directory)",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--workspace", v, "empty path");
         r.workspace = v;
         return {};
       }},
      {"--workspace-mode", "ro|rw|copy",
       "restate the profile's workspace access, or narrow rw to copy; never widen it",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v == "ro") {
           r.workspace_mode = config::WorkspaceMode::kReadOnly;
         } else if (v == "rw") {
           r.workspace_mode = config::WorkspaceMode::kReadWrite;
         } else if (v == "copy") {
           r.workspace_mode = config::WorkspaceMode::kCopy;
         } else {
           return BadInput("--workspace-mode", v, "expected ro, rw or copy");
         }
         return {};
       }},
      {"--rootfs", "DIR", "use DIR as the read-only root instead of the host-derived one",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--rootfs", v, "empty path");
         r.rootfs = v;
         return {};
       }},
      {"--layer", "DIR",
       "stack DIR on the --rootfs with overlayfs (repeatable; the last one is on top)",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--layer", v, "empty path");
         r.layers.push_back(v);
         return {};
       }},
      {"--tmp-size", "SIZE", "size cap of /tmp and of /dev/shm (profile default 1G)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = util::ParseSize(v);
         if (!s) return BadInput("--tmp-size", v, s.error().detail);
         r.tmp_size = *s;
         return {};
       }},
      {"--memory", "SIZE", "memory limit of the whole sandbox; past it, 137 (oom_killed)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = util::ParseMemory(v);
         if (!s) return BadInput("--memory", v, s.error().detail);
         r.memory = *s;
         return {};
       }},
      {"--swap", "SIZE", "swap allowed beyond --memory: 0 (the default), SIZE or unlimited",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = util::ParseSizeLimit(v);
         if (!s) return BadInput("--swap", v, s.error().detail);
         r.swap = *s;
         return {};
       }},
      {"--pids", "N", "most tasks the sandbox may hold at once, brig init included",
       [](RunRequest& r, const std::string& v) -> Status {
         auto n = util::ParseLimit(v);
         if (!n || *n == 0 || *n > kMaxPids) {
           return BadInput("--pids", v, "expected a number from 1 to 4194304");
         }
         r.pids = *n;
         return {};
       }},
      {"--cpus", "N", "CPU time as a number of CPUs, fractional (0.5: half of one CPU)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto c = util::ParseCpus(v);
         if (!c) return BadInput("--cpus", v, c.error().detail);
         r.cpu_milli = *c;
         return {};
       }},
      {"--cgroup-parent", "PATH",
       "create the sandbox's cgroups under PATH in each hierarchy (default: brig's own)",
       [](RunRequest& r, const std::string& v) -> Status {
         BRIG_TRY(cgroup::CheckParent(v));
         r.cgroup_parent = v;
         return {};
       }},
      {"--subnet", "CIDR",
       "the bridge's subnet, for postures with an interface (default 10.213.0.0/16)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = net::ParseSubnet(v);
         if (!s) return BadInput("--subnet", v, s.error().detail);
         r.subnet = v;
         return {};
       }},
      {"--allow-host", "PATTERN",
       "allow one more host for this run, in the allowlist syntax (repeatable; posture "
       "allowlist only)",
       [](RunRequest& r, const std::string& v) -> Status {
         BRIG_TRY_CTX(egress::ParseHostPattern(v), "--allow-host");
         r.allow_hosts.push_back(v);
         return {};
       }},
      {"--dns-upstream", "ADDR[:PORT]",
       "the nameserver brig's resolver asks (default: /etc/resolv.conf's IPv4 ones)",
       [](RunRequest& r, const std::string& v) -> Status {
         BRIG_TRY(egress::ParseUpstream(v));
         r.dns_upstream = v;
         return {};
       }},
      {"--broker", "NAME=SPEC",
       "a broker (repeatable): SPEC is port=PORT and/or unix=/PATH inside, to=TARGET "
       "(unix:/PATH, tcp:HOST:PORT, http(s)://HOST[:PORT]) on the host, and "
       "header=NAME:env:VAR or NAME:file:/PATH, attribution=NAME, mode=http|tcp, "
       "methods=M[,M...] and paths=/P[,/P...] (only these reach the target)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto b = broker::ParseSpec(v);
         if (!b) return BadInput("--broker", v, b.error().Render());
         if (auto c = broker::Check(*b); !c) return BadInput("--broker", v, c.error().Render());
         r.brokers.emplace_back(v, std::move(*b));
         return {};
       }},
      {"--attempt", "N",
       "which attempt at the phase this run is (default 1); brokers send <sandbox id>/N",
       [](RunRequest& r, const std::string& v) -> Status {
         auto n = util::ParseLimit(v);
         if (!n || *n == 0 || *n > UINT32_MAX) {
           return BadInput("--attempt", v, "expected a number from 1 to 4294967295");
         }
         r.attempt = static_cast<uint32_t>(*n);
         return {};
       }},
      {"--env", "K=V", "set K to V in the sandbox (repeatable)",
       [](RunRequest& r, const std::string& v) -> Status {
         size_t eq = v.find('=');
         if (eq == std::string::npos || !util::IsEnvName(v.substr(0, eq))) {
           return BadInput("--env", v, "expected NAME=VALUE with NAME of [A-Za-z0-9_]");
         }
         r.set_env.push_back(v);
         return {};
       }},
      {"--pass-env", "K", "copy K from brig's environment, if set (repeatable)",
       [](RunRequest& r, const std::string& v) -> Status {
         if (!util::IsEnvName(v)) return BadInput("--pass-env", v, "not a variable name");
         r.pass_env.push_back(v);
         return {};
       }},
      {"--timeout", "DURATION", "kill the sandbox after DURATION (profile default 30m): 124",
       [](RunRequest& r, const std::string& v) { return SetDuration(r.timeout, "--timeout", v); }},
      {"--grace", "DURATION",
       "after forwarding SIGTERM/SIGINT/SIGHUP, wait this long before killing (10s)",
       [](RunRequest& r, const std::string& v) { return SetDuration(r.grace, "--grace", v); }},
      {"--output-limit", "SIZE",
       "relay at most SIZE bytes of each of stdout and stderr; the rest is dropped (the "
       "workload's writes still succeed) and the result says so",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = util::ParseSize(v);
         if (!s) return BadInput("--output-limit", v, s.error().detail);
         r.output_limit = *s;
         return {};
       }},
      {"--rlimit", "NAME=N", "nofile (4096), nproc (4096) or core (0); N or unlimited",
       [](RunRequest& r, const std::string& v) { return SetRlimit(r, v); }},
      {"--copy-dir", "DIR",
       "with a copy workspace: keep its changes in a new directory under DIR, in a disk "
       "image of --disk-size (8G unless set), instead of a tmpfs of --disk-size or --tmp-size",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--copy-dir", v, "empty path");
         r.copy_dir = v;
         return {};
       }},
      {"--disk-size", "SIZE",
       "with a copy workspace: cap its changes at SIZE (at least 1M), the kernel refusing "
       "writes past it (ENOSPC): a tmpfs of SIZE, or with --copy-dir a file system image of "
       "SIZE there (profile limits.disk)",
       [](RunRequest& r, const std::string& v) -> Status {
         auto s = util::ParseDiskSize(v);
         if (!s) return BadInput("--disk-size", v, s.error().detail);
         r.disk_size = *s;
         return {};
       }},
      {"--export-changes", "DIR",
       "with a copy workspace: write what the sandbox changed to DIR, a new directory",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--export-changes", v, "empty path");
         r.export_changes = v;
         return {};
       }},
      {"--result", "FILE", "write the result as one JSON object to FILE",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--result", v, "empty path");
         r.result_path = v;
         return {};
       }},
      {"--audit-log", "FILE", "append JSON-lines audit events to FILE (written by brig)",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--audit-log", v, "empty path");
         r.audit_path = v;
         return {};
       }},
      {"--policy-dir", "DIR", "read profiles and policies from DIR, not the installed ones",
       [](RunRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--policy-dir", v, "empty path");
         r.policy_dir = v;
         return {};
       }},
      {"--help", nullptr, "show this help",
       [](RunRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

std::string RandomId() {
  unsigned char b[6];
  if (getrandom(b, sizeof b, 0) != sizeof b) {
    uint64_t t = static_cast<uint64_t>(getpid()) ^ static_cast<uint64_t>(time(nullptr));
    memcpy(b, &t, sizeof b);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id = "brig-";
  for (unsigned char c : b) {
    id += kHex[c >> 4];
    id += kHex[c & 15];
  }
  return id;
}

// The operator's path, symlinks resolved, so the sandbox gets the directory itself.
Status Canonicalize(std::string& path, const char* flag) {
  char* real = realpath(path.c_str(), nullptr);
  if (!real) return SysError(flag, path).WithKind(ErrorKind::kBadInput);
  path = real;
  free(real);
  return {};
}

// init runs in a user namespace and cannot raise a hard limit above brig's own.
Status CheckRlimits(const config::Rlimits& rl) {
  const std::pair<int, std::pair<const char*, uint64_t>> items[] = {
      {RLIMIT_NOFILE, {"nofile", rl.nofile}},
      {RLIMIT_NPROC, {"nproc", rl.nproc}},
      {RLIMIT_CORE, {"core", rl.core}},
      {RLIMIT_MSGQUEUE, {"msgqueue", rl.msgqueue}},
      {RLIMIT_SIGPENDING, {"sigpending", rl.sigpending}}};
  for (const auto& [res, nv] : items) {
    struct rlimit cur;
    if (getrlimit(res, &cur) < 0) return SysError("getrlimit", nv.first);
    if (cur.rlim_max != RLIM_INFINITY && nv.second > cur.rlim_max) {
      return BadInput("rlimit", std::string(nv.first) + "=" + std::to_string(nv.second),
                      "above brig's own hard limit " + std::to_string(cur.rlim_max));
    }
  }
  return {};
}

Status ResolveWorkspace(config::Sandbox& sb) {
  if (sb.workspace.empty()) return {};
  BRIG_TRY(Canonicalize(sb.workspace, "--workspace"));
  struct stat st;
  if (stat(sb.workspace.c_str(), &st) < 0) {
    return SysError("--workspace", sb.workspace).WithKind(ErrorKind::kBadInput);
  }
  if (!S_ISDIR(st.st_mode)) return BadInput("--workspace", sb.workspace, "not a directory");
  if (access(sb.workspace.c_str(), R_OK | X_OK) < 0) {
    return SysError("--workspace", sb.workspace).WithKind(ErrorKind::kBadInput);
  }
  // Files the sandbox creates belong to the workspace's owner on the host. Host root is
  // never mapped, so a root-owned workspace can be read (as an unprivileged id) but not
  // written.
  if (st.st_uid == 0 && sb.workspace_mode != config::WorkspaceMode::kReadOnly) {
    return BadInput("--workspace", sb.workspace,
                    "owned by root, and brig never maps host root into a sandbox: chown it to "
                    "an unprivileged user or use a profile with a read-only workspace");
  }
  if (st.st_uid != 0) sb.host_uid = st.st_uid;
  if (st.st_gid != 0) sb.host_gid = st.st_gid;
  return {};
}

config::WorkspaceMode ModeOf(v1::WorkspaceAccess a) {
  return a == v1::WORKSPACE_RW     ? config::WorkspaceMode::kReadWrite
         : a == v1::WORKSPACE_COPY ? config::WorkspaceMode::kCopy
                                   : config::WorkspaceMode::kReadOnly;
}

// --export-changes: a directory brig creates at the end (its path: fs::CheckOutputs).
Status CheckExportDir(const config::Sandbox& sb) {
  if (sb.export_changes.empty()) return {};
  if (sb.workspace_mode != config::WorkspaceMode::kCopy || sb.workspace.empty()) {
    return BadInput("--export-changes", sb.export_changes,
                    "needs a copy workspace (--workspace with a profile or --workspace-mode "
                    "of copy)");
  }
  return {};
}

// --copy-dir: an existing directory outside the workspace (fs::CheckOutputs), on a file
// system that can hold an overlay's upper layer (overlayfs itself says so when the copy is
// made). brig makes a directory of its own in it, root's and no one else's.
Status CheckCopyDir(const config::Sandbox& sb) {
  if (sb.copy_dir.empty()) return {};
  if (sb.workspace_mode != config::WorkspaceMode::kCopy || sb.workspace.empty()) {
    return BadInput("--copy-dir", sb.copy_dir,
                    "needs a copy workspace (--workspace with a profile or --workspace-mode "
                    "that makes one)");
  }
  return {};
}

// The cap on a copy kept on disk when neither the run nor the profile gives one: a copy
// under --copy-dir is never uncapped (a sandbox wrote 2 GiB in 2 s there; issue 14).
constexpr uint64_t kCopyDirDisk = 8ull << 30;

// The cap on a copy's changes: the run's --disk-size, else the profile's limits.disk (only a
// copy profile has one), else under --copy-dir kCopyDirDisk. Nothing else can be capped:
// --disk-size without a copy is refused.
Status ApplyDiskSize(const v1::Limits& l, const RunRequest& req, config::Sandbox& sb) {
  bool copy = sb.workspace_mode == config::WorkspaceMode::kCopy && !sb.workspace.empty();
  if (req.disk_size && !copy) {
    return BadInput("--disk-size", "",
                    "needs a copy workspace (--workspace with a profile or --workspace-mode "
                    "that makes one): a read-only one takes no changes, and a read-write one, "
                    "the host's own directory, cannot be capped");
  }
  if (!copy) return {};
  if (!l.disk().empty()) sb.disk_size = *util::ParseDiskSize(l.disk());
  if (req.disk_size) sb.disk_size = *req.disk_size;
  if (!req.copy_dir.empty() && !sb.disk_size) sb.disk_size = kCopyDirDisk;
  return {};
}

// The resolver's and proxy's policy: the profile's names (posture allowlist) and the run's
// --allow-host, the profile's floor exceptions, and the upstream nameservers.
Result<egress::Policy> EgressPolicy(const v1::Network& n, const RunRequest& req) {
  egress::Policy p;
  p.open = n.posture() == v1::POSTURE_OPEN;
  std::vector<std::string> hosts(n.allow_hosts().begin(), n.allow_hosts().end());
  hosts.insert(hosts.end(), req.allow_hosts.begin(), req.allow_hosts.end());
  p.allowlist = BRIG_TRY(egress::Allowlist::Parse(hosts));
  p.floor = BRIG_TRY(egress::Floor::WithExceptions(
      std::vector<std::string>(n.allow_addresses().begin(), n.allow_addresses().end())));
  if (req.dns_upstream.empty()) {
    p.upstreams = BRIG_TRY(egress::HostUpstreams());
  } else {
    p.upstreams = {*egress::ParseUpstream(req.dns_upstream)};
  }
  return p;
}

// The profile's brokers, then the run's: each checked against the others, its header
// values read from brig's environment or files and its target resolved, before anything
// starts. Brokers are operator wiring, as --allow-host is, allowed in every posture: they
// reach only the targets named here, and nothing of theirs enters the sandbox.
Status ResolveBrokers(const v1::Profile& profile, const RunRequest& req, char** environ,
                      config::Sandbox& sb) {
  if (!sb.isolated && !req.brokers.empty()) {
    return BadInput("--broker", req.brokers[0].first,
                    "profile '" + req.profile + "' has no sandbox (ISOLATION_NONE) to broker into");
  }
  for (const auto& b : profile.brokers()) {
    broker::Config c = BRIG_TRY_CTX(broker::Check(b), "profile '" + req.profile + "': broker " + b.name());
    BRIG_TRY_CTX(broker::Resolve(c, environ), "profile '" + req.profile + "': broker " + b.name());
    sb.brokers.push_back(std::move(c));
    BRIG_TRY_CTX(broker::CheckAll(sb.brokers), "profile '" + req.profile + "'");
  }
  for (const auto& [spec, b] : req.brokers) {
    auto c = broker::Check(b);
    if (!c) return BadInput("--broker", spec, c.error().Render());
    if (auto s = broker::Resolve(*c, environ); !s) {
      return BadInput("--broker", spec, s.error().Render());
    }
    sb.brokers.push_back(std::move(*c));
    if (auto s = broker::CheckAll(sb.brokers); !s) {
      return BadInput("--broker", spec, s.error().Render());
    }
  }
  sb.attempt = req.attempt;
  return {};
}

// The profile's limits, then the run's overrides (the only things a run may change).
void ApplyLimits(const v1::Limits& l, const RunRequest& req, config::Sandbox& sb) {
  sb.timeout = req.timeout.value_or(*util::ParseDuration(l.timeout()));
  sb.grace = req.grace.value_or(*util::ParseDuration(l.grace()));
  if (!l.tmp_size().empty()) sb.tmp_size = *util::ParseSize(l.tmp_size());
  if (req.tmp_size) sb.tmp_size = *req.tmp_size;
  if (!l.output_limit().empty()) sb.output_limit = *util::ParseSize(l.output_limit());
  if (req.output_limit) sb.output_limit = *req.output_limit;
  sb.rlimits.nofile = req.rlimit_nofile.value_or(l.rlimit_nofile());
  sb.rlimits.nproc = req.rlimit_nproc.value_or(l.rlimit_nproc());
  sb.rlimits.core = req.rlimit_core.value_or(l.rlimit_core());
  const v1::UserCounts& u = l.user_counts();
  sb.rlimits.msgqueue = u.msgqueue_bytes();
  sb.rlimits.sigpending = u.pending_signals();
  sb.user_counts = {u.inotify_instances(), u.inotify_watches(), u.fanotify_groups(),
                    u.fanotify_marks(), u.namespaces()};
  cgroup::Limits& c = sb.limits;
  if (!l.memory().empty()) c.memory = *util::ParseMemory(l.memory());
  if (req.memory) c.memory = *req.memory;
  c.swap = req.swap.value_or(l.swap().empty() ? 0 : *util::ParseSizeLimit(l.swap()));
  if (l.has_pids()) c.pids = l.pids();
  if (req.pids) c.pids = *req.pids;
  if (!l.cpus().empty()) c.cpu_milli = *util::ParseCpus(l.cpus());
  if (req.cpu_milli) c.cpu_milli = *req.cpu_milli;
  // A limit the run asks for itself is never optional.
  for (int k : l.optional_limits()) {
    c.memory_optional |= k == v1::LIMIT_MEMORY && !req.memory && !req.swap;
    c.pids_optional |= k == v1::LIMIT_PIDS && !req.pids;
    c.cpu_optional |= k == v1::LIMIT_CPUS && !req.cpu_milli;
  }
}

std::vector<std::string> BuildEnv(const RunRequest& req, char** host_environ) {
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
  for (const auto& k : req.pass_env) {
    if (auto v = util::EnvLookup(host_environ, k)) set(k + "=" + std::string(*v));
  }
  for (const auto& kv : req.set_env) set(kv);
  return env;
}

}  // namespace

Result<RunRequest> ParseRunArgs(const std::vector<std::string>& args) {
  RunRequest req;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    // A lone "-" is stdin's name elsewhere, never a command here.
    if (a == "-") return BadInput("brig run", a, "not a command or an option");
    if (a.size() < 2 || a[0] != '-') break;  // the command starts here
    BRIG_TRY(ApplyFlag(Flags(), args, i, req, "brig run"));
    if (req.help) return req;
  }
  req.argv.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
  if (req.argv.empty() || req.argv[0].empty()) {
    return BadInput("brig run", "", "no command given (brig run [OPTIONS] -- CMD [ARGS...])");
  }
  return req;
}

Result<config::Sandbox> ResolveRun(const RunRequest& req, char** host_environ) {
  std::string dir = config::ResolvePolicyDir(req.policy_dir);
  v1::Profile profile = BRIG_TRY(config::LoadProfile(dir, req.profile));
  config::Sandbox sb;
  sb.profile = req.profile;
  sb.argv = req.argv;
  sb.workspace = req.workspace;
  sb.rootfs = req.rootfs;
  sb.result_path = req.result_path;
  sb.audit_path = req.audit_path;
  sb.isolated = profile.isolation() == v1::ISOLATION_SANDBOX;
  ApplyLimits(profile.limits(), req, sb);
  if (req.swap && !sb.limits.memory) {
    return BadInput("--swap", "", "needs a memory limit (--memory, or the profile's limits.memory)");
  }
  sb.cgroup_parent = req.cgroup_parent;
  auto posture = profile.network().posture();
  if (sb.isolated && (posture == v1::POSTURE_ALLOWLIST || posture == v1::POSTURE_OPEN)) {
    sb.network = *net::ParseSubnet(req.subnet.empty() ? net::kDefaultSubnet : req.subnet);
    sb.egress = BRIG_TRY(EgressPolicy(profile.network(), req));
  } else {
    std::string_view flag = !req.subnet.empty()         ? "--subnet"
                            : !req.allow_hosts.empty()  ? "--allow-host"
                            : !req.dns_upstream.empty() ? "--dns-upstream"
                                                        : "";
    if (!flag.empty()) {
      return BadInput(std::string(flag), "",
                      "profile '" + req.profile + "' gives the sandbox no network interface");
    }
  }
  if (!req.allow_hosts.empty() && posture == v1::POSTURE_OPEN) {
    return BadInput("--allow-host", req.allow_hosts[0],
                    "profile '" + req.profile + "' has posture open, which has no allowlist");
  }
  BRIG_TRY(ResolveBrokers(profile, req, host_environ, sb));
  if (sb.isolated) {
    sb.workspace_mode = ModeOf(profile.filesystem().workspace());
    // The posture is the profile's: a flag may restate it, never widen it (Invariant 2).
    // A copy in place of a read-write workspace only narrows it: the source stays as it is.
    bool narrows = req.workspace_mode == config::WorkspaceMode::kCopy &&
                   sb.workspace_mode == config::WorkspaceMode::kReadWrite;
    if (narrows) sb.workspace_mode = config::WorkspaceMode::kCopy;
    if (req.workspace_mode && *req.workspace_mode != sb.workspace_mode) {
      return Fail("--workspace-mode", config::WorkspaceModeName(*req.workspace_mode),
                  "profile '" + req.profile + "' fixes filesystem.workspace = " +
                      v1::WorkspaceAccess_Name(profile.filesystem().workspace()) +
                      "; name another profile",
                  ErrorKind::kPolicy);
    }
    sb.hidden_paths.assign(profile.filesystem().hidden_paths().begin(),
                           profile.filesystem().hidden_paths().end());
    if (sb.workspace_mode != config::WorkspaceMode::kReadOnly) {
      for (const auto& p : profile.filesystem().protected_paths()) {
        std::string norm;
        for (std::string_view part : util::Split(p, '/')) {
          if (part.empty() || part == ".") continue;
          norm += (norm.empty() ? "" : "/") + std::string(part);
        }
        if (!norm.empty()) sb.protected_paths.push_back(norm);
      }
    }
    // A relative path in a profile file means one beside that file.
    std::string policy = profile.security().seccomp_policy();
    if (policy[0] != '/' && policy.find('/') != std::string::npos) {
      std::string profile_path = BRIG_TRY(config::PolicyFilePath(dir, "profiles", req.profile));
      policy = profile_path.substr(0, profile_path.rfind('/') + 1) + policy;
    }
    sb.seccomp_policy = BRIG_TRY(config::PolicyFilePath(dir, "seccomp", policy));
  } else if (!sb.rootfs.empty() || !req.layers.empty() || req.workspace_mode ||
             !req.export_changes.empty() || !req.copy_dir.empty() || req.disk_size) {
    return Fail("profile", req.profile,
                "ISOLATION_NONE has no root or workspace mounts: --rootfs, --layer, "
                "--workspace-mode, --copy-dir, --disk-size and --export-changes do not apply",
                ErrorKind::kBadInput);
  }
  if (!sb.rootfs.empty()) {
    BRIG_TRY(Canonicalize(sb.rootfs, "--rootfs"));
    struct stat st;
    if (stat(sb.rootfs.c_str(), &st) < 0) {
      return SysError("--rootfs", sb.rootfs).WithKind(ErrorKind::kBadInput);
    }
    if (!S_ISDIR(st.st_mode)) return BadInput("--rootfs", sb.rootfs, "not a directory");
  }
  for (std::string layer : req.layers) {
    if (sb.rootfs.empty()) return BadInput("--layer", layer, "needs a --rootfs to stack on");
    BRIG_TRY(Canonicalize(layer, "--layer"));
    struct stat st;
    if (stat(layer.c_str(), &st) < 0) return SysError("--layer", layer).WithKind(ErrorKind::kBadInput);
    if (!S_ISDIR(st.st_mode)) return BadInput("--layer", layer, "not a directory");
    sb.layers.push_back(layer);
  }
  BRIG_TRY(ResolveWorkspace(sb));
  sb.export_changes = req.export_changes;
  BRIG_TRY(CheckExportDir(sb));
  BRIG_TRY(ApplyDiskSize(profile.limits(), req, sb));
  sb.copy_dir = req.copy_dir;
  BRIG_TRY(CheckCopyDir(sb));
  fs::Outputs outputs{sb.result_path, sb.audit_path, sb.export_changes, sb.copy_dir};
  BRIG_TRY(fs::CheckOutputs(outputs, sb.workspace));
  sb.export_changes = outputs.export_changes;
  sb.copy_dir = outputs.copy_dir;
  // A cap is never dropped for want of what enforces it (design.md, Invariant 1).
  if (!sb.copy_dir.empty() && sb.disk_size) BRIG_TRY(fs::CheckDiskImage(sb.copy_dir));
  BRIG_TRY(CheckRlimits(sb.rlimits));
  sb.env = BuildEnv(req, host_environ);
  sb.id = RandomId();
  return sb;
}

std::string RunUsage() {
  std::ostringstream out;
  out << "Usage: brig run [OPTIONS] [--] CMD [ARGS...]\n\n"
         "Run CMD in a new sandbox whose posture the profile fixes (default\n"
         "untrusted-code-read: new namespaces, a read-only root and workspace, no network,\n"
         "no capabilities, the default seccomp policy). A run may change limits and paths,\n"
         "add hosts to an allowlist (--allow-host) and add brokers (--broker); never the\n"
         "posture itself.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: the command's own; 128+N if it died of signal N; 124 on timeout;\n"
         "137 out of memory (the memory limit); 125 if brig failed or refused; 126 not\n"
         "executable; 127 not found.\n";
  return out.str();
}

}  // namespace brig::cli
