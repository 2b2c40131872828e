// The OCI runtime verbs with runc's command line (brig-oci(1)): create, start, state,
// kill, delete, run --bundle, ps, pause, resume, update, events, spec, features, and
// list under --root. Each verb's row lists the flags it takes, from one flag table, and
// names its action. Errors are printed once, on stderr and in the --log file (containerd
// reads the last JSON line's msg), as one line.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <span>
#include <sstream>
#include <string_view>

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
};

Result<int64_t> Number(const std::string& flag, const std::string& v) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) return BadInput(flag, v, "not a number");
  return n;
}

// The OCI verbs' flags, in runc's spelling and meaning (--help, which every verb takes, is
// kHelp below).
constexpr Flag kFlags[] = {
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
    {"--tty", nullptr, "give the process a terminal (needs --console-socket)",
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
    {"--memory", "BYTES", "memory limit",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_limit(static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
       r.update_set = true;
       return {};
     }},
    {"--memory-swap", "BYTES", "memory plus swap limit (-1: unlimited)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_swap(
           v == "-1" ? -1 : static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
       r.update_set = true;
       return {};
     }},
    {"--memory-reservation", "BYTES", "memory soft limit",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_memory()->set_reservation(
           static_cast<int64_t>(BRIG_TRY(util::ParseMemory(v))));
       r.update_set = true;
       return {};
     }},
    {"--cpu-shares", "N", "CPU shares (relative weight)",
     [](OciRequest& r, const std::string& v) -> Status {
       r.update.mutable_cpu()->set_shares(
           static_cast<uint64_t>(BRIG_TRY(Number("--cpu-shares", v))));
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
consteval const Flag* Named(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (name == f.name) return &f;
  }
  throw "no such flag";
}

// The flags each OCI verb takes, in its --help's order.
constexpr const Flag* kCreateFlags[] = {Named("--bundle"),         Named("--pid-file"),
                                        Named("--console-socket"), Named("--preserve-fds"),
                                        Named("--no-pivot"),       Named("--no-new-keyring")};
constexpr const Flag* kRunFlags[] = {Named("--bundle"),         Named("--pid-file"),
                                     Named("--console-socket"), Named("--preserve-fds"),
                                     Named("--no-pivot"),       Named("--no-new-keyring"),
                                     Named("--detach"),         Named("--keep")};
constexpr const Flag* kExecFlags[] = {Named("--pid-file"),     Named("--console-socket"),
                                      Named("--preserve-fds"), Named("--detach"),
                                      Named("--process"),      Named("--tty"),
                                      Named("--cwd"),          Named("--env"),
                                      Named("--user"),         Named("--additional-gids"),
                                      Named("--cap"),          Named("--no-new-privs")};
constexpr const Flag* kKillFlags[] = {Named("--all")};
constexpr const Flag* kDeleteFlags[] = {Named("--force")};
constexpr const Flag* kFormatFlags[] = {Named("--format")};
constexpr const Flag* kEventsFlags[] = {Named("--stats"), Named("--interval")};
constexpr const Flag* kSpecFlags[] = {Named("--bundle"), Named("--rootless")};
constexpr const Flag* kUpdateFlags[] = {
    Named("--resources"),          Named("--memory"),      Named("--memory-swap"),
    Named("--memory-reservation"), Named("--cpu-shares"),  Named("--cpu-quota"),
    Named("--cpu-period"),         Named("--cpuset-cpus"), Named("--cpuset-mems"),
    Named("--pids-limit"),         Named("--blkio-weight")};

// Every OCI verb's last option.
constexpr Flag kHelp = {"--help", nullptr, "show this help",
                        [](OciRequest& r, const std::string&) -> Status {
                          r.help = true;
                          return {};
                        }};

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

// An OCI verb: its --help's synopsis (after "brig [GLOBAL OPTIONS] NAME ") and sentence,
// the flags it takes besides --help, in --help's order, and its action once they are
// parsed.
struct Verb {
  const char* name;
  const char* synopsis;
  const char* what;
  std::span<const Flag* const> flags;
  Result<int> (*act)(OciRequest&);
};

// The flags `verb` takes, --help last.
std::vector<Flag> FlagsOf(const Verb& verb) {
  std::vector<Flag> flags;
  for (const Flag* f : verb.flags) flags.push_back(*f);
  flags.push_back(kHelp);
  return flags;
}

Result<OciRequest> Parse(const Verb& verb, const std::vector<std::string>& args) {
  std::vector<Flag> table = FlagsOf(verb);
  std::string name = verb.name;
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
    canon[i] = Canonical(name, canon[i]);
    BRIG_TRY(ApplyFlag(table, canon, i, r, "brig " + name));
  }
  r.positional.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
  return r;
}

