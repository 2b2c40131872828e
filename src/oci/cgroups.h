// An OCI container's cgroups (config-linux.md "Control groups"), the front end's half:
// linux.cgroupsPath and linux.resources read out of config.json and handed to the groups
// of cgroup/groups.h (the mechanism brig run's sandbox shares: one planner, one writer),
// the directories read back out of the record (Container.cgroups, joined_cgroups), and
// runc's `events --stats` JSON. An absolute cgroupsPath is taken under each hierarchy's
// root; a relative one under the group brig itself runs in, in each hierarchy (runc); an
// empty one is /brig/ID.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "brig/result.h"
#include "cgroup/groups.h"
#include "proto/oci.pb.h"

namespace brig::oci {

// linux.cgroupsPath checked and tidied ("." components and repeated or trailing slashes
// dropped): absolute ("/a/b") or relative ("a/b"); empty is "/brig/ID". Refused: ".."
// components, control characters, and a systemd "slice:prefix:name" (which needs
// --systemd-cgroup: cgroup/systemd.h ParsePath reads it then).
Result<std::string> CleanCgroupsPath(const std::string& path, const std::string& id);

// The groups of `spec`'s cgroupsPath, made or joined, with its linux.resources written
// (cgroup::Groups::Create; `note` writes the directories into the record first). With
// `scope`, the path is that of the systemd scope made for the container, whose groups are
// its own.
Result<std::unique_ptr<cgroup::Groups>> CreateCgroups(const Spec& spec, const std::string& id,
                                                      const cgroup::Groups::Note& note,
                                                      const std::string* scope = nullptr);
// Without root on the host (util::Rootless, util::NamespacedRoot), whether the container
// goes without the `planned` groups, as runc's rootless containers do: where this process
// may not make one of them (the nearest existing ancestor of a group to make is not
// writable to it: nothing is delegated there). A limit in linux.resources then has nowhere
// to go and is refused in one line (device rules aside: without root no device node can be
// made, and a user namespace opens none of the host's). As root: false, always. create and
// create --dry-run decide by it alike.
Result<bool> GoesWithoutCgroups(const Spec& spec, const cgroup::Groups::Planned& planned);
// The groups a record names, for verbs after create.
std::unique_ptr<cgroup::Groups> CgroupsOf(const Container& c);

// As runc's `events --stats` JSON: {"type":"stats","id":ID,"data":{"cpu":...,"memory":...,
// "pids":...}}.
std::string StatsJson(const std::string& id, const cgroup::Stats& s);

}  // namespace brig::oci
