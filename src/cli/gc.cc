// `brig gc`: removes what sandboxes whose brig is gone left on the host (cli/reclaim.h),
// and says what it removed. Live sandboxes are never touched: their records are locked.
#include <cstdio>
#include <sstream>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/reclaim.h"
#include "state/record.h"

namespace brig::cli {
namespace {

struct GcRequest {
  bool help = false;
  std::string id;  // only this sandbox's residue; empty: every dead sandbox's
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
  out << "Usage: brig gc [ID]\n\n"
         "Remove what sandboxes left on the host when their brig died without cleaning up\n"
         "(SIGKILL, a crash): their cgroups, the placeholders at protected paths of\n"
         "read-write workspaces, the scratch directories of --copy-dir, half-written\n"
         "--export-changes directories and --result files, and the nftables rules, veth\n"
         "and address of those with a network interface. Prints one line per\n"
         "thing removed. Sandboxes that are still running are not touched. Run it in the\n"
         "network namespace the sandboxes ran in; the records of a network namespace that\n"
         "no longer exists are dropped, with brig's state directory of that namespace.\n"
         "Every brig run does the same quietly before it starts.\n\n"
         "With an ID (as brig list and the result's sandbox_id name it), only that\n"
         "sandbox's residue is removed; a sandbox that is still running, or an ID with no\n"
         "record, is refused.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) UsageRow(out, std::string("  ") + f.name, f.help);
  out << "\nExit status: 0 if everything stale was removed, 1 if something could not be,\n"
         "125 on bad input.\n";
  return out.str();
}

Status ParseGc(const std::vector<std::string>& args, GcRequest& req) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].empty() || args[i][0] != '-') {
      if (!req.id.empty()) return BadInput("brig gc", args[i], "takes at most one ID");
      req.id = args[i];
      continue;
    }
    BRIG_TRY(ApplyFlag(Flags(), args, i, req, "brig gc"));
  }
  return {};
}

// brig gc ID: the record must be there and its brig gone.
Status CheckOne(const std::string& id) {
  if (id.find('/') != std::string::npos || id[0] == '.' || id.size() > 255) {
    return BadInput("brig gc", id, "not a sandbox id");
  }
  switch (BRIG_TRY(state::StateOf(state::SandboxDir(), id))) {
    case state::RecordState::kMissing:
      return BadInput("brig gc", id,
                      std::string("no such sandbox (no record in ") + state::SandboxDir() + ")");
    case state::RecordState::kLive:
      return BadInput("brig gc", id,
                      "still running (its brig holds its record); stop that brig first");
    case state::RecordState::kStale:
      break;
  }
  return {};
}

}  // namespace

int GcMain(const std::vector<std::string>& args) {
  GcRequest req;
  if (auto s = ParseGc(args, req); !s) {
    fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    return kExitRefused;
  }
  if (req.help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (!req.id.empty()) {
    if (auto s = CheckOne(req.id); !s) {
      fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
      return kExitRefused;
    }
  }
  auto reclaimed = Reclaim(ReclaimMode::kReport, req.id);
  if (!reclaimed) {
    fprintf(stderr, "brig: %s\n", reclaimed.error().Render().c_str());
    return kExitRefused;
  }
  for (const auto& line : reclaimed->removed) printf("removed %s\n", line.c_str());
  for (const auto& e : reclaimed->failed) fprintf(stderr, "brig: %s\n", e.Render().c_str());
  return reclaimed->failed.empty() ? 0 : 1;
}

}  // namespace brig::cli
