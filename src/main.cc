// brig's entry point: the global options (runc's --debug, --log, --log-format), then the
// verb, looked up in cli's table of verbs. Verbs print their own one-line errors and return
// the exit code of the output contract.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/global.h"
#include "container/init.h"
#include "log/log.h"
#include "pod/supervisor.h"
#include "util/dirs.h"

namespace {

// Whether `args` (a verb's, after the verb) ask only for its help: --help before any "--".
bool AsksHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Held from the first instruction: a SIGTERM, SIGINT or SIGHUP that comes before `brig
  // run` watches for them (its Session's signalfd, which reads what is pending) must end
  // the run as one that comes later does, with its status and --result, never kill brig
  // half-way through its set-up or its reclaim of earlier runs. Every other verb gets the
  // caller's mask back at once, and what came meanwhile acts as it would have.
  sigset_t held, caller;
  sigemptyset(&held);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&held, s);
  sigprocmask(SIG_BLOCK, &held, &caller);
  // A caller's SIGCHLD left ignored would have the kernel reap brig's children before brig
  // waits for them (waitid: ECHILD), and brig waits for every process it starts.
  signal(SIGCHLD, SIG_DFL);
  // A pod's supervisor, which brig create starts as a fresh image of brig's.
  if (argc >= 1 && brig::pod::IsSupervisorImage(argv[0])) return brig::pod::SupervisorMain();
  brig::container::RecordProcessArgs(argc, argv);
  std::vector<std::string> all(argv + 1, argv + argc);
  brig::cli::GlobalFlags global;
  auto verb_at = brig::cli::ParseGlobalFlags(all, global);
  if (!verb_at) {
    fprintf(stderr, "brig: %s\n", verb_at.error().Render().c_str());
    return brig::kExitRefused;
  }
  std::vector<std::string> args(all.begin() + static_cast<long>(*verb_at), all.end());
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    fputs(brig::cli::MainUsage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? brig::kExitRefused : 0;
  }
  if (args[0] == "--version" || args[0] == "-v") {
    fputs(brig::cli::VersionText().c_str(), stdout);
    return 0;
  }
  std::vector<std::string> verb_args(args.begin() + 1, args.end());
  // Before the verb is chosen, which may look for a container under the default --root;
  // made nothing yet, and refused below only for a verb that keeps state.
  brig::Status dirs = brig::util::ChooseDirs(environ);
  const brig::cli::Verb* verb = brig::cli::FindVerb(args[0], global, verb_args);
  // A caller who is not root learns it before anything (a log file included) is created.
  if (verb && verb->why_root && geteuid() != 0 && !AsksHelp(verb_args)) {
    fprintf(stderr, "brig %s: brig needs root (%s; run it with sudo)\n", args[0].c_str(),
            verb->why_root);
    return verb->RefusedStatus();
  }
  if (verb && (verb->why_root || verb->rootless) && !AsksHelp(verb_args)) {
    if (!dirs) {
      fprintf(stderr, "brig %s: %s\n", args[0].c_str(), dirs.error().Render().c_str());
      return verb->RefusedStatus();
    }
  }
  if (verb) verb->BeforeOpening(verb_args);
  if (auto s = brig::log::Configure(global.debug, global.log_path, global.log_format); !s) {
    fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    return verb ? verb->RefusedStatus() : brig::kExitRefused;
  }
  if (!verb || !verb->holds_signals) sigprocmask(SIG_SETMASK, &caller, nullptr);
  brig::log::Debug("brig ", BRIG_VERSION, ": ", args[0]);
  if (!verb) {
    fprintf(stderr, "brig: unknown command '%s' (see brig --help)\n", args[0].c_str());
    return brig::kExitRefused;
  }
  return verb->Run(global, verb_args);
}
