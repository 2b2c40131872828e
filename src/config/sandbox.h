// The fully resolved description of one sandbox: what the CLI (and, later, a profile or an
// OCI config.json) produces and what the launcher, init and supervisor consume. Plain data;
// built and validated in the parent before anything is cloned.
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
#include "net/link.h"

namespace brig::config {

// ro: bound read-only; rw: bound read-write; copy: an overlay over the source whose changes
// stay in brig's scratch space and are discarded (or exported) at the end.
enum class WorkspaceMode { kReadOnly, kReadWrite, kCopy };
inline const char* WorkspaceModeName(WorkspaceMode m) {
  return m == WorkspaceMode::kReadWrite ? "rw" : m == WorkspaceMode::kCopy ? "copy" : "ro";
}

// Inside the sandbox the workload always runs as this uid/gid ("sandbox").
inline constexpr uid_t kSandboxUid = 1000;
inline constexpr gid_t kSandboxGid = 1000;
// Host id used when the workspace owner cannot be (root) or there is no workspace.
inline constexpr uid_t kOverflowHostId = 65534;

struct Rlimits {
  uint64_t nofile = 4096;
  uint64_t nproc = 4096;
  uint64_t core = 0;
  // Counted per user and charged to host root as well (security/ucounts.h).
  uint64_t msgqueue = 65536;
  uint64_t sigpending = 1024;
};

// The sandbox user namespace's own /proc/sys/user limits (security/ucounts.h).
struct UserCounts {
  uint64_t inotify_instances = 32;
  uint64_t inotify_watches = 4096;
  uint64_t fanotify_groups = 8;
  uint64_t fanotify_marks = 4096;
  uint64_t namespaces = 64;  // of each kind
};

struct Sandbox {
  std::string id;                 // "brig-" + 12 hex digits
  std::string profile;            // the profile's name or path, for messages
  bool isolated = true;           // false only for an ISOLATION_NONE profile
  std::vector<std::string> argv;  // the command, argv[0] resolved inside the sandbox
  std::vector<std::string> env;   // "K=V", built from nothing (design.md, Invariant 3)

  std::string rootfs;  // empty: the host-derived read-only root
  // --layer: directories stacked on the rootfs with overlayfs, bottom first.
  std::vector<std::string> layers;
  std::string workspace;
  WorkspaceMode workspace_mode = WorkspaceMode::kReadOnly;
  // rw and copy: paths of the workspace the sandbox may not change, create, delete or
  // move, in normalised form ("a/b", no "." or empty components).
  std::vector<std::string> protected_paths;
  // The profile's filesystem.hidden_paths entries (fs/hidden.h).
  std::vector<std::string> hidden_paths;
  // copy: where to write what the sandbox changed, at the end (--export-changes); empty:
  // nowhere.
  std::string export_changes;
  // copy: a directory under which brig makes the copy's scratch space (--copy-dir); empty:
  // a tmpfs of disk_size, else of tmp_size.
  std::string copy_dir;
  // copy: the cap on the copy's changes in bytes (--disk-size, limits.disk, 8G under
  // copy_dir); 0: none but the tmpfs's tmp_size.
  uint64_t disk_size = 0;
  uint64_t tmp_size = 1ull << 30;  // bytes, for /tmp and /dev/shm each
  // Bytes of each of stdout and stderr relayed to the caller; unset: no bound.
  std::optional<uint64_t> output_limit;

  std::chrono::milliseconds timeout{30 * 60 * 1000};
  std::chrono::milliseconds grace{10 * 1000};
  Rlimits rlimits;
  UserCounts user_counts;
  cgroup::Limits limits;
  std::string cgroup_parent;  // empty: the group brig runs in, per hierarchy
  // The host's cgroups and the path each controller takes, probed once, before the run
  // (container::FitLimits).
  cgroup::Layout cgroup_layout;
  cgroup::Plan cgroup_plan;
  // Postures allowlist and open: an interface on brig's bridge, in this subnet. Unset:
  // loopback only (none, broker-only).
  std::optional<net::Subnet> network;
  // With an interface: what its resolver and proxy allow.
  egress::Policy egress;
  // The profile's brokers, then --broker's, header values read (any posture).
  std::vector<broker::Config> brokers;
  // --attempt: with the id, the attribution brokers set ("<id>/<attempt>").
  uint32_t attempt = 1;

  std::string seccomp_policy;  // path of the policy file
  std::string result_path;
  std::string audit_path;

  // Host ids the sandbox uid/gid map to: the workspace's owner, never 0.
  uid_t host_uid = kOverflowHostId;
  gid_t host_gid = kOverflowHostId;
};

}  // namespace brig::config
