// brig's verbs: the one table main looks a verb up in, a row per verb (cli.h's Verb), and
// the flag table of the OCI verbs, whose rows list the flags each takes. brig's own verbs
// keep their flags in their files and parse their arguments themselves; the OCI verbs
// share one parser (cli/oci.cc).
#include <algorithm>
#include <charconv>
#include <string_view>

#include "brig/exit.h"
#include "cli/cli.h"
#include "cli/oci.h"
#include "container/sandbox_exec.h"
#include "oci/launch.h"
#include "oci/state.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

Result<int64_t> Number(const std::string& flag, const std::string& v) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) return BadInput(flag, v, "not a number");
  return n;
}

// A memory size as runc's update takes it: 512M, 1G, bytes, or -1 (no limit).
Result<int64_t> MemoryValue(const std::string& v) {
  if (v == "-1") return -1;
  return static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v)));
}

// The OCI verbs' flags, in runc's spelling and meaning, but --help: every verb takes that
// one, and the front end has it (cli/oci.cc).
constexpr OciFlag kFlags[] = {
    {"--bundle", "DIR", "the bundle: config.json and the rootfs it names (default: .)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.create.bundle = v;
       return {};
     }},
    {"--pid-file", "FILE", "write the container's pid (on the host) to FILE",
     [](OciRequest& r, const std::string& v) -> Status {
       r.create.pid_file = v;
       r.exec.pid_file = v;
       return {};
     }},
    {"--console-socket", "PATH", "send a terminal's master to this unix socket",
     [](OciRequest& r, const std::string& v) -> Status {
       r.create.console_socket = v;
       r.exec.console_socket = v;
       return {};
     }},
    {"--preserve-fds", "N", "pass fds 3 .. 3+N-1 to the container",
     [](OciRequest& r, const std::string& v) -> Status {
       int64_t n = BRIG_TRY(Number("--preserve-fds", v));
       if (n < 0 || n > 1000) return BadInput("--preserve-fds", v, "not between 0 and 1000");
       r.create.preserve_fds = static_cast<int>(n);
       r.exec.preserve_fds = static_cast<int>(n);
       return {};
     }},
    {"--no-pivot", nullptr, "enter the root with MS_MOVE and chroot, not pivot_root",
     [](OciRequest& r, const std::string&) -> Status {
       r.create.no_pivot = true;
       return {};
     }},
    {"--no-new-keyring", nullptr, "keep the caller's session keyring",
     [](OciRequest& r, const std::string&) -> Status {
       r.create.no_new_keyring = true;
       return {};
     }},
    {"--dry-run", nullptr,
     "print what would be made (mounts, namespaces, cgroups, process) as JSON; make nothing",
     [](OciRequest& r, const std::string&) -> Status {
       r.dry_run = true;
       return {};
     }},
    {"--detach", nullptr, "return once the process runs, without waiting for it",
     [](OciRequest& r, const std::string&) -> Status {
       r.detach = true;
       r.exec.detach = true;
       return {};
     }},
    {"--process", "FILE", "the process as a runtime-spec Process object in JSON",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.process_file = v;
       return {};
     }},
    {"--tty", nullptr, "give the process a terminal (to --console-socket, or relayed)",
     [](OciRequest& r, const std::string&) -> Status {
       r.exec.tty = true;
       return {};
     }},
    {"--cwd", "DIR", "the process's working directory in the container",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.cwd = v;
       return {};
     }},
    {"--env", "K=V", "one more environment variable (repeatable)",
     [](OciRequest& r, const std::string& v) -> Status {
       if (v.find('=') == std::string::npos) return BadInput("--env", v, "expected K=V");
       r.exec.env.push_back(v);
       return {};
     }},
    {"--user", "UID[:GID]", "the process's user and group ids",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.user = v;
       return {};
     }},
    {"--additional-gids", "GID", "one more supplementary group (repeatable)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.additional_gids.push_back(
           static_cast<uint32_t>(BRIG_TRY(Number("--additional-gids", v))));
       return {};
     }},
    {"--cap", "CAP", "one more capability (repeatable)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.caps.push_back(v);
       return {};
     }},
    {"--cgroup", "[CONTROLLERS:]PATH",
     "put the process in a group below the container's (repeatable, runc's)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.exec.cgroups.push_back(BRIG_TRY(cgroup::Groups::ParseSub(v)));
       return {};
     }},
    {"--ignore-paused", nullptr, "start it in a paused container too (it runs once resumed)",
     [](OciRequest& r, const std::string&) -> Status {
       r.exec.ignore_paused = true;
       return {};
     }},
    {"--no-new-privs", nullptr, "set no_new_privs for the process",
     [](OciRequest& r, const std::string&) -> Status {
       r.exec.no_new_privs = true;
       return {};
     }},
    {"--keep", nullptr, "do not delete the container when it exits (run)",
     [](OciRequest& r, const std::string&) -> Status {
       r.keep = true;
       return {};
     }},
    {"--all", nullptr, "signal every process of the container",
     [](OciRequest& r, const std::string&) -> Status {
       r.all = true;
       return {};
     }},
    {"--force", nullptr, "kill a running container before deleting it",
     [](OciRequest& r, const std::string&) -> Status {
       r.force = true;
       return {};
     }},
    {"--format", "table|json", "print a table (the default) or JSON",
     [](OciRequest& r, const std::string& v) -> Status {
       if (v != "table" && v != "json") return BadInput("--format", v, "expected table or json");
       r.json = v == "json";
       return {};
     }},
    {"--quiet", nullptr, "print the containers' ids alone, one a line",
     [](OciRequest& r, const std::string&) -> Status {
       r.quiet = true;
       return {};
     }},
    {"--stats", nullptr, "print the container's statistics once and exit",
     [](OciRequest& r, const std::string&) -> Status {
       r.stats = true;
       return {};
     }},
    {"--interval", "DURATION", "time between two statistics (default 5s)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.interval = BRIG_TRY(util::ParseDuration(v));
       if (r.interval.count() <= 0) return BadInput("--interval", v, "must be positive");
       return {};
     }},
    {"--rootless", nullptr, "a config for a user namespace of the caller's ids",
     [](OciRequest& r, const std::string&) -> Status {
       r.rootless = true;
       return {};
     }},
    {"--resources", "FILE", "linux.resources as JSON, from FILE or - (stdin)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.resources_file = v;
       return {};
     }},
    {"--memory", "BYTES", "memory limit (-1: unlimited)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_limit(BRIG_TRY(MemoryValue(v)));
       r.update_set = true;
       return {};
     }},
    {"--memory-swap", "BYTES", "memory plus swap limit (-1: unlimited)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_swap(BRIG_TRY(MemoryValue(v)));
       r.update_set = true;
       return {};
     }},
    {"--memory-reservation", "BYTES", "memory soft limit (-1: none)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_reservation(BRIG_TRY(MemoryValue(v)));
       r.update_set = true;
       return {};
     }},
    {"--cpu-share", "N", "CPU shares (relative weight)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_shares(
           static_cast<uint64_t>(BRIG_TRY(Number("--cpu-share", v))));
       r.update_set = true;
       return {};
     }},
    {"--cpu-quota", "MICROSECONDS", "CPU time per period (-1: unlimited)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_quota(BRIG_TRY(Number("--cpu-quota", v)));
       r.update_set = true;
       return {};
     }},
    {"--cpu-period", "MICROSECONDS", "the CPU period the quota is of",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_period(
           static_cast<uint64_t>(BRIG_TRY(Number("--cpu-period", v))));
       r.update_set = true;
       return {};
     }},
    {"--cpuset-cpus", "LIST", "CPUs the container may use (0-3, 5)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_cpus(v);
       r.update_set = true;
       return {};
     }},
    {"--cpuset-mems", "LIST", "memory nodes the container may use",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_mems(v);
       r.update_set = true;
       return {};
     }},
    {"--pids-limit", "N", "the most processes (-1: unlimited)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_pids()->set_limit(BRIG_TRY(Number("--pids-limit", v)));
       r.update_set = true;
       return {};
     }},
    {"--blkio-weight", "N", "block IO weight (10-1000)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_block_io()->set_weight(
           static_cast<uint32_t>(BRIG_TRY(Number("--blkio-weight", v))));
       r.update_set = true;
       return {};
     }},
};