std::string Usage(const Verb& verb) {
  std::ostringstream out;
  out << "Usage: brig [GLOBAL OPTIONS] " << verb.name << " " << verb.synopsis << "\n\n"
      << verb.what << "\n\nOptions:\n";
  for (const Flag& f : FlagsOf(verb)) {
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

// create and run: the container from its bundle, under --root.
Status PrepareCreate(OciRequest& r, const std::string& verb) {
  r.create.root = r.root;
  r.create.id = BRIG_TRY(OneId(verb, r));
  return MakeBundleAbsolute(r.create);
}

// `run` without --detach: SIGCHLD is blocked before the container exists, so that its exit
// is not lost before brig waits, and brig is the subreaper of what it forks.
Status BecomeTheContainersParent() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_CHILD_SUBREAPER");
  }
  return {};
}

// `update`'s limits: --resources' JSON, which the other flags override, or those flags.
Result<oci::Resources> UpdatedResources(const OciRequest& r, const std::string& id) {
  if (r.resources_file.empty()) {
    if (!r.update_set) {
      return BadInput("brig update", id, "nothing to update (see brig update --help)");
    }
    return r.update;
  }
  std::string text = r.resources_file == "-" ? BRIG_TRY(util::ReadStream(0, "stdin"))
                                             : BRIG_TRY(util::ReadUserFile(r.resources_file));
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  oci::Resources from;
  if (auto st = google::protobuf::util::JsonStringToMessage(text, &from, opts); !st.ok()) {
    return BadInput("--resources", r.resources_file, std::string(st.message()));
  }
  from.MergeFrom(r.update);
  return from;
}

Result<int> OciCreate(OciRequest& r) {
  BRIG_TRY(PrepareCreate(r, "create"));
  BRIG_TRY(oci::Create(r.create));
  return 0;
}

Result<int> OciStart(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("start", r));
  BRIG_TRY(oci::Start(r.root, id));
  return 0;
}

Result<int> OciState(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("state", r));
  fputs(BRIG_TRY(oci::State(r.root, id)).c_str(), stdout);
  return 0;
}

Result<int> OciKill(OciRequest& r) {
  if (r.positional.empty() || r.positional.size() > 2) {
    return BadInput("brig kill", "", "usage: brig kill [--all] ID [SIGNAL]");
  }
  int sig = r.positional.size() == 2 ? BRIG_TRY(oci::ParseSignal(r.positional[1])) : SIGTERM;
  BRIG_TRY(oci::Kill(r.root, r.positional[0], sig, r.all));
  return 0;
}

Result<int> OciDelete(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("delete", r));
  BRIG_TRY(oci::Delete(r.root, id, r.force));
  return 0;
}

Result<int> OciRun(OciRequest& r) {
  BRIG_TRY(PrepareCreate(r, "run"));
  if (!r.detach) BRIG_TRY(BecomeTheContainersParent());
  pid_t pid = BRIG_TRY(oci::Create(r.create));
  if (auto s = oci::Start(r.root, r.create.id); !s) {
    (void)oci::Delete(r.root, r.create.id, true);
    return std::move(s).error();
  }
  return r.detach ? 0 : RunAttached(r, pid);
}

Result<int> OciExec(OciRequest& r) {
  if (r.positional.empty()) return BadInput("brig exec", "", "needs a container id");
  r.exec.root = r.root;
  r.exec.id = r.positional[0];
  r.exec.args.assign(r.positional.begin() + 1, r.positional.end());
  return oci::Exec(r.exec);
}

