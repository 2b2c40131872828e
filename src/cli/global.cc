// The global options' table (runc's spelling and meaning).
#include "cli/global.h"

#include "cli/flags.h"

namespace brig::cli {
namespace {

struct GlobalFlag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(GlobalFlags&, const std::string&);
};

const std::vector<GlobalFlag>& Table() {
  static const std::vector<GlobalFlag> kFlags = {
      {"--debug", nullptr, "log debug lines too (brig init's among them)",
       [](GlobalFlags& g, const std::string&) -> Status {
         g.debug = true;
         return {};
       }},
      {"--log", "FILE", "append the log to FILE (a regular file) instead of stderr",
       [](GlobalFlags& g, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--log", "", "needs a file");
         g.log_path = v;
         return {};
       }},
      {"--log-format", "text|json", "the log's line shape, runc's (default text)",
       [](GlobalFlags& g, const std::string& v) -> Status {
         if (v == "text") {
           g.log_format = log::Format::kText;
         } else if (v == "json") {
           g.log_format = log::Format::kJson;
         } else {
           return BadInput("--log-format", v, "not text or json");
         }
         return {};
       }},
      {"--root", "DIR",
       "the OCI containers' state directory (default /run/brig/oci; without root\n"
       "$XDG_RUNTIME_DIR/brig/oci)",
       [](GlobalFlags& g, const std::string& v) -> Status {
         if (v.empty() || v[0] != '/') return BadInput("--root", v, "must be an absolute path");
         g.root = v;
         return {};
       }},
      {"--systemd-cgroup", nullptr,
       "cgroupsPath is 'slice:prefix:name': a systemd scope (where systemd is init)",
       [](GlobalFlags& g, const std::string&) -> Status {
         g.systemd_cgroup = true;
         return {};
       }},
      {"--rootless", "true|false|auto",
       "runc's, taken and not needed: brig tells by itself whether it has root",
       [](GlobalFlags&, const std::string& v) -> Status {
         if (v == "true" || v == "false" || v == "auto") return {};
         return BadInput("--rootless", v, "expected true, false or auto");
       }},
  };
  return kFlags;
}

bool IsGlobal(const std::string& a) {
  for (const GlobalFlag& f : Table()) {
    if (a == f.name || a.rfind(std::string(f.name) + "=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

Result<size_t> ParseGlobalFlags(const std::vector<std::string>& args, GlobalFlags& out) {
  size_t i = 0;
  for (; i < args.size() && IsGlobal(args[i]); ++i) {
    BRIG_TRY(ApplyFlag(Table(), args, i, out, std::string("brig")));
  }
  return i;
}

std::string GlobalUsage() {
  std::ostringstream out;
  for (const GlobalFlag& f : Table()) {
    std::string left = "  " + std::string(f.name);
    if (f.metavar) left += " " + std::string(f.metavar);
    UsageRow(out, left, f.help);
  }
  return out.str();
}

}  // namespace brig::cli