// The flag of kFlags named `name`; a name it lacks does not compile.
consteval const OciFlag* Named(std::string_view name) {
  for (const OciFlag& f : kFlags) {
    if (name == f.name) return &f;
  }
  throw "no such flag";
}

// The flags each OCI verb takes, in its --help's order.
constexpr const OciFlag* kCreateFlags[] = {Named("--bundle"),         Named("--pid-file"),
                                           Named("--console-socket"), Named("--preserve-fds"),
                                           Named("--no-pivot"),       Named("--no-new-keyring"),
                                           Named("--dry-run")};
constexpr const OciFlag* kRunFlags[] = {
    Named("--bundle"),       Named("--pid-file"), Named("--console-socket"),
    Named("--preserve-fds"), Named("--no-pivot"), Named("--no-new-keyring"),
    Named("--dry-run"),      Named("--detach"),   Named("--keep")};
constexpr const OciFlag* kExecFlags[] = {Named("--pid-file"),      Named("--console-socket"),
                                         Named("--preserve-fds"),  Named("--detach"),
                                         Named("--process"),       Named("--tty"),
                                         Named("--cwd"),           Named("--env"),
                                         Named("--user"),          Named("--additional-gids"),
                                         Named("--cap"),           Named("--no-new-privs"),
                                         Named("--ignore-paused"), Named("--cgroup")};
