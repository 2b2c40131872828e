// `brig list`: the sandboxes running on this host, from their records (state/record.h): a
// record whose lock is held belongs to a live brig. Reads only; never takes a lock a live
// brig or `brig gc` would wait on.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli/cli.h"
#include "cli/flags.h"
#include "proto/brig.pb.h"
#include "state/record.h"
#include "util/proto_json.h"

namespace brig::cli {
namespace {

struct ListRequest {
  bool help = false;
  bool json = false;
};

struct Flag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(ListRequest&, const std::string&);
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--format", "table|json", "a table (the default), or one JSON array of objects",
       [](ListRequest& r, const std::string& v) -> Status {
         if (v != "table" && v != "json") return BadInput("--format", v, "expected table or json");
         r.json = v == "json";
         return {};
       }},
      {"--help", nullptr, "show this help",
       [](ListRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

std::string Usage() {
  std::ostringstream out;
  out << "Usage: brig list [--format table|json]\n\n"
         "List the sandboxes running on this host: their id, --name, profile, network\n"
         "posture, pid (brig init's, on the host) and when they started. brig exec takes\n"
         "the id or the name (brig exec NAME|ID -- CMD). A sandbox whose brig died is not\n"
         "listed; brig gc removes what it left.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: 0, or 125 on bad input or if the records cannot be read.\n";
  return out.str();
}

int32_t Pid(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  return static_cast<int32_t>(std::stol(s));
}

v1::ListedSandbox Listed(const state::LiveRecord& rec) {
  v1::ListedSandbox l;
  l.set_id(rec.id);
  for (const auto& e : rec.entries) {
    auto about = state::About(e);
    if (!about) continue;
    auto [key, view] = *about;
    std::string value(view);
    if (key == "name") l.set_name(value);
    if (key == "profile") l.set_profile(value);
    if (key == "posture") l.set_posture(value);
    if (key == "pid") l.set_pid(Pid(value));
    if (key == "brig_pid") l.set_brig_pid(Pid(value));
    if (key == "started") l.set_started(value);
  }
  return l;
}

// Columns as wide as their widest entry, as runc list's tabwriter makes them.
void PrintTable(const std::vector<v1::ListedSandbox>& all) {
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  int id_w = 2, name_w = 4, profile_w = 7;
  for (const auto& l : all) {
    id_w = std::max(id_w, static_cast<int>(l.id().size()));
    name_w = std::max(name_w, static_cast<int>(l.name().size()));
    profile_w = std::max(profile_w, static_cast<int>(l.profile().size()));
  }
  const char* row = "%-*s   %-*s   %-8s %-*s   %-12s %s\n";
  printf(row, id_w, "ID", name_w, "NAME", "PID", profile_w, "PROFILE", "POSTURE", "STARTED");
  for (const auto& l : all) {
    printf(row, id_w, l.id().c_str(), name_w, or_dash(l.name()).c_str(),
           l.pid() ? std::to_string(l.pid()).c_str() : "-", profile_w, or_dash(l.profile()).c_str(),
           or_dash(l.posture()).c_str(), or_dash(l.started()).c_str());
  }
}

Status PrintJson(const std::vector<v1::ListedSandbox>& all) {
  std::string out = "[";
  for (size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + util::ProtoJson(all[i]);
  printf("%s]\n", out.c_str());
  return {};
}

}  // namespace

int ListMain(const std::vector<std::string>& args) {
  ListRequest req;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto f = ApplyFlag(Flags(), args, i, req, "brig list"); !f) {
      fprintf(stderr, "brig: %s\n", f.error().Render().c_str());
      return kExitRefused;
    }
  }
  if (req.help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  auto live = state::ListLive(state::SandboxDir());
  if (!live) {
    fprintf(stderr, "brig: %s\n", live.error().Render().c_str());
    return kExitRefused;
  }
  std::vector<v1::ListedSandbox> all;
  for (const auto& rec : *live) all.push_back(Listed(rec));
  if (!req.json) {
    PrintTable(all);
    return 0;
  }
  if (auto s = PrintJson(all); !s) {
    fprintf(stderr, "brig: %s\n", s.error().Render().c_str());
    return kExitRefused;
  }
  return 0;
}

}  // namespace brig::cli
