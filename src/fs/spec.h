// What the sandbox's filesystem is made of: the input of the mount plan (mount_plan.h) and
// of the export (export.h). Filled by config::Resolve (paths as given) and the host probe
// (config/probe.h: paths canonical, checked); plain data.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/dirs.h"

namespace brig::fs {

// Where overlayfs keeps its own attributes in a copy's upper layer (an opaque directory's
// "opaque"): trusted.overlay., which takes root over the host, or, without root, user.overlay.
// (the userxattr mount option, the only one an ordinary user's overlay may have).
inline std::string OverlayXattr(const std::string& name) {
  return (util::Rootless() ? "user.overlay." : "trusted.overlay.") + name;
}

// ro: bound read-only; rw: bound read-write; copy: an overlay over the source whose changes
// stay in brig's scratch space and are discarded (or exported) at the end.
enum class WorkspaceMode { kReadOnly, kReadWrite, kCopy };
inline const char* WorkspaceModeName(WorkspaceMode m) {
  return m == WorkspaceMode::kReadWrite ? "rw" : m == WorkspaceMode::kCopy ? "copy" : "ro";
}

// Files of host ids from_uid/from_gid appear as owned by host to_uid/to_gid (idmap.h).
struct IdMap {
  uid_t from_uid;
  gid_t from_gid;
  uid_t to_uid;
  gid_t to_gid;
};

// One of the profile's named mounts, as this run has it.
struct NamedMount {
  std::string name;
  std::string target;  // absolute, normalised, checked by the profile's validation
  bool writable = false;
  bool cache = false;  // util::CacheDir()/name, made by the mount plan; else `source`
  std::string source;  // a per-run mount's directory (canonical after the probe)
  // A cache's owner on the host: the sandbox user's host id (the probe).
  uint32_t uid = 0, gid = 0;
  // brig run --ro-bind's: the profile's hidden paths are hidden in it too, as in the
  // workspace.
  bool ro_bind = false;
};

struct Spec {
  std::string rootfs;  // empty: the host-derived read-only root
  // --layer: directories stacked on the rootfs with overlayfs, bottom first.
  std::vector<std::string> layers;
  std::string workspace;  // empty: none
  WorkspaceMode workspace_mode = WorkspaceMode::kReadOnly;
  // The host ids whose files the sandbox user owns: the workspace's owner (never root),
  // else 65534 (config::Sandbox's host_uid). Named caches are made theirs.
  uid_t owner_uid = 0;
  gid_t owner_gid = 0;
  // The sandbox user's own host ids (security/sandbox_ids.h). The workspace and the named
  // mounts are mounted id-mapped from their owners to them; where one of them cannot be,
  // the sandbox user is the owner's ids instead (MountPlan's sandbox_uid).
  uid_t sandbox_uid = 0;
  gid_t sandbox_gid = 0;
  // rw and copy: paths of the workspace the sandbox may not change, create, delete or
  // move, in normalised form ("a/b", no "." or empty components).
  std::vector<std::string> protected_paths;
  // The profile's filesystem.hidden_paths entries (hidden.h).
  std::vector<std::string> hidden_paths;
  // copy: where to write what the sandbox changed, at the end (--export-changes); empty:
  // nowhere.
  std::string export_changes;
  // copy: whose the export is, uid and gid: --export-owner's, else the workspace's owner,
  // else (a workspace of root's) brig's caller. The probe fills it in.
  std::optional<std::pair<uid_t, gid_t>> export_owner;
  // copy: a directory under which brig makes the copy's scratch space (--copy-dir), named
  // scratch_name; empty: a tmpfs of disk_size, else of tmp_size.
  std::string copy_dir;
  std::string scratch_name;
  // copy: the cap on the copy's changes in bytes (--disk-size, limits.disk, 8G under
  // copy_dir); 0: none but the tmpfs's tmp_size.
  uint64_t disk_size = 0;
  uint64_t tmp_size = 0;  // bytes, for /tmp and /dev/shm each
  // The profile's named mounts that this run has, in the profile's order.
  std::vector<NamedMount> mounts;
  // The address /etc/resolv.conf names: brig's resolver for this sandbox; empty: the
  // sandbox has no network interface, so no resolver.
  std::string resolver;
};

}  // namespace brig::fs
