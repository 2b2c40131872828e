// The plan of one sandbox: everything the launcher, init and supervisor need, as typed
// values. config::Resolve (resolve.h) makes it from a profile and a run's overrides, with
// paths as given; config::ProbeHost (probe.h) then completes it from the host (canonical
// paths, the workspace's owner, header values and addresses, the cgroup layout). Plain
// data; nothing is created before both have passed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/spec.h"
#include "cgroup/cgroup.h"
#include "egress/policy.h"
#include "fs/spec.h"
#include "net/link.h"
#include "security/limits.h"
#include "supervise/stdio.h"
#include "supervise/terminal_filter.h"

namespace brig::config {

// Inside the sandbox the workload always runs as this uid/gid ("sandbox").
inline constexpr uid_t kSandboxUid = 1000;
inline constexpr gid_t kSandboxGid = 1000;
// Host id used when the workspace owner cannot be (root) or there is no workspace.
inline constexpr uid_t kOverflowHostId = 65534;

struct Sandbox {
  std::string id;                 // "brig-" [+ --name + "-"] + 12 hex digits
  std::string name;               // --name: the harness's name for the run, or empty
  std::string profile;            // the profile's name or path, for messages
  std::string posture_name;       // "none", "allowlist"..., "unconfined": for brig list
  bool isolated = true;           // false only for an ISOLATION_NONE profile
  std::vector<std::string> argv;  // the command, argv[0] resolved inside the sandbox
  std::vector<std::string> env;   // "K=V", built from nothing (design.md, Invariant 3)
  // --chdir: relative to the workspace ("" its top); checked by the probe.
  std::string chdir;
  // Where the command starts: /workspace[/chdir] inside; without isolation the workspace's
  // own path (the probe), or "" (brig's own working directory) without one.
  std::string workdir;

  // The root, the workspace and what is done with them (fs/spec.h).
  fs::Spec fs;
  // Bytes of each of stdout and stderr relayed to the caller; unset: no bound.
  std::optional<uint64_t> output_limit;
  // How the caller's terminal decodes, from brig's own locale (the probe): which bytes its
  // filter takes for C1 controls.
  supervise::TerminalCodeset terminal_codeset = supervise::TerminalCodeset::kUnknown;
  // Whether the workload gets a terminal of its own (--tty, --no-tty).
  supervise::TerminalMode terminal = supervise::TerminalMode::kAuto;
  // Bytes brig may send upstream through the proxy and the brokers over the whole phase
  // (egress/budget.h); unset: no bound.
  std::optional<uint64_t> egress_budget;

  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds grace{0};
  // The phase ends when every process of the sandbox has exited, not when the command does
  // (--wait-all): brig init then kills nothing the command left running.
  bool wait_all = false;
  security::Rlimits rlimits;
  security::UserCounts user_counts;
  cgroup::Limits limits;
  std::string cgroup_parent;  // empty: the group brig runs in, per hierarchy
  // The host's cgroups and the path each controller takes (the probe; limits fitted to
  // them).
  cgroup::Layout cgroup_layout;
  cgroup::Plan cgroup_plan;
  // Postures allowlist and open: an interface on brig's bridge, in this subnet. Unset:
  // loopback only (none, broker-only).
  std::optional<net::Subnet> network;
  // With an interface: what its resolver and proxy allow.
  egress::Policy egress;
  // --deny stop (network.on_deny): the first refusal of a name or connection ends the
  // phase (exit 123, error_code egress_denied).
  bool deny_stop = false;
  // The profile's brokers, then --broker's (any posture); the probe reads their header
  // values and finds their targets.
  std::vector<broker::Config> brokers;
  // Per broker, the --broker SPEC it came from; empty for the profile's. For messages.
  std::vector<std::string> broker_specs;
  // --attempt: with the id, the attribution brokers set ("<id>/<attempt>").
  uint32_t attempt = 1;

  v1::NetworkPosture posture = v1::POSTURE_NONE;
  // The profile as loaded, its defaults filled in, the file it was read from and its text:
  // for the manifest (which gives the text's sha256).
  v1::Profile loaded_profile;
  std::string profile_path, profile_text;

  std::string seccomp_policy;       // path of the policy file
  std::string seccomp_policy_name;  // as the profile names it, for messages
  std::string result_path;
  std::string audit_path;
  std::string manifest_path;  // --manifest: where the manifest goes
  std::string export_owner;   // --export-owner, as given (the probe fills fs.export_owner)
  bool dry_run = false;       // --dry-run: plan and print the manifest, make nothing

  // Host ids the sandbox uid/gid map to: the workspace's owner, never 0.
  uid_t host_uid = kOverflowHostId;
  gid_t host_gid = kOverflowHostId;
};

}  // namespace brig::config
