// The OCI runtime verbs with runc's command line (brig-oci(1)): create, start, state,
// kill, delete, run --bundle, ps, pause, resume, update, events, spec, features, and
// list under --root. One flag table for all of them; each verb takes the flags it names.
// Errors are printed once, on stderr and in the --log file (containerd reads the last
// JSON line's msg), as one line.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "container/command.h"
#include "log/log.h"
#include "oci/container.h"
#include "oci/exec.h"
#include "oci/launch.h"
#include "oci/process.h"
#include "oci/spec.h"
#include "oci/state.h"
#include "util/files.h"
#include "sys/syscalls.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

struct OciRequest {
  std::string root;
  std::vector<std::string> positional;
  oci::CreateOptions create;
  bool detach = false, all = false, force = false, stats = false, rootless = false;
  bool json = false, help = false, keep = false;
  std::string resources_file;
  oci::Resources update;
  bool update_set = false;
  std::chrono::milliseconds interval{5000};
  oci::ExecOptions exec;
};

struct Flag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(OciRequest&, const std::string&);
  const char* verbs;  // the verbs that take it, space-separated
};

Result<int64_t> Number(const std::string& flag, const std::string& v) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) return BadInput(flag, v, "not a number");
  return n;
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--bundle", "DIR", "the bundle: config.json and the rootfs it names (default: .)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.create.bundle = v;
         return {};
       },
       "create run spec"},
      {"--pid-file", "FILE", "write the container's pid (on the host) to FILE",
       [](OciRequest& r, const std::string& v) -> Status {
         r.create.pid_file = v;
         r.exec.pid_file = v;
         return {};
       },
       "create run exec"},
      {"--console-socket", "PATH", "send a terminal's master to this unix socket",
       [](OciRequest& r, const std::string& v) -> Status {
         r.create.console_socket = v;
         r.exec.console_socket = v;
         return {};
       },
       "create run exec"},
      {"--preserve-fds", "N", "pass fds 3 .. 3+N-1 to the container",
       [](OciRequest& r, const std::string& v) -> Status {
         int64_t n = BRIG_TRY(Number("--preserve-fds", v));
         if (n < 0 || n > 1000) return BadInput("--preserve-fds", v, "not between 0 and 1000");
         r.create.preserve_fds = static_cast<int>(n);
         r.exec.preserve_fds = static_cast<int>(n);
         return {};
       },
       "create run exec"},
      {"--no-pivot", nullptr, "enter the root with MS_MOVE and chroot, not pivot_root",
       [](OciRequest& r, const std::string&) -> Status {
         r.create.no_pivot = true;
         return {};
       },
       "create run"},
      {"--no-new-keyring", nullptr, "keep the caller's session keyring",
       [](OciRequest& r, const std::string&) -> Status {
         r.create.no_new_keyring = true;
         return {};
       },
       "create run"},
      {"--detach", nullptr, "return once the process runs, without waiting for it",
       [](OciRequest& r, const std::string&) -> Status {
         r.detach = true;
         r.exec.detach = true;
         return {};
       },
       "run exec"},
      {"--process", "FILE", "the process as a runtime-spec Process object in JSON",
       [](OciRequest& r, const std::string& v) -> Status {
         r.exec.process_file = v;
         return {};
       },
       "exec"},
      {"--tty", nullptr, "give the process a terminal (needs --console-socket)",
       [](OciRequest& r, const std::string&) -> Status {
         r.exec.tty = true;
         return {};
       },
       "exec"},
      {"--cwd", "DIR", "the process's working directory in the container",
       [](OciRequest& r, const std::string& v) -> Status {
         r.exec.cwd = v;
         return {};
       },
       "exec"},
      {"--env", "K=V", "one more environment variable (repeatable)",
       [](OciRequest& r, const std::string& v) -> Status {
         if (v.find('=') == std::string::npos) return BadInput("--env", v, "expected K=V");
         r.exec.env.push_back(v);
         return {};
       },
       "exec"},
      {"--user", "UID[:GID]", "the process's user and group ids",
       [](OciRequest& r, const std::string& v) -> Status {
         r.exec.user = v;
         return {};
       },
       "exec"},
      {"--additional-gids", "GID", "one more supplementary group (repeatable)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.exec.additional_gids.push_back(static_cast<uint32_t>(BRIG_TRY(Number("--additional-gids", v))));
         return {};
       },
       "exec"},
      {"--cap", "CAP", "one more capability (repeatable)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.exec.caps.push_back(v);
         return {};
       },
       "exec"},
      {"--no-new-privs", nullptr, "set no_new_privs for the process",
       [](OciRequest& r, const std::string&) -> Status {
         r.exec.no_new_privs = true;
         return {};
       },
       "exec"},
      {"--keep", nullptr, "do not delete the container when it exits (run)",
       [](OciRequest& r, const std::string&) -> Status {
         r.keep = true;
         return {};
       },
       "run"},
      {"--all", nullptr, "signal every process of the container",
       [](OciRequest& r, const std::string&) -> Status {
         r.all = true;
         return {};
       },
       "kill"},
      {"--force", nullptr, "kill a running container before deleting it",
       [](OciRequest& r, const std::string&) -> Status {
         r.force = true;
         return {};
       },
       "delete"},
      {"--format", "table|json", "print a table (the default) or JSON",
       [](OciRequest& r, const std::string& v) -> Status {
         if (v != "table" && v != "json") return BadInput("--format", v, "expected table or json");
         r.json = v == "json";
         return {};
       },
       "ps list"},
      {"--stats", nullptr, "print the container's statistics once and exit",
       [](OciRequest& r, const std::string&) -> Status {
         r.stats = true;
         return {};
       },
       "events"},
      {"--interval", "DURATION", "time between two statistics (default 5s)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.interval = BRIG_TRY(util::ParseDuration(v));
         if (r.interval.count() <= 0) return BadInput("--interval", v, "must be positive");
         return {};
       },
       "events"},
      {"--rootless", nullptr, "a config for a user namespace of the caller's ids",
       [](OciRequest& r, const std::string&) -> Status {
         r.rootless = true;
         return {};
       },
       "spec"},
      {"--resources", "FILE", "linux.resources as JSON, from FILE or - (stdin)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.resources_file = v;
         return {};
       },
       "update"},
      {"--memory", "BYTES", "memory limit",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_memory()->set_limit(static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--memory-swap", "BYTES", "memory plus swap limit (-1: unlimited)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_memory()->set_swap(
             v == "-1" ? -1 : static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--memory-reservation", "BYTES", "memory soft limit",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_memory()->set_reservation(
             static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--cpu-shares", "N", "CPU shares (relative weight)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_cpu()->set_shares(static_cast<uint64_t>(BRIG_TRY(Number("--cpu-shares", v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--cpu-quota", "MICROSECONDS", "CPU time per period (-1: unlimited)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_cpu()->set_quota(BRIG_TRY(Number("--cpu-quota", v)));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--cpu-period", "MICROSECONDS", "the CPU period the quota is of",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_cpu()->set_period(static_cast<uint64_t>(BRIG_TRY(Number("--cpu-period", v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--cpuset-cpus", "LIST", "CPUs the container may use (0-3, 5)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_cpu()->set_cpus(v);
         r.update_set = true;
         return {};
       },
       "update"},
      {"--cpuset-mems", "LIST", "memory nodes the container may use",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_cpu()->set_mems(v);
         r.update_set = true;
         return {};
       },
       "update"},
      {"--pids-limit", "N", "the most processes (-1: unlimited)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_pids()->set_limit(BRIG_TRY(Number("--pids-limit", v)));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--blkio-weight", "N", "block IO weight (10-1000)",
       [](OciRequest& r, const std::string& v) -> Status {
         r.update.mutable_block_io()->set_weight(
             static_cast<uint32_t>(BRIG_TRY(Number("--blkio-weight", v))));
         r.update_set = true;
         return {};
       },
       "update"},
      {"--help", nullptr, "show this help",
       [](OciRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       },
       "create start state kill delete run exec ps pause resume update events spec features "
       "list"},
  };
  return flags;
}

// runc's short spellings, and its single-dash long ones (urfave/cli takes -bundle).
std::string Canonical(const std::string& verb, const std::string& a) {
  static const std::pair<const char*, const char*> kShort[] = {
      {"-b", "--bundle"}, {"-d", "--detach"}, {"-a", "--all"},     {"-r", "--resources"},
      {"-h", "--help"},   {"-p", "--process"}, {"-t", "--tty"},    {"-e", "--env"},
      {"-u", "--user"},   {"-g", "--additional-gids"}, {"-c", "--cap"}};
  if (a == "-f") return verb == "ps" ? "--format" : "--force";
  for (const auto& [s, l] : kShort) {
    if (a == s) return l;
  }
  if (a.size() > 2 && a[0] == '-' && a[1] != '-') return "-" + a;
  return a;
}

bool Takes(const Flag& f, const std::string& verb) {
  std::istringstream in(f.verbs);
  std::string v;
  while (in >> v) {
    if (v == verb) return true;
  }
  return false;
}

Result<OciRequest> Parse(const std::string& verb, const std::vector<std::string>& args) {
  std::vector<Flag> table;
  for (const Flag& f : Flags()) {
    if (Takes(f, verb)) table.push_back(f);
  }
  OciRequest r;
  // Flags in runc's spellings become the table's; their values stay as given.
  std::vector<std::string> canon = args;
  size_t i = 0;
  for (; i < canon.size(); ++i) {
    if (canon[i] == "--") {
      ++i;
      break;
    }
    if (canon[i].size() < 2 || canon[i][0] != '-') break;
    canon[i] = Canonical(verb, canon[i]);
    BRIG_TRY(ApplyFlag(table, canon, i, r, "brig " + verb));
  }
  r.positional.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
  return r;
}

std::string Usage(const std::string& verb, const char* synopsis, const char* what) {
  std::ostringstream out;
  out << "Usage: brig [GLOBAL OPTIONS] " << verb << " " << synopsis << "\n\n" << what << "\n";
  bool any = false;
  for (const Flag& f : Flags()) {
    if (!Takes(f, verb)) continue;
    if (!any) out << "\nOptions:\n";
    any = true;
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nSee brig-oci(1).\n";
  return out.str();
}

int Refuse(const Error& e) {
  std::string line = e.Render();
  fprintf(stderr, "brig: %s\n", line.c_str());
  log::Mirror(log::Level::kError, line);
  return ExitCode(e.kind);
}

Result<std::string> OneId(const std::string& verb, const OciRequest& r) {
  if (r.positional.size() != 1) {
    return BadInput("brig " + verb, "", "needs exactly one container id (see brig " + verb +
                                            " --help)");
  }
  return r.positional[0];
}

Status MakeBundleAbsolute(oci::CreateOptions& c) {
  if (c.bundle.empty()) c.bundle = ".";
  std::optional<std::string> real = util::RealPath(c.bundle);
  if (!real) return BadInput("--bundle", c.bundle, "no such directory");
  c.bundle = *real;
  return {};
}

std::string ListTable(const std::vector<oci::Listed>& all) {
  std::vector<std::vector<std::string>> rows = {{"ID", "PID", "STATUS", "BUNDLE", "CREATED",
                                                 "OWNER"}};
  for (const oci::Listed& c : all) {
    rows.push_back({c.id, std::to_string(c.pid), std::string(oci::StatusName(c.status)),
                    c.bundle, c.created, "root"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += "\n";
  }
  return out;
}

std::string ListJson(const std::vector<oci::Listed>& all) {
  std::string out = "[";
  for (size_t i = 0; i < all.size(); ++i) {
    const oci::Listed& c = all[i];
    out += std::string(i ? "," : "") + "{\"ociVersion\":\"1.0.2\",\"id\":\"" +
           log::JsonEscape(c.id) + "\",\"pid\":" + std::to_string(c.pid) + ",\"status\":\"" +
           std::string(oci::StatusName(c.status)) + "\",\"bundle\":\"" +
           log::JsonEscape(c.bundle) + "\",\"created\":\"" + log::JsonEscape(c.created) +
           "\",\"owner\":\"root\"}";
  }
  return out + "]\n";
}

// ps(1)'s output; an error if it fails.
Result<std::string> RunPs(const std::vector<std::string>& argv) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return SysError("pipe2", "ps");
  std::vector<char*> args = container::ExecArray(argv);
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "ps");
  if (pid == 0) {
    dup2(p[1], 1);
    execvp("ps", args.data());
    _exit(127);
  }
  close(p[1]);
  std::string out;
  int status = sys::ReadAllAndReap(p[0], pid, out);
  close(p[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Fail("ps", "", "ps(1) failed");
  return out;
}

// `ps`: runc's table is ps(1)'s own, filtered to the container's pids.
Result<std::string> PsTable(const std::vector<pid_t>& pids, std::vector<std::string> ps_args) {
  if (ps_args.empty()) ps_args = {"-ef"};
  ps_args.insert(ps_args.begin(), "ps");
  std::string text = BRIG_TRY(RunPs(ps_args));
  std::vector<std::string_view> lines = util::Split(text, '\n');
  if (lines.empty()) return std::string();
  std::istringstream head{std::string(lines[0])};
  std::string col;
  int pid_col = -1;
  for (int i = 0; head >> col; ++i) {
    if (col == "PID") pid_col = i;
  }
  if (pid_col < 0) return Fail("ps", "", "ps(1) printed no PID column");
  std::string out = std::string(lines[0]) + "\n";
  for (size_t l = 1; l < lines.size(); ++l) {
    std::istringstream in{std::string(lines[l])};
    std::string field;
    for (int i = 0; i <= pid_col && in >> field; ++i) {
    }
    pid_t p = static_cast<pid_t>(std::atoi(field.c_str()));
    if (std::find(pids.begin(), pids.end(), p) != pids.end()) out += std::string(lines[l]) + "\n";
  }
  return out;
}

// `run --bundle` without --detach: brig stays the container's parent (a subreaper, so that
// a process forked into a new pid namespace comes back to it), passes on the signals it
// gets, and exits as the container did; the container is then deleted unless --keep.
int RunAttached(const OciRequest& r, pid_t pid) {
  int status = oci::WaitForwardingSignals(pid);
  if (!r.keep) {
    if (auto s = oci::Delete(r.root, r.positional[0], true); !s) Refuse(s.error());
  }
  return WIFSIGNALED(status) ? ExitCodeForSignal(WTERMSIG(status)) : WEXITSTATUS(status);
}

Result<int> Dispatch(const std::string& verb, OciRequest& r) {
  if (verb == "spec") {
    if (!r.positional.empty()) return BadInput("brig spec", r.positional[0], "takes no argument");
    std::string dir = r.create.bundle.empty() ? "." : r.create.bundle;
    std::string path = dir + "/config.json";
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
      return BadInput("brig spec", path, "exists already; remove it first");
    }
    BRIG_TRY(util::WriteFileAtomic(path, oci::DefaultSpecJson(r.rootless, getuid(), getgid())));
    return 0;
  }
  if (verb == "features") {
    fputs(oci::FeaturesJson().c_str(), stdout);
    return 0;
  }
  if (verb == "list") {
    auto all = BRIG_TRY(oci::List(r.root));
    fputs((r.json ? ListJson(all) : ListTable(all)).c_str(), stdout);
    return 0;
  }
  if (verb == "ps") {
    if (r.positional.empty()) return BadInput("brig ps", "", "needs a container id");
    auto pids = BRIG_TRY(oci::Pids(r.root, r.positional[0]));
    if (r.json) {
      std::string out = "[";
      for (size_t i = 0; i < pids.size(); ++i) out += (i ? "," : "") + std::to_string(pids[i]);
      printf("%s]\n", out.c_str());
      return 0;
    }
    fputs(BRIG_TRY(PsTable(pids, {r.positional.begin() + 1, r.positional.end()})).c_str(),
          stdout);
    return 0;
  }
  if (verb == "kill") {
    if (r.positional.empty() || r.positional.size() > 2) {
      return BadInput("brig kill", "", "usage: brig kill [--all] ID [SIGNAL]");
    }
    int sig = r.positional.size() == 2 ? BRIG_TRY(oci::ParseSignal(r.positional[1])) : SIGTERM;
    BRIG_TRY(oci::Kill(r.root, r.positional[0], sig, r.all));
    return 0;
  }
  if (verb == "exec") {
    if (r.positional.empty()) return BadInput("brig exec", "", "needs a container id");
    r.exec.root = r.root;
    r.exec.id = r.positional[0];
    r.exec.args.assign(r.positional.begin() + 1, r.positional.end());
    return oci::Exec(r.exec);
  }
  std::string id = BRIG_TRY(OneId(verb, r));
  if (verb == "create" || verb == "run") {
    r.create.root = r.root;
    r.create.id = id;
    BRIG_TRY(MakeBundleAbsolute(r.create));
    bool attached = verb == "run" && !r.detach;
    if (attached) {
      // Blocked before the container exists, so its exit is not lost before brig waits.
      sigset_t mask;
      sigemptyset(&mask);
      sigaddset(&mask, SIGCHLD);
      sigprocmask(SIG_BLOCK, &mask, nullptr);
      if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        return SysError("prctl", "PR_SET_CHILD_SUBREAPER");
      }
    }
    pid_t pid = BRIG_TRY(oci::Create(r.create));
    if (verb == "create") return 0;
    if (auto s = oci::Start(r.root, id); !s) {
      (void)oci::Delete(r.root, id, true);
      return std::move(s).error();
    }
    return attached ? RunAttached(r, pid) : 0;
  }
  if (verb == "start") BRIG_TRY(oci::Start(r.root, id));
  if (verb == "state") fputs(BRIG_TRY(oci::State(r.root, id)).c_str(), stdout);
  if (verb == "delete") BRIG_TRY(oci::Delete(r.root, id, r.force));
  if (verb == "pause") BRIG_TRY(oci::Pause(r.root, id));
  if (verb == "resume") BRIG_TRY(oci::Resume(r.root, id));
  if (verb == "update") {
    oci::Resources res = r.update;
    if (!r.resources_file.empty()) {
      std::string text = r.resources_file == "-"
                             ? BRIG_TRY(util::ReadStream(0, "stdin"))
                             : BRIG_TRY(util::ReadUserFile(r.resources_file));
      google::protobuf::util::JsonParseOptions opts;
      opts.ignore_unknown_fields = true;
      oci::Resources from;
      if (auto st = google::protobuf::util::JsonStringToMessage(text, &from, opts); !st.ok()) {
        return BadInput("--resources", r.resources_file, std::string(st.message()));
      }
      from.MergeFrom(res);
      res = from;
    } else if (!r.update_set) {
      return BadInput("brig update", id, "nothing to update (see brig update --help)");
    }
    BRIG_TRY(oci::Update(r.root, id, res));
  }
  if (verb == "events") {
    for (bool first = true;; first = false) {
      auto stats = oci::Stats(r.root, id);
      if (!stats && !first) return 0;  // the container has stopped: the stream ends
      printf("%s\n", BRIG_TRY(std::move(stats)).c_str());
      fflush(stdout);
      if (r.stats) return 0;
      usleep(static_cast<useconds_t>(r.interval.count() * 1000));
    }
  }
  return 0;
}

struct Verb {
  const char* name;
  const char* synopsis;
  const char* what;
};

constexpr Verb kVerbs[] = {
    {"create", "[OPTIONS] ID", "Create container ID from its bundle; its process waits for start."},
    {"start", "ID", "Start the process of created container ID."},
    {"state", "ID", "Print the state of container ID as JSON."},
    {"kill", "[--all] ID [SIGNAL]", "Send SIGNAL (default SIGTERM) to container ID."},
    {"delete", "[--force] ID", "Delete container ID and everything it left."},
    {"run", "--bundle DIR [OPTIONS] ID",
     "Create and start container ID, and wait for it unless --detach."},
    {"exec", "[OPTIONS] ID [COMMAND [ARG...]]",
     "Run a new process in running container ID (the command, or --process FILE)."},
    {"ps", "[--format table|json] ID [PS ARGS]", "List the processes of container ID."},
    {"pause", "ID", "Freeze every process of container ID."},
    {"resume", "ID", "Thaw the processes of paused container ID."},
    {"update", "[OPTIONS] ID", "Change the resource limits of container ID."},
    {"events", "[--stats] [--interval D] ID", "Print the statistics of container ID."},
    {"spec", "[--bundle DIR] [--rootless]", "Write a config.json that brig runs as it is."},
    {"features", "", "Print what this brig supports, as features.md says."},
    {"list", "[--format table|json]", "List the OCI containers under --root."},
};

}  // namespace

bool IsOciVerb(const std::string& verb) {
  for (const Verb& v : kVerbs) {
    if (verb == v.name) return true;
  }
  return false;
}

bool IsOciRun(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--bundle" || a == "-b" || a == "-bundle" || a.rfind("--bundle=", 0) == 0) {
      return true;
    }
  }
  return false;
}

int OciMain(const std::string& verb, const GlobalFlags& global,
            const std::vector<std::string>& args) {
  if (global.systemd_cgroup) {
    return Refuse(BadInput("--systemd-cgroup", "",
                           "brig has no systemd cgroup driver; give cgroupsPath as a path "
                           "(the cgroupfs driver)"));
  }
  const Verb* v = nullptr;
  for (const Verb& k : kVerbs) {
    if (verb == k.name) v = &k;
  }
  auto r = Parse(verb, args);
  if (!r) return Refuse(r.error());
  if (r->help) {
    fputs(Usage(verb, v->synopsis, v->what).c_str(), stdout);
    return 0;
  }
  r->root = global.root.empty() ? oci::kDefaultRoot : global.root;
  auto rc = Dispatch(verb, *r);
  if (!rc) return Refuse(rc.error());
  return *rc;
}

}  // namespace brig::cli
