// An OCI bundle's config.json (runtime-spec config.md, config-linux.md): read with
// protobuf's JSON mapping into oci::Spec (proto/oci.proto), checked, and turned into the
// typed values the launcher applies (mount flags, capability masks, rlimit numbers).
// Everything here is pure but LoadSpec, which reads the file. Unknown properties are
// ignored, as the spec asks; a known property with an invalid value is refused naming it
// ("config.json: linux.namespaces[2].type: unknown namespace 'foo'"), exit 125.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "proto/oci.pb.h"
#include "security/caps.h"
#include "sys/id_map.h"

namespace brig::oci {

// The runtime spec's version brig writes (brig spec), reports (state, list, brig
// --version) and takes where a config.json names none, as runc 1.1 does.
inline constexpr char kSpecVersion[] = "1.0.2";

// Parses and validates config.json's text. `name` prefixes every error ("config.json").
Result<Spec> ParseSpec(std::string_view json, std::string_view name = "config.json");
// BUNDLE/config.json, read as a user's file (util::ReadUserFile), parsed and validated.
Result<Spec> LoadSpec(const std::string& bundle);
// A process.json for `brig exec --process FILE` (a Process object): parsed and validated
// as config.json's process is.
Result<Process> ParseProcess(std::string_view json, std::string_view name);

// The spec's linux.namespaces[].type as a CLONE_NEW* flag, or nullopt if unknown.
std::optional<int> NamespaceFlag(std::string_view type);
// The /proc/PID/ns/ entry of a CLONE_NEW* flag ("net" for CLONE_NEWNET).
std::string_view NamespaceProcName(int flag);
// The namespace (CLONE_NEW*) whose value a linux.sysctl key ("net.ipv4.ip_forward" or
// "net/ipv4/ip_forward") sets, as runc's validator has them: ipc (the SysV IPC limits,
// fs.mqueue.*), network (net.*), uts (kernel.hostname and domainname); nullopt for every
// other key, which is the host's whatever the container's namespaces.
std::optional<int> SysctlNamespace(std::string_view key);

// A mount's options as mount(2) and mount_setattr(2) take them.
struct MountOptions {
  unsigned long flags = 0;        // MS_* to set (MS_RDONLY, MS_NOSUID, ...)
  unsigned long clear = 0;        // MS_* an option turned off (rw, suid, dev, exec, atime...)
  unsigned long propagation = 0;  // MS_SHARED|MS_SLAVE|MS_PRIVATE|MS_UNBINDABLE, MS_REC
  uint64_t attr_set = 0;          // MOUNT_ATTR_* recursively (rro, rnosuid, ...)
  uint64_t attr_clr = 0;
  bool bind = false;       // bind or rbind
  bool recursive = false;  // rbind
  bool tmpcopyup = false;  // runc's extension: a new tmpfs gets the image's files there
  // runc's idmap and ridmap: id-mapped, with the mount's uidMappings and gidMappings, else
  // the container's; ridmap maps the bind's submounts too.
  bool idmap = false, idmap_recursive = false;
  std::string data;        // the options that are not flags, comma-joined (mode=755,size=1m)
};
// Pure. Unknown options that look like flags are data (the file system decides).
MountOptions ParseMountOptions(const std::vector<std::string>& options);
// linux.uidMappings or a mount's, as sys/id_map.h takes them.
std::vector<sys::IdMapping> IdMappings(const google::protobuf::RepeatedPtrField<IdMapping>& from);
// The bind and rbind types count as a bind mount too (runc, crun).
bool IsBind(const Mount& m);
// linux.rootfsPropagation: MS_SHARED|MS_REC... ("" means MS_SLAVE|MS_REC, runc's default).
Result<unsigned long> RootfsPropagation(std::string_view value);

// Capability names (CAP_CHOWN...) as a bit mask; an unknown name is an error naming it.
Result<uint64_t> CapabilityMask(const google::protobuf::RepeatedPtrField<std::string>& names,
                                std::string_view field);
Result<security::CapSets> CapabilitySets(const Process& p);

// RLIMIT_NOFILE... as its resource number; nullopt if unknown.
std::optional<int> RlimitResource(std::string_view name);

// A signal as kill(1) takes it: "KILL", "SIGKILL", "9". Errors name the value.
Result<int> ParseSignal(std::string_view s);

// The personality(2) value of linux.personality (domain LINUX or LINUX32, no flags).
Result<unsigned long> PersonalityValue(const Personality& p);

// `brig spec`: a config.json that brig runs as it is (a busybox-style rootfs at "rootfs",
// sh in a terminal, as runc's). `rootless`: a user namespace mapping the caller's ids.
std::string DefaultSpecJson(bool rootless, uid_t uid, gid_t gid);
// `brig features` (features.md): what this brig supports, as JSON.
std::string FeaturesJson();

}  // namespace brig::oci
