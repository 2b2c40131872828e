// What one run asks of its profile (design.md, Invariant 2): the command, the paths, the
// resource knobs, hosts for an allowlist and brokers. A front end fills it (cli/run_flags.cc
// parses `brig run`'s flags into it) and config::Resolve (resolve.h) lays it over the
// profile. Plain data: every value here was taken from the host by the front end, so that
// Resolve reads nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "egress/upstream.h"
#include "fs/spec.h"
#include "net/link.h"
#include "proto/brig.pb.h"

namespace brig::config {

inline constexpr const char* kDefaultProfile = "untrusted-code-read";

// Unset optionals and empty strings leave the profile's value (or brig's default).
struct Overrides {
  // The sandbox's id, named by the front end (`brig run`: "brig-" + 12 hex digits, or
  // "brig-" + NAME + "-" + 12 hex digits with --name).
  std::string id;
  std::string name;  // --name: the harness's name for the run; empty: none
  // --chdir: the working directory, relative to the workspace ("" its top).
  std::optional<std::string> chdir;
  // --mount NAME=PATH: sources of the profile's per-run mounts, in order.
  std::vector<std::pair<std::string, std::string>> mounts;
  // --ro-bind SRC DST: host directories mounted read-only inside, in order.
  std::vector<std::pair<std::string, std::string>> ro_binds;
  std::string profile = kDefaultProfile;  // its name or path, as given, for messages
  // Where profiles and policies are found; the front end fills in the installed one
  // (profile.h, ResolvePolicyDir) when none is given.
  std::string policy_dir;
  std::vector<std::string> argv;
  std::string workspace;
  std::string rootfs;
  std::vector<std::string> layers;  // --layer, bottom first
  std::string result_path;
  std::string audit_path;
  std::string manifest_path;  // --manifest FILE
  bool dry_run = false;       // --dry-run
  std::optional<fs::WorkspaceMode> workspace_mode;
  std::string export_changes;
  std::string export_owner;  // --export-owner USER[:GROUP], as given
  std::string copy_dir;
  std::optional<std::chrono::milliseconds> timeout, grace;
  std::optional<uint64_t> tmp_size, disk_size, rlimit_nofile, rlimit_nproc, rlimit_core,
      output_limit, egress_budget;
  std::optional<uint64_t> memory, swap, pids, cpu_milli;
  // --memory none, --pids none, --cpus none: the profile's limit is not wanted.
  bool no_memory = false, no_pids = false, no_cpu = false;
  std::string cgroup_parent;
  std::optional<net::Subnet> subnet;
  std::vector<std::string> allow_hosts;          // added to the profile's allowlist
  std::optional<egress::Upstream> dns_upstream;  // instead of /etc/resolv.conf's
  // --broker NAME=SPEC, as given and as parsed, in order.
  std::vector<std::pair<std::string, v1::Broker>> brokers;
  uint32_t attempt = 1;
  bool wait_all = false;  // --wait-all
  // --tty (true) or --no-tty (false); unset: a terminal only for a job of an interactive
  // shell (supervise::TerminalMode::kAuto).
  std::optional<bool> tty;
  // --deny stop|continue: whether the phase ends at its first egress refusal; unset: the
  // profile's network.on_deny.
  std::optional<bool> deny_stop;
  // The sandbox's environment beyond brig's few defaults, built from nothing (design.md,
  // Invariant 3): "K=V" that the front end took from its own environment (--pass-env),
  // then "K=V" set explicitly (--env-file's, then --env's), which win.
  std::vector<std::string> passed_env;
  std::vector<std::string> set_env;
};

}  // namespace brig::config
