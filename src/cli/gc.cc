// `brig gc`: removes what sandboxes whose brig is gone left on the host (state/record.h),
// and says what it removed. Live sandboxes are never touched: their records are locked.
#include <cstdio>
#include <sstream>

#include "cgroup/cgroup.h"
#include "fs/host_marks.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "net/network.h"
#include "state/record.h"

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
         "read-write workspaces, the scratch directories of --copy-dir, and the nftables\n"
         "rules, veth and address of those with a network interface. Prints one line per\n"
         "thing removed. Sandboxes that are still running are not touched. Run it in the\n"
         "network namespace the sandboxes ran in.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) UsageRow(out, std::string("  ") + f.name, f.help);
  out << "\nExit status: 0 if everything stale was removed, 1 if something could not be,\n"
         "125 on bad input.\n";
  return out.str();
}

Status Clean(const std::string& id, const std::vector<state::Entry>& entries) {
  for (const auto& e : entries) {
    if (e.kind != "cgroup" && e.kind != "net" && e.kind != fs::kPlaceholderKind &&
        e.kind != fs::kScratchKind) {
      return Fail("brig gc", id, "unknown resource kind '" + e.kind + "' in its record",
                  ErrorKind::kInternal);
    }
  }
  // Every entry is tried; the record stays if any of them could not be cleaned.
  std::optional<Error> failed;
  for (const auto& e : entries) {
    if (e.kind == "cgroup") {
      auto removed = cgroup::RemoveStale(id, e.value);
      if (removed && *removed) printf("removed cgroup %s\n", e.value.c_str());
      if (!removed && !failed) failed = std::move(removed).error().Wrap(id);
    } else if (e.kind == fs::kPlaceholderKind || e.kind == fs::kScratchKind) {
      auto removed = fs::RemoveStaleMark(e.kind, e.value);
      if (removed && *removed) {
        printf("removed %s %s (%s)\n", e.kind.c_str(),
               e.value.substr(e.value.find(":/") + 1).c_str(), id.c_str());
      }
      if (!removed && !failed) failed = std::move(removed).error().Wrap(id);
    } else {
      auto removed = net::RemoveStaleNet(id, e.value);
      if (removed) {
        for (const auto& what : *removed) printf("removed %s (%s)\n", what.c_str(), id.c_str());
      } else if (!failed) {
        failed = std::move(removed).error().Wrap(id);
      }
    }
  }
  if (failed) return std::move(*failed);
  return {};
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
  auto collected = state::CollectStale(state::kSandboxDir, Clean);
  if (!collected) {
    fprintf(stderr, "brig: %s\n", collected.error().Render().c_str());
    return kExitRefused;
  }
  for (const auto& e : collected->failed) fprintf(stderr, "brig: %s\n", e.Render().c_str());
  return collected->failed.empty() ? 0 : 1;
}

}  // namespace brig::cli
