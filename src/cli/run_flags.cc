// `brig run` flags: parsing them into the run's overrides (pure; config::Resolve lays them
// over the profile) and the usage text.
#include <functional>
#include <sstream>

#include "broker/spec.h"
#include "cgroup/cgroup.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "config/limits.h"
#include "egress/allowlist.h"
#include "egress/upstream.h"
#include "net/link.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

using Apply = std::function<Status(RunRequest&, const std::string&)>;

struct Flag {
  const char* name;
  const char* metavar;  // nullptr: takes no value
  const char* help;
  Apply apply;
  const char* alias = nullptr;  // a short name ("-t"), as Docker's
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

// A flag that keeps its value, a path or name that must not be empty, in `field`.
Apply Path(const char* flag, std::string config::Overrides::*field,
           const char* empty = "empty path") {
  return [=](RunRequest& r, const std::string& v) -> Status {
    if (v.empty()) return BadInput(flag, v, empty);
    r.*field = v;
    return {};
  };
}

// A flag whose value `parse` turns into `field`; errors name the flag and the value.
template <typename T, typename Parse>
Apply Parsed(const char* flag, std::optional<T> config::Overrides::*field, Parse parse) {
  return [=](RunRequest& r, const std::string& v) -> Status {
    auto parsed = parse(v);
    if (!parsed) return BadInput(flag, v, parsed.error().detail);
    r.*field = *parsed;
    return {};
  };
}

// A limit's flag, which also takes "none": the profile's limit is not wanted.
Apply OrNone(Apply set, bool config::Overrides::*none) {
  return [=](RunRequest& r, const std::string& v) -> Status {
    r.*none = v == "none";
    return r.*none ? Status() : set(r, v);
  };
}

Status SetWorkspaceMode(RunRequest& r, const std::string& v) {
  if (v == "ro") {
    r.workspace_mode = fs::WorkspaceMode::kReadOnly;
  } else if (v == "rw") {
    r.workspace_mode = fs::WorkspaceMode::kReadWrite;
  } else if (v == "copy") {
    r.workspace_mode = fs::WorkspaceMode::kCopy;
  } else {
    return BadInput("--workspace-mode", v, "expected ro, rw or copy");
  }
  return {};
}

Status AddLayer(RunRequest& r, const std::string& v) {
  if (v.empty()) return BadInput("--layer", v, "empty path");
  r.layers.push_back(v);
  return {};
}

Status SetPids(RunRequest& r, const std::string& v) {
  auto n = util::ParseLimit(v);
  if (!n || *n == 0 || *n > config::kMaxPids) {
    return BadInput("--pids", v, "expected a number from 1 to 4194304");
  }
  r.pids = *n;
  return {};
}

Status SetCgroupParent(RunRequest& r, const std::string& v) {
  BRIG_TRY(cgroup::CheckParent(v));
  r.cgroup_parent = v;
  return {};
}

Status AddAllowHost(RunRequest& r, const std::string& v) {
  BRIG_TRY_CTX(egress::ParseHostPattern(v), "--allow-host");
  r.allow_hosts.push_back(v);
  return {};
}

Status SetDnsUpstream(RunRequest& r, const std::string& v) {
  r.dns_upstream = BRIG_TRY(egress::ParseUpstream(v));
  return {};
}

Status AddBroker(RunRequest& r, const std::string& v) {
  auto b = broker::ParseSpec(v);
  if (!b) return BadInput("--broker", v, b.error().Render());
  if (auto c = broker::Check(*b); !c) return BadInput("--broker", v, c.error().Render());
  r.brokers.emplace_back(v, std::move(*b));
  return {};
}

Status SetAttempt(RunRequest& r, const std::string& v) {
  auto n = util::ParseLimit(v);
  if (!n || *n == 0 || *n > UINT32_MAX) {
    return BadInput("--attempt", v, "expected a number from 1 to 4294967295");
  }
  r.attempt = static_cast<uint32_t>(*n);
  return {};
}

Status AddEnv(RunRequest& r, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || !util::IsEnvName(v.substr(0, eq))) {
    return BadInput("--env", v, "expected NAME=VALUE with NAME of [A-Za-z0-9_]");
  }
  r.set_env.push_back(v);
  return {};
}

