// runc's systemd cgroup driver (`--systemd-cgroup`): an OCI container's cgroup is a
// transient scope unit that systemd makes and brig is delegated (Delegate=yes), started
// over D-Bus (libsystemd's sd-bus), so that a host whose cgroup tree is systemd's (a
// kubelet with cgroupDriver: systemd, containerd with SystemdCgroup) keeps it so. Once the
// scope exists, brig makes the container's groups in it as the cgroupfs driver does
// (groups.h: the same planner, writer, freezer and kill); the limits systemd itself knows
// are given to it as the unit's properties too, so that a daemon-reload, which writes
// every unit's properties to its cgroup again, keeps them.
#pragma once

#include <sys/types.h>

#include <string>

#include "brig/result.h"
#include "proto/oci.pb.h"
#include "sys/child.h"

namespace brig::cgroup::systemd {

// linux.cgroupsPath as runc's systemd driver reads it, "SLICE:PREFIX:NAME": the scope
// PREFIX-NAME.scope in SLICE (system.slice where empty); empty altogether,
// system.slice:brig:ID. `path` is the unit's cgroup, from the root of the tree: the slice
// expanded ("a-b.slice" is /a.slice/a-b.slice) and the unit. Pure.
struct UnitPath {
  std::string slice, unit, path;
};
Result<UnitPath> ParsePath(const std::string& cgroups_path, const std::string& id);
// A slice unit's cgroup: "-.slice" is "/", "a-b-c.slice" /a.slice/a-b.slice/a-b-c.slice.
// Pure; a name that is not a slice's is refused.
Result<std::string> ExpandSlice(const std::string& slice);

// Whether systemd is the host's init (sd_booted(3): /run/systemd/system exists).
bool Booted();

// A transient scope that systemd made for a container, with Delegate=yes and the unit
// properties of `r`. A scope needs a process to exist: until Release(), a holder of
// brig's (a child that only waits) is its one; the container's process then joins the
// scope's group at birth (groups.h), and Release() ends the holder.
class Scope {
 public:
  static Result<Scope> Start(const UnitPath& u, const oci::Resources& r);
  void Release();  // ends the holder and reaps it
 private:
  explicit Scope(sys::Child holder) : holder_(std::move(holder)) {}
  sys::Child holder_;
};

// `brig update`: the unit properties of `r`, at run time (not persisted), that systemd
// knows; the cgroup files are written by groups.h as ever.
Status SetProperties(const std::string& unit, const oci::Resources& r);
// Stops `unit` and waits until it is gone; a unit systemd no longer has (a scope ends by
// itself when its last process does) is not an error. Its failed state is reset.
Status Stop(const std::string& unit);

}  // namespace brig::cgroup::systemd
