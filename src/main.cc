// brig's entry point: the global options (runc's --debug, --log, --log-format), then the
// verb. Verbs print their own one-line errors and return the exit code of the output
// contract.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/global.h"
#include "container/init.h"
#include "log/log.h"

int main(int argc, char** argv) {
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
  if (auto s = brig::log::Configure(global.debug, global.log_path, global.log_format); !s) {
    fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    return brig::kExitRefused;
  }
  brig::log::Debug("brig ", BRIG_VERSION, ": ", args[0]);
  if (args[0] == "run") return brig::cli::RunMain({args.begin() + 1, args.end()});
  if (args[0] == "gc") return brig::cli::GcMain({args.begin() + 1, args.end()});
  if (args[0] == "list") return brig::cli::ListMain({args.begin() + 1, args.end()});
  if (args[0] == "check") return brig::cli::CheckMain({args.begin() + 1, args.end()});
  if (args[0] == "policy") return brig::cli::PolicyMain({args.begin() + 1, args.end()});
  fprintf(stderr, "brig: unknown command '%s' (see brig --help)\n", args[0].c_str());
  return brig::kExitRefused;
}
