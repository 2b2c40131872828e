// `brig create`: an OCI container made from its bundle, its process waiting for `start`
// (runtime.md "create"). The parent half; oci/init.cc is the child's. brig then exits, and
// the engine's shim (the subreaper above brig) reaps the container's process.
#pragma once

#include <sys/types.h>

#include <string>

#include "brig/result.h"
#include "cgroup/groups.h"
#include "oci/process.h"
#include "oci/rootfs.h"
#include "proto/oci.pb.h"

namespace brig::oci {

struct CreateOptions {
  std::string root;            // --root
  std::string id;
  std::string bundle;          // --bundle, made absolute
  std::string pid_file;        // --pid-file: the container's process, written atomically
  std::string console_socket;  // --console-socket: where a terminal's master goes
  int console_fd = -1;         // or a connected socket of brig's own (oci/process.h TakeConsole)
  int preserve_fds = 0;        // --preserve-fds: fds 3 .. 3+N-1 pass to the container
  bool no_pivot = false;       // --no-pivot: MS_MOVE and chroot instead of pivot_root
  bool no_new_keyring = false;  // --no-new-keyring: keep the caller's session keyring
  // --systemd-cgroup: cgroupsPath names a scope unit systemd makes (cgroup/systemd.h).
  bool systemd_cgroup = false;
};

// First thing in main, before brig opens anything: which fds above 2 brig was started
// with, so that --preserve-fds hands over only the caller's.
void RecordInheritedFds();
bool InheritedFd(int fd);
// --preserve-fds N hands over fds 3 .. 3+N-1, which must be the caller's, open before
// brig opened anything (RecordInheritedFds), so none of brig's own leaks in (runc #5474).
Status CheckPreserved(int n);

// Returns the container's pid. On an error nothing is left: no process, no cgroup, no
// state directory (exit 125, or 126/127 for a command that cannot run).
Result<pid_t> Create(const CreateOptions& o);

// What Create would make of the bundle (`brig create --dry-run`, oci/dry_run.h): the
// bundle read and checked as Create reads it, the groups and their writes planned, the
// root planned. Makes nothing: no state directory, no cgroup, no fifo, no process. Its
// errors are Create's.
struct CreatePlan {
  Spec spec;
  std::string rootfs;  // root.path, resolved
  container::ProcessSpec process;
  cgroup::Groups::Planned cgroups;
  RootfsPlan rootfs_plan;
};
Result<CreatePlan> PlanCreate(const CreateOptions& o);

}  // namespace brig::oci
