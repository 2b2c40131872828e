// `brig exec NAME|ID -- CMD`: a command in a running `brig run` sandbox (brig-exec(1),
// container/sandbox_exec.h). brig's own verb when its argument names a live sandbox
// (cli/verbs.cc chooses); otherwise `brig exec` is the OCI verb (brig-oci(1)).
#include <cstdio>
#include <sstream>

#include "cli/cli.h"
#include "cli/flags.h"
#include "config/resolve.h"
#include "container/sandbox_exec.h"
#include "util/parse.h"

extern char** environ;

namespace brig::cli {
namespace {

struct ExecRequest {
  container::SandboxExec exec;
  config::Overrides env;  // passed_env and set_env, for config::BuildEnv
  bool help = false;
};

struct Flag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(ExecRequest&, const std::string&);
};

Status AddEnv(ExecRequest& r, const std::string& v) {
  size_t eq = v.find('=');
  if (!util::IsEnvName(v.substr(0, eq))) {
    return BadInput("--env", v, "expected NAME or NAME=VALUE with NAME of [A-Za-z0-9_]");
  }
  if (eq != std::string::npos) {
    r.env.set_env.push_back(v);
  } else if (auto value = util::EnvLookup(environ, v)) {
    r.env.passed_env.push_back(v + "=" + std::string(*value));
  }
  return {};
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--env", "NAME[=VALUE]",
       "set NAME to VALUE, or to brig's own value of NAME if it has one (repeatable); "
       "nothing else of brig's environment enters",
       AddEnv},
      {"--cwd", "DIR",
       "the working directory, an absolute path inside the sandbox (default: "
       "the workload's)",
       [](ExecRequest& r, const std::string& v) -> Status {
         if (v.empty() || v[0] != '/') return BadInput("--cwd", v, "not an absolute path");
         r.exec.cwd = v;
         return {};
       }},
      {"--tty", nullptr, "a terminal of its own (brig's stdin must be a terminal); -t",
       [](ExecRequest& r, const std::string&) -> Status {
         r.exec.tty = true;
         return {};
       }},
      {"--help", nullptr, "show this help",
       [](ExecRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

std::string Usage() {
  std::ostringstream out;
  out << "Usage: brig exec [--env NAME[=VALUE]]... [--cwd DIR] [--tty] NAME|ID -- CMD [ARG...]\n\n"
         "Run CMD in the running sandbox NAME|ID: its id or its --name, as brig list shows\n"
         "them. CMD joins the sandbox's namespaces and cgroups as the sandbox user, with no\n"
         "capability, under the workload's seccomp filter and rlimits, in an environment\n"
         "built from nothing; the sandbox's audit log records it. An id that is no running\n"
         "sandbox's but an OCI container's, or any under the global --root, makes brig exec\n"
         "ID runc's (see brig-oci(1)).\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    UsageRow(out, std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""),
             f.help);
  }
  out << "\nExit status: CMD's own (128+N if it died of signal N), 126 or 127 if it could\n"
         "not be run, 125 if brig failed or refused (no such running sandbox).\n";
  return out.str();
}

Result<ExecRequest> Parse(const std::vector<std::string>& args) {
  ExecRequest r;
  std::vector<std::string> canon = args;
  size_t i = 0;
  for (; i < canon.size() && canon[i].size() > 1 && canon[i][0] == '-' && canon[i] != "--"; ++i) {
    if (canon[i] == "-t") canon[i] = "--tty";
    BRIG_TRY(ApplyFlag(Flags(), canon, i, r, "brig exec"));
  }
  if (r.help) return r;
  if (i == canon.size() || canon[i] == "--") {
    return BadInput("brig exec", "", "needs a sandbox's name or id (see brig exec --help)");
  }
  r.exec.target = canon[i++];
  if (i == canon.size() || canon[i] != "--") {
    return BadInput("brig exec", r.exec.target, "expected -- and the command after it");
  }
  r.exec.argv.assign(canon.begin() + static_cast<ptrdiff_t>(i) + 1, canon.end());
  if (r.exec.argv.empty()) return BadInput("brig exec", r.exec.target, "no command after --");
  r.exec.env = config::BuildEnv(r.env);
  return r;
}

}  // namespace

int ExecMain(const std::vector<std::string>& args) {
  auto r = Parse(args);
  if (r && r->help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  Result<int> code = r ? container::ExecInSandbox(r->exec) : Result<int>(std::move(r).error());
  if (!code) {
    fprintf(stderr, "brig: %s\n", code.error().Render().c_str());
    return ExitCode(code.error().kind);
  }
  return *code;
}

}  // namespace brig::cli
