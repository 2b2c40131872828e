// The command line: one file per verb, table-driven flags. Each verb prints its own one
// error line ("brig: ...") and returns its exit code (brig/exit.h).
#pragma once

#include <string>
#include <vector>

#include "brig/exit.h"
#include "brig/result.h"
#include <chrono>
#include <optional>

#include "config/profile.h"
#include "config/sandbox.h"

namespace brig::cli {

// What `brig run`'s flags say, before a profile is applied. Unset optionals leave the
// profile's value.
struct RunRequest {
  std::string profile = config::kDefaultProfile;
  std::string policy_dir;
  std::vector<std::string> argv;
  std::string workspace;
  std::string rootfs;
  std::vector<std::string> layers;  // --layer, bottom first
  std::string result_path;
  std::string audit_path;
  std::optional<config::WorkspaceMode> workspace_mode;
  std::string export_changes;
  std::string copy_dir;
  std::optional<std::chrono::milliseconds> timeout, grace;
  std::optional<uint64_t> tmp_size, disk_size, rlimit_nofile, rlimit_nproc, rlimit_core,
      output_limit;
  std::optional<uint64_t> memory, swap, pids, cpu_milli;
  std::string cgroup_parent;
  std::string subnet;
  std::vector<std::string> allow_hosts;  // --allow-host, added to the profile's allowlist
  std::string dns_upstream;              // --dns-upstream: instead of /etc/resolv.conf's
  // --broker NAME=SPEC, as given and as parsed, in order.
  std::vector<std::pair<std::string, v1::Broker>> brokers;
  uint32_t attempt = 1;  // --attempt
  std::vector<std::string> pass_env;
  std::vector<std::string> set_env;
  bool help = false;
};

// Parses `brig run` arguments (after the verb). Pure: no host access.
Result<RunRequest> ParseRunArgs(const std::vector<std::string>& args);
// Applies the profile and then the request's overrides, which may only change limits and
// paths; checks everything against the host (workspace owner, environment, policy files).
// Errors are bad input or policy refusals (125).
Result<config::Sandbox> ResolveRun(const RunRequest& req, char** host_environ);

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

}  // namespace brig::cli
