// Each sandbox's host uid and gid, its own among live sandboxes: brig makes the sandbox's
// user namespace as that uid, so the kernel charges what the sandbox holds (inotify
// instances and watches, namespaces, message-queue bytes, pending signals, processes) to
// it in the host's namespace, not to host root (ucounts.h); and the sandbox user is that
// uid on the host, a user of its own, not root, not another sandbox.
//
// The ids come from a range brig reserves: a "brig" entry of /etc/subuid and /etc/subgid
// if the operator made one (as podman's --userns=auto takes the "containers" entry), else
// kDefaultFirst.. (kDefaultCount ids). A process of such a uid in the host's namespace
// would hold every capability in the sandbox's namespaces (the kernel's rule for a
// namespace's owner), so the range must be no one else's: a run is refused if it overlaps
// another entry of /etc/subuid or /etc/subgid, or an id of /etc/passwd or /etc/group.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"
#include "util/dirs.h"

namespace brig::security {

// 0x70000000: past the ranges systemd-nspawn allocates (524288 to 1879048191) and below
// systemd's foreign range (from 2147352576); far from useradd's subordinate ids (from 100000).
inline constexpr uint32_t kDefaultFirst = 1879048192;
inline constexpr uint32_t kDefaultCount = 65536;
inline std::string IdsDir() { return util::RunDir() + "/ids"; }

struct IdRange {
  uint32_t uid = 0, gid = 0, count = 0;  // uid..uid+count-1 and gid..gid+count-1
  std::string source;                    // "brig's default", or the files' entries
};

// The texts of the files the range is checked against.
struct IdFiles {
  std::string subuid, subgid, passwd, group;
};

// Pure: the range, from brig's entries or the default, checked against the files.
Result<IdRange> ChooseIdRange(const IdFiles& files);
// Reads /etc/subuid, /etc/subgid, /etc/passwd and /etc/group (a missing one is empty).
Result<IdRange> ReadIdRange();

// brig without root: the caller's subordinate ids, its first entry in /etc/subuid and in
// /etc/subgid, by name or by uid (as shadow's newuidmap and newgidmap read them).
struct Subordinate {
  uint32_t uid = 0, uid_count = 0, gid = 0, gid_count = 0;
};

// Pure: none unless both files grant the caller ids; an error for a grant that holds id 0,
// runs past 4294967294, or holds the caller's own uid or gid (the maps would overlap).
Result<std::optional<Subordinate>> ChooseSubordinate(const IdFiles& files, std::string_view name,
                                                     uid_t uid, gid_t gid);

// brig without root: the caller's grant (none if it has none), from /etc/subuid and
// /etc/subgid and its name; `warning` says so if it has one but newuidmap or newgidmap is
// not installed.
Result<std::optional<Subordinate>> CallersSubordinate(std::string* warning);

// brig without root: moves brig into a user and mount namespace of its own
// (sys::EnterOwnUserNamespace). Where the caller has subordinate ids and newuidmap and
// newgidmap are installed, the namespace maps them too, through the helpers, and brig drops
// its supplementary groups there, so the sandbox never has them; else it maps the caller's
// uid and gid alone and the groups stay (brig(1), WITHOUT ROOT); `warning` says so if the
// ids are granted but a helper is missing.
Status EnterCallersNamespace(std::string* warning);

// The real, effective, saved and file-system uids of every process on the host
// (/proc/PID/status), zombies included.
Result<std::set<uid_t>> ProcessUids();

// One uid and gid of the range (the same offset in each), held for the sandbox's life as a
// lock file IdsDir()/UID (util/slots.h): a concurrent run never gets it. A brig that ends
// removes the file once its sandbox is reaped; a killed brig leaves it while the kernel
// kills its sandbox (brig init's parent-death signal), and no run takes an id whose file
// is there, so two sandboxes never share a uid, not even while one is dying. DropLeft
// removes such a file once no process of its uid is left (each run and brig gc call it).
// If /proc cannot be read, every left file stays.
Result<bool> DropLeft(const std::string& dir, std::vector<std::string>* removed);

class SandboxIds {
 public:
  static Result<SandboxIds> Take(const IdRange& range, const std::string& dir = IdsDir());
  // brig without root: the caller's own uid and gid, the only ids an ordinary user may map
  // without a helper (user_namespaces(7)); nothing is held.
  static SandboxIds Caller();
  SandboxIds() = default;
  SandboxIds(SandboxIds&& o) noexcept;
  SandboxIds& operator=(SandboxIds&& o) noexcept;
  ~SandboxIds() { Release(); }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }
  void Release();

 private:
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string path_;
  sys::UniqueFd lock_;
};

}  // namespace brig::security