constexpr const OciFlag* kKillFlags[] = {Named("--all")};
constexpr const OciFlag* kDeleteFlags[] = {Named("--force")};
constexpr const OciFlag* kFormatFlags[] = {Named("--format")};
constexpr const OciFlag* kListFlags[] = {Named("--format"), Named("--quiet")};
constexpr const OciFlag* kEventsFlags[] = {Named("--stats"), Named("--interval")};
constexpr const OciFlag* kSpecFlags[] = {Named("--bundle"), Named("--rootless")};
constexpr const OciFlag* kUpdateFlags[] = {
    Named("--resources"),          Named("--memory"),      Named("--memory-swap"),
    Named("--memory-reservation"), Named("--cpu-share"),   Named("--cpu-quota"),
    Named("--cpu-period"),         Named("--cpuset-cpus"), Named("--cpuset-mems"),
    Named("--pids-limit"),         Named("--blkio-weight")};

// `brig run` is the OCI verb under the global --root, which every engine and runc's own
// suite pass and which no native run takes (runc's `run ID` with the bundle in the current
// directory), or when it names a bundle (--bundle, -b) before "--".
bool OciRunChosen(const GlobalFlags& global, const std::vector<std::string>& args) {
  if (!global.root.empty()) return true;
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--bundle" || a == "-b" || a == "-bundle" || a.rfind("--bundle=", 0) == 0) {
      return true;
    }
  }
  return false;
}

// `brig list` is the OCI verb under the global --root.
bool UnderRoot(const GlobalFlags& global, const std::vector<std::string>&) {
  return !global.root.empty();
}

// Whether `flag` (an OCI exec's, in any of runc's spellings) takes the next argument.
bool ExecFlagTakesValue(const std::string& flag) {
  static const std::string_view kShort[] = {"-p", "-e", "-u", "-g", "-c"};
  if (std::find(std::begin(kShort), std::end(kShort), flag) != std::end(kShort)) return true;
  std::string_view name = flag;
  while (!name.empty() && name[0] == '-') name.remove_prefix(1);
  return std::any_of(std::begin(kExecFlags), std::end(kExecFlags), [&](const OciFlag* f) {
    return f->metavar && name == std::string_view(f->name).substr(2);
  });
}

// Whether an OCI container `id` is under the default --root.
bool NamesAContainer(const std::string& id) {
  if (!oci::CheckId(id)) return false;
  auto ids = oci::ListIds(oci::DefaultRoot());
  return ids && std::find(ids->begin(), ids->end(), id) != ids->end();
}

// `brig exec` is brig's own, into a running sandbox, when its first argument is a live
// sandbox's id or --name, or names no OCI container either (brig's own then refuses it),
// or it has none and asks for --help; never under the global --root, which is an engine's
// call: otherwise the OCI verb, as runc's. The arguments before it are flags of either
// verb, whose values are skipped as either takes them.
bool NamesASandbox(const GlobalFlags& global, const std::vector<std::string>& args) {
  if (!global.root.empty()) return false;
  bool help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') return container::NamesASandbox(a) || !NamesAContainer(a);
    help |= a == "--help" || a == "-h";
    if (a.find('=') == std::string::npos && ExecFlagTakesValue(a)) ++i;
  }
  return help;
}

