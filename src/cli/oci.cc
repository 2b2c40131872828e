// The OCI runtime verbs with runc's command line (brig-oci(1)): create, start, state,
// kill, delete, run --bundle, exec, ps, pause, resume, update, events, spec, features, and
// list under --root. Their rows in the table of verbs (cli/verbs.cc) list the flags each
// takes; this parses them, prints a verb's --help and runs its action. Errors are printed
// once, on stderr and in the --log file (containerd reads the last JSON line's msg), as
// one line.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "cgroup/systemd.h"
#include "cli/flags.h"
#include "cli/oci.h"
#include "container/command.h"
#include "log/log.h"
#include "oci/container.h"
#include "oci/dry_run.h"
#include "oci/process.h"
#include "oci/spec.h"
#include "oci/state.h"
#include "security/sandbox_ids.h"
#include "supervise/attend.h"
#include "sys/child.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

// Every OCI verb's last option.
constexpr OciFlag kHelp = {"--help", nullptr, "show this help",
                           [](OciRequest& r, const std::string&) -> Status {
                             r.help = true;
                             return {};
                           }};

// runc's short spellings, and its single-dash long ones (urfave/cli takes -bundle).
std::string Canonical(const std::string& verb, const std::string& a) {
  static const std::pair<const char*, const char*> kShort[] = {
      {"-b", "--bundle"}, {"-d", "--detach"},          {"-a", "--all"}, {"-r", "--resources"},
      {"-h", "--help"},   {"-p", "--process"},         {"-t", "--tty"}, {"-e", "--env"},
      {"-u", "--user"},   {"-g", "--additional-gids"}, {"-c", "--cap"}, {"-q", "--quiet"}};
  if (a == "-f") return verb == "ps" ? "--format" : "--force";
  for (const auto& [s, l] : kShort) {
    if (a == s) return l;
  }
  if (a.size() > 2 && a[0] == '-' && a[1] != '-') return "-" + a;
  return a;
}

// The flags `verb` takes, --help last.
std::vector<OciFlag> FlagsOf(const Verb& verb) {
  std::vector<OciFlag> flags;
  for (const OciFlag* f : verb.flags) flags.push_back(*f);
  flags.push_back(kHelp);
  return flags;
}

Result<OciRequest> Parse(const Verb& verb, const std::vector<std::string>& args) {
  std::vector<OciFlag> table = FlagsOf(verb);
  std::string name = verb.name;
  OciRequest r;
  // Flags in runc's spellings become the table's; their values stay as given. As runc's,
  // a verb's flags may also come after its id, except exec's and ps's: after the id come
  // exec's command and ps(1)'s own options.
  const bool after_id = name != "exec" && name != "ps";
  std::vector<std::string> canon = args;
  size_t i = 0;
  for (; i < canon.size(); ++i) {
    if (canon[i] == "--") {
      ++i;
      break;
    }
    if (canon[i].size() < 2 || canon[i][0] != '-') {
      if (!after_id) break;
      r.positional.push_back(canon[i]);
      continue;
    }
    canon[i] = Canonical(name, canon[i]);
    BRIG_TRY(ApplyFlag(table, canon, i, r, "brig " + name));
  }
  r.positional.insert(r.positional.end(), args.begin() + static_cast<ptrdiff_t>(i), args.end());
  return r;
}

std::string Usage(const Verb& verb) {
  std::ostringstream out;
  out << "Usage: brig [GLOBAL OPTIONS] " << verb.name << " " << verb.synopsis << "\n\n"
      << verb.what << "\n\nOptions:\n";
  for (const OciFlag& f : FlagsOf(verb)) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nSee brig-oci(1).\n";
  return out.str();
}

// Says what failed, on stderr and in the log.
void Say(const Error& e) {
  std::string line = e.Render();
  fprintf(stderr, "brig: %s\n", line.c_str());
  log::Mirror(log::Level::kError, line);
}

int Refuse(const Error& e, const Verb& verb) {
  Say(e);
  return verb.RefusedStatus();
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
    out += std::string(i ? "," : "") + "{\"ociVersion\":\"" + oci::kSpecVersion + "\",\"id\":\"" +
           log::JsonEscape(c.id) + "\",\"pid\":" + std::to_string(c.pid) + ",\"status\":\"" +
           std::string(oci::StatusName(c.status)) + "\",\"bundle\":\"" + log::JsonEscape(c.bundle) +
           "\",\"rootfs\":\"" + log::JsonEscape(c.rootfs) + "\",\"created\":\"" +
           log::JsonEscape(c.created) + "\",\"owner\":\"root\"}";
  }
  return out + "]\n";
}

