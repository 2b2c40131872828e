// `brig gc`: removes what sandboxes whose brig is gone left on the host (cli/reclaim.h),
// and says what it removed. Live sandboxes are never touched: their records are locked.
#include <cstdio>
#include <sstream>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/reclaim.h"

namespace brig::cli {
namespace {

struct GcRequest {
  bool help = false;
};

struct Flag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(GcRequest&, const std::string&);
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--help", nullptr, "show this help",
       [](GcRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

std::string Usage() {
  std::ostringstream out;
  out << "Usage: brig gc\n\n"
         "Remove what sandboxes left on the host when their brig died without cleaning up\n"
         "(SIGKILL, a crash): their cgroups, the placeholders at protected paths of\n"
         "read-write workspaces, the scratch directories of --copy-dir, half-written\n"
         "--export-changes directories and --result files, and the nftables rules, veth\n"
         "and address of those with a network interface. Prints one line per\n"
         "thing removed. Sandboxes that are still running are not touched. Run it in the\n"
         "network namespace the sandboxes ran in; the records of a network namespace that\n"
         "no longer exists are dropped, with brig's state directory of that namespace.\n"
         "Every brig run does the same quietly before it starts.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) UsageRow(out, std::string("  ") + f.name, f.help);
  out << "\nExit status: 0 if everything stale was removed, 1 if something could not be,\n"
         "125 on bad input.\n";
  return out.str();
}

}  // namespace

int GcMain(const std::vector<std::string>& args) {
  GcRequest req;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto f = ApplyFlag(Flags(), args, i, req, "brig gc"); !f) {
      fprintf(stderr, "brig: %s\n", f.error().Render().c_str());
      return kExitRefused;
    }
  }
  if (req.help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  auto reclaimed = Reclaim(ReclaimMode::kReport);
  if (!reclaimed) {
    fprintf(stderr, "brig: %s\n", reclaimed.error().Render().c_str());
    return kExitRefused;
  }
  for (const auto& line : reclaimed->removed) printf("removed %s\n", line.c_str());
  for (const auto& e : reclaimed->failed) fprintf(stderr, "brig: %s\n", e.Render().c_str());
  return reclaimed->failed.empty() ? 0 : 1;
}

}  // namespace brig::cli
