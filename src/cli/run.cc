// `brig run`: parse, plan (load the profile, config::Resolve, config::ProbeHost), run, and
// turn the outcome into the output contract (exit code, --result JSON).
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "audit/audit.h"
#include "brig/exit.h"
#include "cli/cli.h"
#include "cli/global.h"
#include "cli/reclaim.h"
#include "config/probe.h"
#include "config/profile.h"
#include "config/resolve.h"
#include "container/session.h"
#include "egress/denials.h"
#include "fs/host_marks.h"
#include "log/log.h"
#include "manifest/manifest.h"
#include "oci/spec.h"
#include "proto/brig.pb.h"
#include "security/sandbox_ids.h"
#include "security/seccomp.h"
#include "security/seccomp_cache.h"
#include "supervise/stdio.h"
#include "util/digest.h"
#include "util/dirs.h"
#include "util/files.h"
#include "util/parse.h"
#include "util/proto_json.h"

namespace brig::cli {
namespace {

uint32_t Ms(const struct timeval& tv) {
  return static_cast<uint32_t>(tv.tv_sec * 1000 + tv.tv_usec / 1000);
}

// Why brig has no status for the workload: brig init ended without reporting one, killed
// by `sig` (0: it exited).
std::string InitGoneSilent(int sig) {
  if (sig == SIGSYS) {
    return "brig init died of SIGSYS, which its own seccomp filter sends when it makes a call "
           "outside its loop's (security/init_filter.cc)";
  }
  if (sig) {
    return "brig init was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) +
           ") without reporting the workload's status";
  }
  return "brig init exited without reporting the workload's status";
}

// Fills exit_code, signal, error_code and error from an outcome: the one place a run's exit
// code is decided (the codes themselves: brig/exit.h).
void Judge(const container::Outcome& o, v1::RunResult& r) {
  if (o.oom_killed) {
    // The whole sandbox ends on an OOM kill (memory.oom.group, or brig on v1).
    r.set_signal(SIGKILL);
    r.set_exit_code(kExitOom);
    r.set_error_code("oom_killed");
    r.set_error("out of memory: the sandbox reached its memory limit and was killed");
  } else if (o.denial_stop) {
    const v1::DenialStop& d = *o.denial_stop;
    v1::Denial first;
    first.set_reason(d.reason());
    first.set_count(1);
    first.set_detail(d.detail());
    r.set_exit_code(kExitDenied);
    r.set_error_code("egress_denied");
    r.set_error("the phase was stopped at its first refusal (--deny stop): " +
                egress::DenialLine(d.name(), first));
    *r.mutable_denial_stop() = d;
  } else if (o.timed_out) {
    r.set_exit_code(kExitTimeout);
    r.set_error_code("timeout");
    r.set_error("timed out");
  } else if (o.error) {
    KindCodes codes = CodesFor(o.error->kind);
    r.set_exit_code(codes.exit_code);
    r.set_error_code(std::string(codes.error_code));
    r.set_error(o.error->Render());
  } else if (o.workload_status) {
    int st = *o.workload_status;
    if (WIFSIGNALED(st)) {
      r.set_signal(WTERMSIG(st));
      r.set_exit_code(ExitCodeForSignal(WTERMSIG(st)));
    } else {
      r.set_exit_code(WEXITSTATUS(st));
    }
  } else if (o.killed_for_signal) {
    // brig's doing, not the workload's: it passed the signal on, then killed.
    r.set_signal(o.killed_for_signal);
    r.set_exit_code(ExitCodeForSignal(o.killed_for_signal));
    r.set_error_code("killed");
    const char* abbrev = sigabbrev_np(o.killed_for_signal);
    std::string sig = abbrev ? std::string("SIG") + abbrev : std::to_string(o.killed_for_signal);
    r.set_error("brig passed " + sig + " on to the sandbox and killed it " +
                (o.grace_ended ? "when the grace period (--grace) ended" : "at a second signal"));
  } else {
    r.set_exit_code(kExitRefused);
    r.set_error_code("internal");
    r.set_error(InitGoneSilent(o.init_signal));
  }
  // A run that succeeded but whose changes could not be exported did not do what was
  // asked of it; a failed workload's outcome stands (the export's line is printed).
  if (o.export_error && r.exit_code() == 0) {
    r.set_exit_code(kExitRefused);
    r.set_error_code("internal");
    r.set_error(o.export_error->Render());
  }
  r.set_ok(r.exit_code() == 0 && r.error_code().empty());
}

// The result of a run, built once from its outcome (a refusal before anything ran is an
// outcome with only an error).
v1::RunResult BuildResult(const std::string& id, const std::string& name,
                          const container::Outcome& o) {
  v1::RunResult r;
  r.set_sandbox_id(id);
  r.set_name(name);
  Judge(o, r);
  r.set_duration_ms(static_cast<uint32_t>(o.duration.count()));
  auto* u = r.mutable_usage();  // present, zero, even when nothing ran
  // The cgroup's figures where it has them; brig init's rusage (which holds every process
  // it reaped) otherwise.
  const cgroup::Stats& cs = o.cgroup_usage;
  u->set_cpu_time_ms(cs.cpu_usage_ns ? static_cast<uint32_t>(*cs.cpu_usage_ns / 1000000)
                                     : Ms(o.usage.ru_utime) + Ms(o.usage.ru_stime));
  u->set_peak_memory_bytes(cs.memory_max_usage ? static_cast<int64_t>(*cs.memory_max_usage)
                                               : static_cast<int64_t>(o.usage.ru_maxrss) * 1024);
  u->set_peak_pids(static_cast<uint32_t>(cs.pids_peak.value_or(0)));
  u->set_pids_limit_hits(static_cast<uint32_t>(cs.pids_limit_hits.value_or(0)));
  if (o.network) *r.mutable_network() = *o.network;
  *r.mutable_output() = o.output.value_or(v1::Output());
  r.set_left_killed(o.left_killed);
  return r;
}

container::Outcome Refused(Error e) {
  container::Outcome o;
  o.error = std::move(e);
  return o;
}

// `note_temp` notes the temporary file in the sandbox's record while there is one.
Status WriteResult(const std::string& path, const v1::RunResult& r,
                   const util::NoteTemp& note_temp) {
  return util::WriteUserFileAtomic(path, util::ProtoJson(r) + "\n", note_temp);
}

// What the run may do, as the audit's first word on it: with the manifest's digest, unless
// it was refused before one could be built (empty `manifest_sha256`).
v1::AuditEvent StartEvent(const config::Sandbox& sb, const std::string& manifest_sha256) {
  v1::AuditEvent e;
  v1::SandboxStart* s = e.mutable_sandbox_start();
  s->set_manifest_sha256(manifest_sha256);
  s->set_posture(sb.posture);
  if (sb.network && !sb.egress.open) {
    for (const auto& p : sb.egress.allowlist.patterns()) s->add_allow_hosts(p.Str());
  }
  for (const broker::Config& b : sb.brokers) *s->add_brokers() = manifest::Broker(b);
  s->set_attempt(sb.attempt);
  s->set_profile(sb.profile);
  s->set_isolated(sb.isolated);
  for (const auto& a : sb.argv) s->add_argv(a);
  s->set_workspace(sb.fs.workspace);
  if (sb.isolated) {
    s->set_workspace_mode(fs::WorkspaceModeName(sb.fs.workspace_mode));
  }
  s->set_rootfs(sb.fs.rootfs);
  for (const auto& l : sb.fs.layers) s->add_layers(l);
  s->set_seccomp_policy(sb.seccomp_policy);
  s->set_timeout_ms(static_cast<uint32_t>(sb.timeout.count()));
  const cgroup::Limits& l = sb.limits;
  if (l.memory) {
    s->set_memory_bytes(*l.memory);
    s->set_swap_bytes(l.swap.value_or(0));
  }
  s->set_pids(l.pids.value_or(0));
  if (l.cpu_milli) s->set_cpus(manifest::CpuCount(*l.cpu_milli));
  return e;
}

v1::AuditEvent ExitEvent(const v1::RunResult& r) {
  v1::AuditEvent e;
  v1::SandboxExit* x = e.mutable_sandbox_exit();
  x->set_exit_code(r.exit_code());
  x->set_signal(r.signal());
  x->set_error_code(r.error_code());
  x->set_error(r.error());
  x->set_duration_ms(r.duration_ms());
  return e;
}

// Prints the outcome's lines (its error, then what brig could not do after the run) and
// writes the result, its temporary file noted with `note_temp` (if there is a record to
// note it in). Returns the exit code.
int Report(const std::string& result_path, const container::Outcome& o, v1::RunResult& r,
           const util::NoteTemp& note_temp = nullptr) {
  // One line on stderr, and the same in the --log file.
  auto say = [](log::Level level, const std::string& line) {
    fprintf(stderr, "brig: %s\n", line.c_str());
    log::Mirror(level, line);
  };
  if (!r.error().empty()) say(log::Level::kError, r.error());
  if (o.export_error && r.error() != o.export_error->Render()) {
    say(log::Level::kError, o.export_error->Render());
  }
  for (const std::string& w : o.warnings) say(log::Level::kWarn, w);
  if (uint32_t hits = r.usage().pids_limit_hits(); hits > 0) {
    say(log::Level::kWarn, "the sandbox reached its task limit (--pids, limits.pids) and " +
                               std::to_string(hits) + " fork" + (hits > 1 ? "s" : "") +
                               " failed (EAGAIN); the result's usage.pids_limit_hits says so");
  }
  // What the sandbox was refused, where the user looks (the audit log has each event).
  for (const std::string& line : egress::DenialLines(r.network())) say(log::Level::kWarn, line);
  if (!result_path.empty()) {
    if (auto s = WriteResult(result_path, r, note_temp); !s) {
      say(log::Level::kError, s.error().Render());
      return r.exit_code() == 0 ? kExitRefused : r.exit_code();
    }
  }
  return r.exit_code();
}

// "brig-" and 12 hex digits of random; with a --name, "brig-NAME-" and the digits (the
// digits keep two runs of one name apart, and name the veth: net/network.cc).
std::string NewSandboxId(const std::string& name) {
  unsigned char b[6];
  if (getrandom(b, sizeof b, 0) != sizeof b) {
    uint64_t t = static_cast<uint64_t>(getpid()) ^ static_cast<uint64_t>(time(nullptr));
    memcpy(b, &t, sizeof b);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id = "brig-" + (name.empty() ? "" : name + "-");
  for (unsigned char c : b) {
    id += kHex[c >> 4];
    id += kHex[c & 15];
  }
  return id;
}

// A run refused before anything was made: its one line, and its result.
int Refuse(const std::string& id, const std::string& name, const std::string& result_path,
           Error e) {
  container::Outcome o = Refused(std::move(e));
  v1::RunResult r = BuildResult(id, name, o);
  return Report(result_path, o, r);
}

// The manifest of what `session` prepared, written to --manifest, and the audit's start
// event with its digest. Built only when one of them asks for it: it costs start time.
// An audit log that cannot be written stops the run before it starts: the audit is part
// of the posture, not a best effort.
Status Announce(const config::Sandbox& sb, container::Session& session) {
  std::string digest;
  if (!sb.manifest_path.empty() || !sb.audit_path.empty()) {
    std::string json = manifest::Json(manifest::Build(session.ManifestInputs()));
    if (!sb.manifest_path.empty()) {
      state::Record& record = session.record();
      BRIG_TRY(util::WriteUserFileAtomic(sb.manifest_path, json, [&](const std::string& temp) {
        return fs::NoteOutputTemp(record, fs::kTempKind, temp);
      }));
    }
    digest = util::Sha256Hex(json);
  }
  return audit::Append(sb.audit_path, sb.id, StartEvent(sb, digest), sb.name);
}

// Prepare, announce, launch, serve, collect (container/session.h); the result is written
// while the session still holds the sandbox's record.
int RunSandbox(const config::Sandbox& sb) {
  auto session = container::Session::Prepare(sb);
  if (!session) {
    // A refused run is audited as asked for; nothing was made, so there is no manifest.
    (void)audit::Append(sb.audit_path, sb.id, StartEvent(sb, ""), sb.name);
    return Refuse(sb.id, sb.name, sb.result_path, std::move(session).error());
  }
  if (auto s = Announce(sb, **session); !s) {
    return Refuse(sb.id, sb.name, sb.result_path, std::move(s).error());
  }
  if ((*session)->Launch()) (*session)->Serve();
  container::Outcome o = (*session)->Collect();
  v1::RunResult r = BuildResult(sb.id, sb.name, o);
  if (auto s = audit::Append(sb.audit_path, sb.id, ExitEvent(r), sb.name); !s) {
    o.warnings.push_back(s.error().Render());
    if (r.exit_code() == 0) r.set_exit_code(kExitRefused);
  }
  state::Record& record = (*session)->record();
  return Report(sb.result_path, o, r, [&](const std::string& temp) {
    return fs::NoteOutputTemp(record, fs::kTempKind, temp);
  });
}

// --dry-run's manifest: the same plan, made with nothing on the host (no record, cgroup,
// network namespace, rules, placeholder or seccomp cache entry; the mount plan's trees
// are detached clones, gone at exit), and so without the sandbox's address.
Result<std::string> DryRunManifest(const config::Sandbox& sb) {
  std::optional<security::SeccompProgram> seccomp;
  fs::MountPlan plan;
  state::Record none;
  broker::Listeners listeners;
  security::SandboxIds ids;
  if (sb.isolated) {
    seccomp = BRIG_TRY(security::CompileSeccompFile(sb.seccomp_policy, ""));
    // Without root the plan's detached trees take brig's own namespace, as a run's do.
    std::string warning;
    if (util::Rootless()) BRIG_TRY(security::EnterCallersNamespace(&warning));
    ids = BRIG_TRY(container::TakeSandboxIds());
    plan = BRIG_TRY(container::PlanFilesystem(sb, ids, none, listeners, true));
  }
  return manifest::Json(manifest::Build({sb, plan, seccomp ? &*seccomp : nullptr, nullptr}));
}

// Prints the manifest (or writes it to --manifest) and exits 0; nothing runs.
int DryRun(const config::Sandbox& sb) {
  auto json = DryRunManifest(sb);
  Status written = json ? Status() : Status(std::move(json).error());
  if (written && sb.manifest_path.empty()) {
    fputs(json->c_str(), stdout);
  } else if (written) {
    written = util::WriteUserFileAtomic(sb.manifest_path, *json, nullptr);
  }
  if (!written) {
    fprintf(stderr, "brig: %s\n", written.error().Render().c_str());
    return kExitRefused;
  }
  // A planning step holds no secret: what a run would need and could not read now.
  for (const broker::Config& b : sb.brokers) {
    for (const std::string& u : b.unread) {
      fprintf(stderr,
              "brig: broker %s: %s (the manifest's unread_headers; a run would refuse it)\n",
              b.name.c_str(), u.c_str());
    }
  }
  return 0;
}

// --env-file's variables, file by file, before --env's (which win, as Docker's -e does);
// a KEY alone takes brig's own value, and is left out if brig has none.
Status ReadEnvFiles(const RunRequest& req, char** host_environ, config::Overrides& run) {
  std::vector<std::string> set;
  for (const auto& path : req.env_files) {
    std::string text = BRIG_TRY_CTX(util::ReadUserFile(path), "--env-file");
    auto entries = util::ParseEnvFile(text);
    if (!entries) return BadInput("--env-file", path, entries.error().Render());
    for (const auto& e : *entries) {
      if (e.value) {
        set.push_back(e.key + "=" + *e.value);
      } else if (auto v = util::EnvLookup(host_environ, e.key)) {
        set.push_back(e.key + "=" + std::string(*v));
      }
    }
  }
  run.set_env.insert(run.set_env.begin(), set.begin(), set.end());
  return {};
}

}  // namespace

Result<config::Sandbox> PlanRun(const RunRequest& req, char** host_environ) {
  config::Overrides run = req;
  run.id = NewSandboxId(req.name);
  run.policy_dir = config::ResolvePolicyDir(req.policy_dir);
  for (const auto& k : req.pass_env) {
    if (auto v = util::EnvLookup(host_environ, k)) {
      run.passed_env.push_back(k + "=" + std::string(*v));
    }
  }
  BRIG_TRY(ReadEnvFiles(req, host_environ, run));
  config::LoadedProfile profile = BRIG_TRY(config::LoadProfileFile(
      run.policy_dir, run.profile, run.dry_run ? "" : config::ProfileCacheDir()));
  config::Sandbox sb = BRIG_TRY(config::Resolve(profile.profile, run));
  sb.profile_path = profile.path;
  sb.profile_text = std::move(profile.text);
  BRIG_TRY(config::ProbeHost(sb, host_environ));
  return sb;
}

int RunMain(const std::vector<std::string>& args) {
  supervise::EnsureStdio();
  auto req = ParseRunArgs(args);
  if (!req) {
    fprintf(stderr, "brig: %s\n", req.error().Render().c_str());
    return kExitRefused;
  }
  if (req->help) {
    fputs(RunUsage().c_str(), stdout);
    return 0;
  }
  // The plan: the profile, the run's overrides on it, the host's facts (PlanRun).
  auto sb = PlanRun(*req, environ);
  if (!sb && req->dry_run) {
    fprintf(stderr, "brig: %s\n", sb.error().Render().c_str());
    return kExitRefused;
  }
  if (!sb) {
    // A refused --result is not written to: the refusal is the one line on stderr.
    bool refused = sb.error().op == "--result";
    return Refuse("", req->name, refused ? std::string() : req->result_path, std::move(sb).error());
  }
  log::Debug("plan resolved: profile '", sb->profile, "', sandbox ", sb->id);
  log::Debug("cgroup: memory ", cgroup::Name(sb->cgroup_plan.memory), ", pids ",
             cgroup::Name(sb->cgroup_plan.pids), ", cpu ", cgroup::Name(sb->cgroup_plan.cpu),
             ", parent '", sb->cgroup_parent, "'; limits (0: none): memory ",
             sb->limits.memory.value_or(0), ", swap ", sb->limits.swap.value_or(0), ", pids ",
             sb->limits.pids.value_or(0), ", cpu_milli ", sb->limits.cpu_milli.value_or(0));
  if (sb->dry_run) return DryRun(*sb);
  // What supervisors that are gone left goes first (their addresses may be needed now). It
  // never waits for a live brig; what it cannot remove stays, for brig gc to report.
  (void)Reclaim(ReclaimMode::kQuiet);
  return RunSandbox(*sb);
}

std::string VersionText() {
  return std::string("brig version ") + BRIG_VERSION + "\nspec: " + oci::kSpecVersion +
         "\nlibseccomp: " + security::LibseccompVersion() + "\n";
}

std::string MainUsage() {
  return "Usage: brig [GLOBAL OPTIONS] COMMAND [OPTIONS]\n\n"
         "brig runs one unit of untrusted work in a sandbox enforced by the Linux kernel.\n\n"
         "Commands:\n"
         "  run       run a command in a new sandbox (brig run --help)\n"
         "  policy    list, show, check, explain, export and diff policies; show the masked\n"
         "            kernel paths (brig policy --help)\n"
         "  check     preflight: this host's cgroups and kernel features, and which\n"
         "            profiles can run here (brig check --help)\n"
         "  list      list the running sandboxes: the id and name brig exec takes (brig list\n"
         "            --help)\n"
         "  exec      run a command in a running sandbox, NAME|ID -- CMD (brig exec --help)\n"
         "  gc        remove what sandboxes of a killed brig left behind, or one of them\n"
         "            (brig gc --help)\n\n"
         "exec and gc need root; run, check and list work without it (list shows the\n"
         "caller's own sandboxes, run's limits hold only in a delegated cgroup: brig(1),\n"
         "WITHOUT ROOT); policy reads files only.\n\n"
         "OCI runtime commands (runc's, on a bundle, for containerd, podman and Docker;\n"
         "brig COMMAND --help, brig-oci(1); they work without root too, WITHOUT ROOT there):\n"
         "  create, start, state, kill, delete\n"
         "            make a container from its bundle, start it, show it, signal it, remove it\n"
         "  run [--bundle DIR] ID\n"
         "            under the global --root or with --bundle: create and start a\n"
         "            container, and wait for it\n"
         "  exec, ps, pause, resume, update, events\n"
         "            a new process in a container (an ID no running sandbox has); its\n"
         "            processes, freezer, limits and usage\n"
         "  spec, features\n"
         "            write a config.json brig runs as it is; print what brig supports\n"
         "  list      with the global --root: the containers under it\n\n"
         "Options:\n"
         "  --help    show this help\n"
         "  --version, -v\n"
         "            show brig's version, the runtime spec's and libseccomp's\n\n"
         "Global options (before COMMAND, as runc's):\n" +
         GlobalUsage() +
         "\n"
         "See brig(1), brig-run(1), brig-check(1), brig-list(1), brig-exec(1), brig-gc(1),\n"
         "brig-policy(1), brig-profile(5), brig-seccomp(5), brig-oci(1) and brig-engines(7).\n";
}

}  // namespace brig::cli