// ps(1)'s output; an error if it fails.
Result<std::string> RunPs(const std::vector<std::string>& argv) {
  sys::FdPair table = BRIG_TRY(sys::FdPair::Pipe(true, "ps"));
  std::vector<char*> args = container::ExecArray(argv);
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "ps");
  if (pid == 0) {
    dup2(table.TakeChildEnd().get(), 1);
    execvp("ps", args.data());
    _exit(127);
  }
  table.TakeChildEnd().Reset();
  sys::UniqueFd read_end = table.TakeParentEnd();
  std::string out;
  int status = sys::ReadAllAndReap(read_end.get(), pid, out);
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

// create and run: the container from its bundle, under --root.
Status PrepareCreate(OciRequest& r, const std::string& verb) {
  if (util::Rootless()) {
    // As brig run's: brig's own user namespace, mapping the caller's ids (and those
    // /etc/subuid grants it) to themselves, where the container's are mapped from.
    std::string warning;
    BRIG_TRY(security::EnterCallersNamespace(&warning));
    if (!warning.empty()) log::Warn(warning);
  }
  r.create.root = r.root;
  r.create.id = BRIG_TRY(OneId(verb, r));
  return MakeBundleAbsolute(r.create);
}

// run's start: a container that cannot start is deleted.
Status StartOrDelete(const OciRequest& r) {
  if (auto s = oci::Start(r.root, r.create.id); !s) {
    (void)oci::Delete(r.root, r.create.id, true);
    return std::move(s).error();
  }
  return {};
}

// --dry-run: what create would make, made nothing of.
Result<int> PrintPlan(const OciRequest& r) {
  fputs(BRIG_TRY(oci::DryRun(r.create)).c_str(), stdout);
  return 0;
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

}  // namespace

Result<int> OciCreate(OciRequest& r) {
  BRIG_TRY(PrepareCreate(r, "create"));
  if (r.dry_run) return PrintPlan(r);
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
  // Signal 0 sends nothing and says whether the process is there (kill(2)), as runc's
  // kill takes it.
  int sig = r.positional.size() < 2  ? SIGTERM
            : r.positional[1] == "0" ? 0
                                     : BRIG_TRY(oci::ParseSignal(r.positional[1]));
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
  if (r.dry_run) return PrintPlan(r);
  if (r.detach) {
    BRIG_TRY(oci::Create(r.create));
    BRIG_TRY(StartOrDelete(r));
    return 0;
  }
  // In the foreground, brig stays the container's parent (a subreaper, so that a process
  // forked into a new pid namespace comes back to it) and waits for it as runc does
  // (oci::AttendProcess); without --console-socket, a terminal's master comes to brig over
  // a socket pair of its own, and none comes without one.
  supervise::HeldSignals signals = BRIG_TRY(supervise::HeldSignals::Hold(supervise::kPassedOn));
  BRIG_TRY(sys::BecomeSubreaper());
  sys::UniqueFd relay, relay_child;
  if (r.create.console_socket.empty()) {
    sys::FdPair pair = BRIG_TRY(sys::FdPair::SocketPair(SOCK_STREAM, "terminal"));
    relay = pair.TakeParentEnd();
    relay_child = pair.TakeChildEnd();
    r.create.console_fd = relay_child.get();
  }
  pid_t pid = BRIG_TRY(oci::Create(r.create));
  relay_child.Reset();
  sys::Child process(pid, BRIG_TRY(sys::PidfdOpen(pid, "the container's process")));
  BRIG_TRY(StartOrDelete(r));
  Result<int> code = oci::AttendProcess(process, relay.get(), signals);
  if (!r.keep) {
    if (auto s = oci::Delete(r.root, r.create.id, true); !s) Say(s.error());
  }
  return code;
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

// runc's `events` (oci::Events).
Result<int> OciEvents(OciRequest& r) {
  std::string id = BRIG_TRY(OneId("events", r));
  BRIG_TRY(oci::Events(r.root, id, r.interval, r.stats, [](const std::string& line) {
    printf("%s\n", line.c_str());
    fflush(stdout);
  }));
  return 0;
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
  if (r.quiet) {
    for (const auto& c : all) printf("%s\n", c.id.c_str());
    return 0;
  }
  fputs((r.json ? ListJson(all) : ListTable(all)).c_str(), stdout);
  return 0;
}

int OciMain(const Verb& verb, const GlobalFlags& global, const std::vector<std::string>& args) {
  if (global.systemd_cgroup && !cgroup::systemd::Booted()) {
    return Refuse(BadInput("--systemd-cgroup", "",
                           "this host's init is not systemd (no /run/systemd/system); give "
                           "cgroupsPath as a path (the cgroupfs driver)"),
                  verb);
  }
  auto r = Parse(verb, args);
  if (!r) return Refuse(r.error(), verb);
  if (r->help) {
    fputs(Usage(verb).c_str(), stdout);
    return 0;
  }
  r->root = global.root.empty() ? oci::DefaultRoot() : global.root;
  r->create.systemd_cgroup = global.systemd_cgroup;
  auto rc = verb.act(*r);
  if (!rc) return Refuse(rc.error(), verb);
  return *rc;
}

}  // namespace brig::cli
