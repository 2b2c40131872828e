// brig's entry point: dispatches the verb. Verbs print their own one-line errors and
// return the exit code of the output contract.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "container/init.h"

int main(int argc, char** argv) {
  brig::container::RecordProcessArgs(argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    fputs(brig::cli::MainUsage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? brig::kExitRefused : 0;
  }
  if (args[0] == "--version") {
    printf("brig %s\n", BRIG_VERSION);
    return 0;
  }
  if (args[0] == "run") return brig::cli::RunMain({args.begin() + 1, args.end()});
  if (args[0] == "gc") return brig::cli::GcMain({args.begin() + 1, args.end()});
  if (args[0] == "check") return brig::cli::CheckMain({args.begin() + 1, args.end()});
  if (args[0] == "policy") return brig::cli::PolicyMain({args.begin() + 1, args.end()});
  fprintf(stderr, "brig: unknown command '%s' (see brig --help)\n", args[0].c_str());
  return brig::kExitRefused;
}