// Every verb, in `brig --help`'s order.
constexpr Verb kVerbs[] = {
    // brig's own (brig(1)). `brig run` works without root too (brig(1), WITHOUT ROOT).
    // `brig policy` reads files only, and works for anyone, so that a reviewer needs no root
    // to read a policy.
    {.name = "run", .rootless = true, .holds_signals = true, .main = RunMain},
    {.name = "policy", .main = PolicyMain},
    {.name = "check", .rootless = true, .main = CheckMain},
    {.name = "list", .rootless = true, .main = ListMain},
    {.name = "exec",
     .why_root = "it joins a sandbox's namespaces and cgroups as root",
     .chosen = NamesASandbox,
     .main = ExecMain},
    {.name = "gc",
     .why_root = "it removes what sandboxes left in /run/brig, cgroups and nftables",
     .main = GcMain},
    // The OCI runtime verbs, runc's (brig-oci(1)). `spec` and `features` write or print a
    // document, and work for anyone too.
    {.name = "create",
     .rootless = true,
     .synopsis = "[OPTIONS] ID",
     .what = "Create container ID from its bundle; its process waits for start.",
     .flags = kCreateFlags,
     .act = OciCreate},
    {.name = "start",
     .rootless = true,
     .synopsis = "ID",
     .what = "Start the process of created container ID.",
     .act = OciStart},
    {.name = "state",
     .rootless = true,
     .synopsis = "ID",
     .what = "Print the state of container ID as JSON.",
     .act = OciState},
    {.name = "kill",
     .rootless = true,
     .synopsis = "[--all] ID [SIGNAL]",
     .what = "Send SIGNAL (default SIGTERM) to container ID.",
     .flags = kKillFlags,
     .act = OciKill},
    {.name = "delete",
     .rootless = true,
     .synopsis = "[--force] ID",
     .what = "Delete container ID and everything it left.",
     .flags = kDeleteFlags,
     .act = OciDelete},
    {.name = "run",
     .rootless = true,
     .chosen = OciRunChosen,
     .synopsis = "[--bundle DIR] [OPTIONS] ID",
     .what = "Create and start container ID, and wait for it unless --detach. This is the OCI\n"
             "run under the global --root (the bundle is then the current directory unless\n"
             "--bundle names one) or with --bundle; otherwise brig run is brig's own.",
     .flags = kRunFlags,
     .act = OciRun},
    {.name = "exec",
     .rootless = true,
     .synopsis = "[OPTIONS] ID [COMMAND [ARG...]]",
     .what = "Run a new process in running container ID (the command, or --process FILE).",
     .flags = kExecFlags,
     .act = OciExec},
    {.name = "ps",
     .rootless = true,
     .synopsis = "[--format table|json] ID [PS ARGS]",
     .what = "List the processes of container ID.",
     .flags = kFormatFlags,
     .act = OciPs},
    {.name = "pause",
     .rootless = true,
     .synopsis = "ID",
     .what = "Freeze every process of container ID.",
     .act = OciPause},
    {.name = "resume",
     .rootless = true,
     .synopsis = "ID",
     .what = "Thaw the processes of paused container ID.",
     .act = OciResume},
    {.name = "update",
     .rootless = true,
     .synopsis = "[OPTIONS] ID",
     .what = "Change the resource limits of container ID.",
     .flags = kUpdateFlags,
     .act = OciUpdate},
    {.name = "events",
     .rootless = true,
     .synopsis = "[--stats] [--interval D] ID",
     .what = "Print the statistics of container ID.",
     .flags = kEventsFlags,
     .act = OciEvents},
    {.name = "spec",
     .synopsis = "[--bundle DIR] [--rootless]",
     .what = "Write a config.json that brig runs as it is.",
     .flags = kSpecFlags,
     .act = OciSpec},
    {.name = "features",
     .synopsis = "",
     .what = "Print what this brig supports, as features.md says.",
     .act = OciFeatures},
    {.name = "list",
     .rootless = true,
     .chosen = UnderRoot,
     .synopsis = "[--format table|json] [--quiet]",
     .what = "List the OCI containers under --root.",
     .flags = kListFlags,
     .act = OciList},
};

}  // namespace

void Verb::BeforeOpening(const std::vector<std::string>& args) const {
  if (std::find(flags.begin(), flags.end(), Named("--preserve-fds")) == flags.end()) return;
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) {
        return a.rfind("--preserve-fds", 0) == 0 || a.rfind("-preserve-fds", 0) == 0;
      })) {
    oci::RecordInheritedFds();
  }
}

int Verb::Run(const GlobalFlags& global, const std::vector<std::string>& args) const {
  return act ? OciMain(*this, global, args) : main(args);
}

int Verb::RefusedStatus() const {
  if (!act) return kExitRefused;
  return std::string_view(name) == "exec" ? 255 : 1;
}

const Verb* FindVerb(const std::string& name, const GlobalFlags& global,
                     const std::vector<std::string>& args) {
  for (const Verb& v : kVerbs) {
    if (name == v.name && v.chosen && v.chosen(global, args)) return &v;
  }
  for (const Verb& v : kVerbs) {
    if (name == v.name && !v.chosen) return &v;
  }
  return nullptr;
}

std::span<const Verb> Verbs() { return kVerbs; }

}  // namespace brig::cli
