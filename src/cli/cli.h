// The command line: one file per verb, table-driven flags. Each verb prints its own one
// error line ("brig: ...") and returns its exit code (brig/exit.h).
#pragma once

#include <string>
#include <vector>

#include "brig/exit.h"
#include "brig/result.h"
#include "cli/global.h"
#include "config/overrides.h"
#include "config/sandbox.h"

namespace brig::cli {

// What `brig run`'s flags say: the run's overrides of its profile (config/overrides.h),
// the names --pass-env takes from brig's environment (PlanRun looks them up), or a
// request for help.
struct RunRequest : config::Overrides {
  std::vector<std::string> pass_env;
  std::vector<std::string> env_files;  // --env-file, read by PlanRun
  bool help = false;
};

// Parses `brig run` arguments (after the verb). Pure: no host access.
Result<RunRequest> ParseRunArgs(const std::vector<std::string>& args);
// The plan of one run: the profile loaded, the request resolved against it
// (config::Resolve, pure) with what brig takes from its own environment (`host_environ`:
// --pass-env's values) and the sandbox's new id, then completed from the host
// (config::ProbeHost). Errors are bad input or policy refusals (125).
Result<config::Sandbox> PlanRun(const RunRequest& req, char** host_environ);

std::string RunUsage();
std::string MainUsage();

int RunMain(const std::vector<std::string>& args);
// `brig policy`: list, show, check, explain, export and diff policies, and show the masked
// kernel paths (cli/policy.cc).
int PolicyMain(const std::vector<std::string>& args);
// `brig check`: what this host offers brig (cli/check.cc).
int CheckMain(const std::vector<std::string>& args);
// `brig gc`: removes what dead sandboxes left behind (cli/gc.cc).
int GcMain(const std::vector<std::string>& args);
// `brig list`: the running sandboxes (cli/list.cc).
int ListMain(const std::vector<std::string>& args);
// The OCI runtime verbs with runc's command line (cli/oci.cc): `verb` is one that
// IsOciVerb names; of the global options, --root (empty: /run/brig/oci) and
// --systemd-cgroup (refused) are theirs.
bool IsOciVerb(const std::string& verb);
// Whether `brig run ARGS` is the OCI verb: it names a bundle (--bundle, -b) before "--".
bool IsOciRun(const std::vector<std::string>& args);
int OciMain(const std::string& verb, const GlobalFlags& global,
            const std::vector<std::string>& args);

}  // namespace brig::cli
