// The command line: one file per verb, table-driven flags. Each verb prints its own one
// error line ("brig: ...") and returns its exit code (brig/exit.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "brig/exit.h"
#include "brig/result.h"
#include "cli/global.h"
#include "config/overrides.h"
#include "config/sandbox.h"

namespace brig::cli {

// What `brig run`'s flags say: the run's overrides of its profile (config/overrides.h),
// the names --pass-env takes from brig's environment (PlanRun looks them up), or a
// request for help.
struct RunRequest : config::Overrides {
  std::vector<std::string> pass_env;
  std::vector<std::string> env_files;  // --env-file, read by PlanRun
  bool help = false;
};

// Parses `brig run` arguments (after the verb). Pure: no host access.
Result<RunRequest> ParseRunArgs(const std::vector<std::string>& args);
// The plan of one run: the profile loaded, the request resolved against it
// (config::Resolve, pure) with what brig takes from its own environment (`host_environ`:
// --pass-env's values) and the sandbox's new id, then completed from the host
// (config::ProbeHost). Errors are bad input or policy refusals (125).
Result<config::Sandbox> PlanRun(const RunRequest& req, char** host_environ);

std::string RunUsage();
std::string MainUsage();
// brig --version's (and -v's): brig's version, the runtime spec's it implements and
// libseccomp's, one "name: value" line each after the first, as runc prints them.
std::string VersionText();

int RunMain(const std::vector<std::string>& args);
// `brig policy`: list, show, check, explain, export and diff policies, and show the masked
// kernel paths (cli/policy.cc).
int PolicyMain(const std::vector<std::string>& args);
// `brig check`: what this host offers brig (cli/check.cc).
int CheckMain(const std::vector<std::string>& args);
// `brig gc`: removes what dead sandboxes left behind (cli/gc.cc).
int GcMain(const std::vector<std::string>& args);
// `brig list`: the running sandboxes (cli/list.cc).
int ListMain(const std::vector<std::string>& args);
// `brig exec NAME|ID -- CMD`: a command in a running sandbox (cli/exec.cc).
int ExecMain(const std::vector<std::string>& args);

struct OciFlag;     // cli/oci.h
struct OciRequest;  // cli/oci.h

// One verb of brig's command line, a row of the table main looks a verb up in
// (cli/verbs.cc): brig's own verbs, each of which parses its arguments itself, and the OCI
// runtime verbs, which share runc's command line (cli/oci.cc, brig-oci(1)).
struct Verb {
  const char* name;
  // Why the verb acts as root, for the one line a caller who is not root gets before
  // anything (a log file included) is created; nullptr: anyone may run it.
  const char* why_root = nullptr;
  // Whether an ordinary user may run it (why_root is then nullptr), with its state and
  // caches under the user's own directories (util/dirs.h) and what root alone can make
  // left out.
  bool rootless = false;
  // For a name that brig's own verb and an OCI verb share: whether `brig NAME ARGS`, under
  // these global options, is this row's verb. nullptr: the name's row for every other call.
  bool (*chosen)(const GlobalFlags& global, const std::vector<std::string>& args) = nullptr;
  // Whether SIGTERM, SIGINT and SIGHUP stay blocked, as they are from main's first
  // instruction, for the verb to read them from a signalfd (brig run's Session); every
  // other verb gets the caller's mask back before it starts.
  bool holds_signals = false;
  // brig's own verb: its main, given the arguments after the verb.
  int (*main)(const std::vector<std::string>& args) = nullptr;
  // An OCI verb: its --help's synopsis (after "brig [GLOBAL OPTIONS] NAME ") and sentence,
  // the flags it takes besides --help, in --help's order, and its action once they are
  // parsed.
  const char* synopsis = nullptr;
  const char* what = nullptr;
  std::span<const OciFlag* const> flags;
  Result<int> (*act)(OciRequest& request) = nullptr;

  // Before brig opens anything: a verb given --preserve-fds notes the fds brig was started
  // with, so that it hands over only those (oci::RecordInheritedFds).
  void BeforeOpening(const std::vector<std::string>& args) const;
  // Runs the verb on the arguments after it; it prints its own errors and returns the exit
  // code of the output contract.
  int Run(const GlobalFlags& global, const std::vector<std::string>& args) const;
  // The exit status of a refusal before the verb has run or of the verb's own failure:
  // brig's verbs' 125; an OCI verb's is runc's, 1, and exec's 255 (its success is its
  // process's status).
  int RefusedStatus() const;
};

// The row `brig NAME ARGS` runs under `global`, or nullptr if no verb has that name.
const Verb* FindVerb(const std::string& name, const GlobalFlags& global,
                     const std::vector<std::string>& args);
// Every row of the table: brig's own verbs, then the OCI verbs.
std::span<const Verb> Verbs();

}  // namespace brig::cli
