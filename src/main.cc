// brig's entry point: the global options (runc's --debug, --log, --log-format), then the
// verb. Verbs print their own one-line errors and return the exit code of the output
// contract.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/global.h"
#include "container/init.h"
#include "oci/launch.h"
#include "log/log.h"

namespace {

// Whether `args` (a verb's, after the verb) ask only for its help: --help before any "--".
bool AsksHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help") return true;
  }
  return false;
}

// The verbs that act on the host as root, and why, for the one line a non-root caller
// gets before anything (a log file included) is created. `brig policy` reads files only,
// and works for anyone, so that a reviewer needs no root to read a policy.
const char* WhyRoot(const std::string& verb) {
  if (verb == "run") return "it creates namespaces, cgroups and nftables tables as root";
  if (verb == "check") return "its probes make namespaces, mounts and nftables tables as root";
  if (verb == "gc") return "it removes what sandboxes left in /run/brig, cgroups and nftables";
  if (verb == "list") return "it tells a live sandbox by the lock on its record in /run/brig";
  if (verb == "spec" || verb == "features") return nullptr;
  if (brig::cli::IsOciVerb(verb)) return "it makes and acts on containers as root";
  return nullptr;
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
  if (args[0] == "--version") {
    printf("brig %s\n", BRIG_VERSION);
    return 0;
  }
  if (const char* why = WhyRoot(args[0]);
      why && geteuid() != 0 && !AsksHelp({args.begin() + 1, args.end()})) {
    fprintf(stderr, "brig %s: brig needs root (%s; run it with sudo)\n", args[0].c_str(), why);
    return brig::kExitRefused;
  }
  std::vector<std::string> verb_args(args.begin() + 1, args.end());
  // `run` and `list` are the sandbox verbs but with --bundle and --root respectively.
  bool oci = args[0] == "run"    ? brig::cli::IsOciRun(verb_args)
             : args[0] == "list" ? !global.root.empty()
                                 : brig::cli::IsOciVerb(args[0]);
  // Before brig opens anything: --preserve-fds hands over only what brig was given.
  if (oci && std::any_of(verb_args.begin(), verb_args.end(), [](const std::string& a) {
        return a.rfind("--preserve-fds", 0) == 0 || a.rfind("-preserve-fds", 0) == 0;
      })) {
    brig::oci::RecordInheritedFds();
  }
  if (auto s = brig::log::Configure(global.debug, global.log_path, global.log_format); !s) {
    fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    return brig::kExitRefused;
  }
  if (oci || args[0] != "run") sigprocmask(SIG_SETMASK, &caller, nullptr);
  brig::log::Debug("brig ", BRIG_VERSION, ": ", args[0]);
  if (oci) return brig::cli::OciMain(args[0], global, verb_args);
  if (args[0] == "run") return brig::cli::RunMain({args.begin() + 1, args.end()});
  if (args[0] == "gc") return brig::cli::GcMain({args.begin() + 1, args.end()});
  if (args[0] == "list") return brig::cli::ListMain({args.begin() + 1, args.end()});
  if (args[0] == "check") return brig::cli::CheckMain({args.begin() + 1, args.end()});
  if (args[0] == "policy") return brig::cli::PolicyMain({args.begin() + 1, args.end()});
  fprintf(stderr, "brig: unknown command '%s' (see brig --help)\n", args[0].c_str());
  return brig::kExitRefused;
}