Result<int> OciPs(OciRequest& r) {
  if (r.positional.empty()) return BadInput("brig ps", "", "needs a container id");
  auto pids = BRIG_TRY(oci::Pids(r.root, r.positional[0]));
  if (r.json) {
    std::string out = "[";
    for (size_t i = 0; i < pids.size(); ++i) out += (i ? "," : "") + std::to_string(pids[i]);
    printf("%s]\n", out.c_str());
    return 0;
  }
  fputs(BRIG_TRY(PsTable(pids, {r.positional.begin() + 1, r.positional.end()})).c_str(), stdout);
  return 0;
}

Result<int> OciPause(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("pause", r));
  BRIG_TRY(oci::Pause(r.root, id));
  return 0;
}

Result<int> OciResume(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("resume", r));
  BRIG_TRY(oci::Resume(r.root, id));
  return 0;
}

Result<int> OciUpdate(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("update", r));
  oci::Resources res = BRIG_TRY(UpdatedResources(r, id));
  BRIG_TRY(oci::Update(r.root, id, res));
  return 0;
}

// runc's `events`: the container's statistics every --interval until it stops, or once
// with --stats.
Result<int> OciEvents(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("events", r));
  for (bool first = true;; first = false) {
    auto stats = oci::Stats(r.root, id);
    if (!stats && !first) return 0;  // the container has stopped: the stream ends
    printf("%s\n", BRIG_TRY(std::move(stats)).c_str());
    fflush(stdout);
    if (r.stats) return 0;
    usleep(static_cast<useconds_t>(r.interval.count() * 1000));
  }
}

Result<int> OciSpec(OciRequest& r) {
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

Result<int> OciFeatures(OciRequest&) {
  fputs(oci::FeaturesJson().c_str(), stdout);
  return 0;
}

Result<int> OciList(OciRequest& r) {
  auto all = BRIG_TRY(oci::List(r.root));
  fputs((r.json ? ListJson(all) : ListTable(all)).c_str(), stdout);
  return 0;
}

constexpr Verb kVerbs[] = {
    {.name = "create",
     .synopsis = "[OPTIONS] ID",
     .what = "Create container ID from its bundle; its process waits for start.",
     .flags = kCreateFlags,
     .act = OciCreate},
    {.name = "start",
     .synopsis = "ID",
     .what = "Start the process of created container ID.",
     .act = OciStart},
    {.name = "state",
     .synopsis = "ID",
     .what = "Print the state of container ID as JSON.",
     .act = OciState},
    {.name = "kill",
     .synopsis = "[--all] ID [SIGNAL]",
     .what = "Send SIGNAL (default SIGTERM) to container ID.",
     .flags = kKillFlags,
     .act = OciKill},
    {.name = "delete",
     .synopsis = "[--force] ID",
     .what = "Delete container ID and everything it left.",
     .flags = kDeleteFlags,
     .act = OciDelete},
    {.name = "run",
     .synopsis = "--bundle DIR [OPTIONS] ID",
     .what = "Create and start container ID, and wait for it unless --detach.",
     .flags = kRunFlags,
     .act = OciRun},
    {.name = "exec",
     .synopsis = "[OPTIONS] ID [COMMAND [ARG...]]",
     .what = "Run a new process in running container ID (the command, or --process FILE).",
     .flags = kExecFlags,
     .act = OciExec},
    {.name = "ps",
     .synopsis = "[--format table|json] ID [PS ARGS]",
     .what = "List the processes of container ID.",
     .flags = kFormatFlags,
     .act = OciPs},
    {.name = "pause",
     .synopsis = "ID",
     .what = "Freeze every process of container ID.",
     .act = OciPause},
    {.name = "resume",
     .synopsis = "ID",
     .what = "Thaw the processes of paused container ID.",
     .act = OciResume},
    {.name = "update",
     .synopsis = "[OPTIONS] ID",
     .what = "Change the resource limits of container ID.",
     .flags = kUpdateFlags,
     .act = OciUpdate},
    {.name = "events",
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
     .synopsis = "[--format table|json]",
     .what = "List the OCI containers under --root.",
     .flags = kFormatFlags,
     .act = OciList},
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
  auto r = Parse(*v, args);
  if (!r) return Refuse(r.error());
  if (r->help) {
    fputs(Usage(*v).c_str(), stdout);
    return 0;
  }
  r->root = global.root.empty() ? oci::kDefaultRoot : global.root;
  auto rc = v->act(*r);
  if (!rc) return Refuse(rc.error());
  return *rc;
}

}  // namespace brig::cli