Status AddPassEnv(RunRequest& r, const std::string& v) {
  if (!util::IsEnvName(v)) return BadInput("--pass-env", v, "not a variable name");
  r.pass_env.push_back(v);
  return {};
}

Status SetDryRun(RunRequest& r, const std::string&) {
  r.dry_run = true;
  return {};
}

Status SetWaitAll(RunRequest& r, const std::string&) {
  r.wait_all = true;
  return {};
}

Status AddEnvFile(RunRequest& r, const std::string& v) {
  if (v.empty()) return BadInput("--env-file", v, "empty path");
  r.env_files.push_back(v);
  return {};
}

Status SetName(RunRequest& r, const std::string& v) {
  if (!util::IsObjectName(v)) {
    return BadInput("--name", v, "expected [A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  }
  r.name = v;
  return {};
}

// "/workspace/a/b", "a/b" or "./a": a directory of the workspace, kept relative to it
// ("a/b"; "" for /workspace itself). ".." is refused, so it cannot lead out.
Status SetChdir(RunRequest& r, const std::string& v) {
  if (v.empty()) return BadInput("--chdir", v, "empty path");
  std::string_view rel = v;
  if (!rel.empty() && rel[0] == '/') {
    if (rel != "/workspace" && rel.rfind("/workspace/", 0) != 0) {
      return BadInput("--chdir", v, "not inside the workspace (/workspace or a path under it)");
    }
    rel.remove_prefix(std::string_view("/workspace").size());
  }
  std::string norm;
  for (std::string_view part : util::Split(rel, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return BadInput("--chdir", v, "'..' may lead out of the workspace");
    norm += (norm.empty() ? "" : "/") + std::string(part);
  }
  r.chdir = norm;
  return {};
}

Status AddMount(RunRequest& r, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq + 1 == v.size()) {
    return BadInput("--mount", v, "expected NAME=PATH (a mount the profile declares)");
  }
  std::string name = v.substr(0, eq);
  if (!util::IsObjectName(name)) return BadInput("--mount", v, "not a mount name");
  for (const auto& [n, path] : r.mounts) {
    if (n == name) return BadInput("--mount", v, "mount '" + name + "' given twice");
  }
  r.mounts.emplace_back(name, v.substr(eq + 1));
  return {};
}

Status SetDeny(RunRequest& r, const std::string& v) {
  if (v != "stop" && v != "continue") return BadInput("--deny", v, "expected stop or continue");
  r.deny_stop = v == "stop";
  return {};
}

Status SetTty(RunRequest& r, const std::string&) {
  r.tty = true;
  return {};
}

Status SetNoTty(RunRequest& r, const std::string&) {
  r.tty = false;
  return {};
}

// --ro-bind SRC DST takes two values (ParseRunArgs); the table's entry is for its usage.
Status RoBindNeedsTwo(RunRequest&, const std::string& v) {
  return BadInput("--ro-bind", v, "takes two values: --ro-bind SRC DST");
}

Status AddRoBind(RunRequest& r, const std::string& src, const std::string& dst) {
  if (src.empty() || dst.empty()) return BadInput("--ro-bind", src + " " + dst, "empty path");
  r.ro_binds.emplace_back(src, dst);
  return {};
}

Status SetHelp(RunRequest& r, const std::string&) {
  r.help = true;
  return {};
}

// What a Docker or bubblewrap user reaches for, and brig's way to it (issue 32, item 6).
struct ForeignFlag {
  const char* names;  // " -v --volume " : each name with a space on either side
  const char* way;
};

const ForeignFlag kForeignFlags[] = {
    {" -i -it -ti --interactive ",
     "brig passes its stdin on as Docker's -i does (a terminal only with -t, --tty)"},
    {" -e --setenv ", "set a variable with --env K=V"},
    {" -v --volume --mount-bind ",
     "mount a host directory read-only with --ro-bind SRC DST; the workspace is "
     "--workspace DIR, and a writable mount is the profile's (--mount NAME=PATH, "
     "brig-profile(5) MOUNTS)"},
    {" --bind --bind-try --dev-bind ",
     "writable mounts are the profile's (--mount NAME=PATH, brig-profile(5) MOUNTS); "
     "read-only ones --ro-bind SRC DST"},
    {" --network --net --share-net --unshare-net ",
     "the network is the profile's network.posture (none, broker-only, allowlist, open); "
     "--allow-host adds a host to an allowlist"},
    {" --rm ", "brig run leaves nothing behind; there is nothing to remove"},
    {" -u --user --uid --gid ",
     "the workload runs as uid and gid 1000 inside, the workspace's owner's files its own "
     "(brig-run(1), Users and ids)"},
    {" -w --workdir ", "start in a directory of the workspace with --chdir DIR"},
    {" -m ", "limit memory with --memory SIZE"},
    {" --pids-limit ", "limit tasks with --pids N"},
    {" -d --detach ",
     "brig run stays in the foreground with its sandbox; brig list and brig exec reach it "
     "meanwhile"},
    {" --entrypoint ", "the command follows the options (brig run [OPTIONS] -- CMD)"},
    {" --read-only ", "the root is always read-only"},
    {" --cap-add --cap-drop --privileged ", "every capability is dropped; none can be added"},
    {" --security-opt --seccomp ", "the seccomp policy is the profile's security.seccomp_policy"},
    {" -p --publish ", "nothing reaches the sandbox from outside; brokers (--broker) reach out"},
    {" --unshare-all --unshare-user --unshare-pid --unshare-ipc --unshare-uts "
     "--unshare-cgroup --new-session --die-with-parent ",
     "brig always does so: every namespace new, a session of its own, the sandbox ended "
     "with brig"},
    {" --clearenv ", "the environment is built from nothing already (--env, --pass-env)"},
    {" --tmpfs ", "/tmp is a tmpfs already (--tmp-size)"},
    {" --proc --dev ", "brig mounts /proc and /dev itself"},
    {" --stop-timeout ", "the grace period after a forwarded signal is --grace DURATION"},
};

std::string ForeignHint(const std::string& name) {
  for (const ForeignFlag& f : kForeignFlags) {
    if (std::string_view(f.names).find(" " + name + " ") != std::string_view::npos) return f.way;
  }
  return "";
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--profile", "NAME|PATH",
       "the profile that fixes the sandbox's posture "
       "(default untrusted-code-read)",
       Path("--profile", &config::Overrides::profile, "empty name")},
      {"--workspace", "DIR", "mount DIR at /workspace (the working directory)",
       Path("--workspace", &config::Overrides::workspace)},
      {"--workspace-mode", "ro|rw|copy",
       "restate the profile's workspace access, or narrow rw to copy; never widen it",
       SetWorkspaceMode},
      {"--rootfs", "DIR", "use DIR as the read-only root instead of the host-derived one",
       Path("--rootfs", &config::Overrides::rootfs)},
      {"--layer", "DIR",
       "stack DIR on the --rootfs with overlayfs (repeatable; the last one is on top)", AddLayer},
      {"--tmp-size", "SIZE", "size cap of /tmp and of /dev/shm (profile default 1G)",
       Parsed("--tmp-size", &config::Overrides::tmp_size, util::ParseSize)},
      {"--memory", "SIZE",
       "memory limit of the whole sandbox; past it, 137 (oom_killed); none: no memory limit",
       OrNone(Parsed("--memory", &config::Overrides::memory, util::ParseMemory),
              &config::Overrides::no_memory)},
      {"--swap", "SIZE", "swap allowed beyond --memory: 0 (the default), SIZE or unlimited",
       Parsed("--swap", &config::Overrides::swap, util::ParseSizeLimit)},
      {"--pids", "N",
       "most tasks the sandbox may hold at once, brig init included; none: no such limit",
       OrNone(SetPids, &config::Overrides::no_pids)},
      {"--cpus", "N",
       "CPU time as a number of CPUs, fractional (0.5: half of one CPU); none: no CPU limit",
       OrNone(Parsed("--cpus", &config::Overrides::cpu_milli, util::ParseCpus),
              &config::Overrides::no_cpu)},
      {"--cgroup-parent", "PATH",
       "create the sandbox's cgroups under PATH in each hierarchy (default: brig's own)",
       SetCgroupParent},
      {"--subnet", "CIDR",
       "the bridge's subnet, for postures with an interface (default 10.213.0.0/16)",
       Parsed("--subnet", &config::Overrides::subnet, net::ParseSubnet)},
      {"--allow-host", "PATTERN",
       "allow one more host for this run, in the allowlist syntax (repeatable; posture "
       "allowlist only)",
       AddAllowHost},
      {"--dns-upstream", "ADDR[:PORT]",
       "the nameserver brig's resolver asks (default: /etc/resolv.conf's IPv4 ones)",
       SetDnsUpstream},
      {"--broker", "NAME=SPEC",
       "a broker (repeatable): SPEC is port=PORT and/or unix=/PATH inside, to=TARGET "
       "(unix:/PATH, tcp:HOST:PORT, http(s)://HOST[:PORT]) on the host, and "
       "header=NAME:env:VAR or NAME:file:/PATH, attribution=NAME, mode=http|tcp, "
       "methods=M[,M...] and paths=/P[,/P...] (only these reach the target)",
       AddBroker},
      {"--attempt", "N",
       "which attempt at the phase this run is (default 1); brokers send <sandbox id>/N",
       SetAttempt},
      {"--env", "K=V", "set K to V in the sandbox (repeatable)", AddEnv},
      {"--env-file", "FILE",
       "set variables from FILE's KEY=VALUE lines, as Docker reads one: KEY alone passes "
       "brig's value; # comments and blank lines skipped; --env wins (repeatable)",
       AddEnvFile},
      {"--pass-env", "K", "copy K from brig's environment, if set (repeatable)", AddPassEnv},
      {"--chdir", "DIR",
       "run the command in DIR, a directory of the workspace (relative to /workspace, or "
       "under it)",
       SetChdir},
      {"--name", "NAME",
       "the harness's name for the run ([A-Za-z0-9][A-Za-z0-9_.-]{0,63}): in the sandbox "
       "id, the audit, the result, brig list and the brokers' attribution",
       SetName},
      {"--mount", "NAME=PATH",
       "the source of the profile's per-run mount NAME (repeatable); no other mount can be "
       "added",
       AddMount},
      {"--ro-bind", "SRC DST",
       "mount the host directory SRC at DST inside, read-only, nosuid and nodev, as a "
       "read-only workspace is: the profile's hidden paths hidden in it, its sockets and "
       "FIFOs out of reach (repeatable; writable mounts are the profile's, brig-profile(5) "
       "MOUNTS)",
       RoBindNeedsTwo},
      {"--timeout", "DURATION", "kill the sandbox after DURATION (profile default 30m): 124",
       Parsed("--timeout", &config::Overrides::timeout, util::ParseDuration)},
      {"--grace", "DURATION",
       "after forwarding SIGTERM/SIGINT/SIGHUP, wait this long before killing (10s)",
       Parsed("--grace", &config::Overrides::grace, util::ParseDuration)},
      {"--wait-all", nullptr,
       "end the phase when every process of the sandbox has exited; without it, it ends when "
       "the command does, and what the command left running is killed (result: left_killed)",
       SetWaitAll},
      {"--tty", nullptr,
       "give the workload a terminal of its own: the caller's, relayed, where stdin is one "
       "(raw while it runs: ^C goes to the workload); else one for stdout and stderr, merged "
       "on stdout. Default: only for a job of an interactive shell (brig leads the "
       "terminal's foreground process group), never for a harness's child",
       SetTty, "-t"},
      {"--no-tty", nullptr,
       "never a terminal: pipes; ^C on the caller's terminal goes to its process group, "
       "brig included, which passes SIGINT on to the sandbox",
       SetNoTty, "-T"},
      {"--output-limit", "SIZE",
       "relay at most SIZE bytes of each of stdout and stderr; the rest is dropped (the "
       "workload's writes still succeed) and the result says so",
       Parsed("--output-limit", &config::Overrides::output_limit, util::ParseSize)},
      {"--egress-budget", "SIZE",
       "send at most SIZE bytes out through the proxy, the brokers and DNS over the whole "
       "phase; past it connections are closed and refused (reason budget) (profile "
       "limits.egress_bytes)",
       Parsed("--egress-budget", &config::Overrides::egress_budget, util::ParseSize)},
      {"--deny", "stop|continue",
       "stop: end the phase at the first refusal of a name or connection, exit 123 "
       "(error_code egress_denied); continue: go on (the profile's network.on_deny, else "
       "continue). Either way each name's first refusal is printed as it happens",
       SetDeny},
      {"--rlimit", "NAME=N", "nofile (4096), nproc (4096) or core (0); N or unlimited", SetRlimit},
      {"--copy-dir", "DIR",
       "with a copy workspace: keep its changes in a new directory under DIR, in a disk "
       "image of --disk-size (8G unless set), instead of a tmpfs of --disk-size or --tmp-size",
       Path("--copy-dir", &config::Overrides::copy_dir)},
      {"--disk-size", "SIZE",
       "with a copy workspace: cap its changes at SIZE (at least 1M), the kernel refusing "
       "writes past it (ENOSPC): a tmpfs of SIZE, or with --copy-dir a file system image of "
       "SIZE there (profile limits.disk)",
       Parsed("--disk-size", &config::Overrides::disk_size, util::ParseDiskSize)},
      {"--export-changes", "DIR",
       "with a copy workspace: write what the sandbox changed to DIR, a new directory",
       Path("--export-changes", &config::Overrides::export_changes)},
      {"--export-owner", "USER[:GROUP]",
       "give the export to USER (a name or uid) and GROUP (default USER's group) "
       "(default: the workspace's owner; brig's caller for a workspace of root's)",
       Path("--export-owner", &config::Overrides::export_owner, "empty user")},
      {"--result", "FILE", "write the result as one JSON object to FILE",
       Path("--result", &config::Overrides::result_path)},
      {"--manifest", "FILE",
       "write the enforcement manifest (what this run may do, as one JSON object) to FILE "
       "before the command starts",
       Path("--manifest", &config::Overrides::manifest_path)},
      {"--dry-run", nullptr,
       "resolve and check everything, print the manifest (or write it to --manifest), exit "
       "0; make nothing on the host and run nothing",
       SetDryRun},
      {"--audit-log", "FILE", "append JSON-lines audit events to FILE (written by brig)",
       Path("--audit-log", &config::Overrides::audit_path)},
      {"--policy-dir", "DIR", "read profiles and policies from DIR, not the installed ones",
       Path("--policy-dir", &config::Overrides::policy_dir)},
      {"--help", nullptr, "show this help", SetHelp},
  };
  return flags;
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
    if (a == "--ro-bind") {
      if (i + 2 >= args.size()) return BadInput("--ro-bind", "", "needs SRC and DST");
      BRIG_TRY(AddRoBind(req, args[i + 1], args[i + 2]));
      i += 2;
      continue;
    }
    BRIG_TRY(ApplyFlag(Flags(), args, i, req, "brig run", ForeignHint));
    if (req.help) return req;
  }
  req.argv.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
  if (req.argv.empty() || req.argv[0].empty()) {
    return BadInput("brig run", "", "no command given (brig run [OPTIONS] -- CMD [ARGS...])");
  }
  return req;
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
    UsageRow(out,
             std::string("  ") + f.name + (f.alias ? std::string(", ") + f.alias : "") +
                 (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: the command's own; 128+N if it died of signal N; 124 on timeout;\n"
         "137 out of memory (the memory limit); 125 if brig failed or refused; 126 not\n"
         "executable; 127 not found.\n";
  return out.str();
}

}  // namespace brig::cli
