#include "security/sandbox_ids.h"

#include <dirent.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "sys/id_map.h"
#include "util/files.h"
#include "util/parse.h"
#include "util/slots.h"

namespace brig::security {
namespace {

std::optional<uint64_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoull(std::string(s));
}

// One "name:first:count" line of /etc/subuid or /etc/subgid.
struct Grant {
  std::string name;
  uint64_t first, count;
};

// The well-formed lines; others grant nothing (as shadow-utils reads them).
std::vector<Grant> Grants(const std::string& text) {
  std::vector<Grant> out;
  for (std::string_view line : util::Split(text, '\n')) {
    std::vector<std::string_view> f = util::Split(line, ':');
    if (f.size() != 3 || f[0].empty() || f[0][0] == '#') continue;
    auto first = Number(f[1]), count = Number(f[2]);
    if (first && count && *count > 0) out.push_back({std::string(f[0]), *first, *count});
  }
  return out;
}

const Grant* Find(const std::vector<Grant>& grants, std::string_view name) {
  for (const Grant& g : grants) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::string Span(uint64_t first, uint64_t count) {
  return std::to_string(first) + "-" + std::to_string(first + count - 1);
}

// /etc/subuid and /etc/subgid, and with `tables` /etc/passwd and /etc/group; a missing
// one is empty.
Result<IdFiles> ReadIdFiles(bool tables) {
  IdFiles files;
  const std::pair<const char*, std::string*> read[] = {{"/etc/subuid", &files.subuid},
                                                       {"/etc/subgid", &files.subgid},
                                                       {"/etc/passwd", &files.passwd},
                                                       {"/etc/group", &files.group}};
  // The subordinate files first: without `tables`, only they are read.
  for (size_t i = 0; i < (tables ? 4 : 2); ++i) {
    auto t = util::ReadFile(read[i].first);
    if (!t && t.error().err != ENOENT) return std::move(t).error();
    if (t) *read[i].second = std::move(*t);
  }
  return files;
}

constexpr char kRemedy[] =
    "; give brig ids of its own with a line 'brig:FIRST:COUNT' in /etc/subuid and /etc/subgid "
    "(brig-run(1), Host ids)";

// Refuses a range of `kind` ids that an entry of `file` also has: another's grant, or an id
// of field `field` of /etc/passwd or /etc/group.
Status CheckFree(const char* kind, uint64_t first, uint64_t count, const IdRange& r,
                 const std::vector<Grant>& grants, const std::string& table, size_t field,
                 const char* grants_file, const char* table_file) {
  const std::string what =
      std::string("brig's host ") + kind + "s " + Span(first, count) + " (" + r.source + ")";
  for (const Grant& g : grants) {
    if (g.name == "brig" || g.first >= first + count || first >= g.first + g.count) continue;
    return Fail("host ids", what,
                std::string("overlap ") + grants_file + "'s entry for " + g.name + " (" +
                    Span(g.first, g.count) + ")" + kRemedy);
  }
  for (std::string_view line : util::Split(table, '\n')) {
    std::vector<std::string_view> f = util::Split(line, ':');
    if (f.size() <= field) continue;
    auto id = Number(f[field]);
    if (!id || *id < first || *id >= first + count) continue;
    return Fail("host ids", what,
                std::string("hold ") + kind + " " + std::to_string(*id) + " of " + table_file +
                    "'s " + std::string(f[0]) + kRemedy);
  }
  return {};
}

}  // namespace

Result<IdRange> ChooseIdRange(const IdFiles& files) {
  std::vector<Grant> subuid = Grants(files.subuid), subgid = Grants(files.subgid);
  const Grant* u = Find(subuid, "brig");
  const Grant* g = Find(subgid, "brig");
  IdRange r;
  if (!u && !g) {
    r = {kDefaultFirst, kDefaultFirst, kDefaultCount, "brig's default"};
  } else if (!u || !g) {
    return Fail("host ids", u ? "/etc/subgid" : "/etc/subuid",
                std::string("has no entry for brig, and ") + (u ? "/etc/subuid" : "/etc/subgid") +
                    " has one; give brig both, or neither for its default range");
  } else {
    uint64_t count = std::min(u->count, g->count);
    if (u->first == 0 || g->first == 0 || u->first + count > 0xffffffffu ||
        g->first + count > 0xffffffffu) {
      return Fail("host ids", "brig:" + std::to_string(u->first) + ":" + std::to_string(count),
                  "must lie within 1-4294967294 (never uid or gid 0)");
    }
    r = {static_cast<uint32_t>(u->first), static_cast<uint32_t>(g->first),
         static_cast<uint32_t>(count), "brig's entries in /etc/subuid and /etc/subgid"};
  }
  BRIG_TRY(
      CheckFree("uid", r.uid, r.count, r, subuid, files.passwd, 2, "/etc/subuid", "/etc/passwd"));
  BRIG_TRY(
      CheckFree("gid", r.gid, r.count, r, subgid, files.passwd, 3, "/etc/subgid", "/etc/passwd"));
  BRIG_TRY(
      CheckFree("gid", r.gid, r.count, r, subgid, files.group, 2, "/etc/subgid", "/etc/group"));
  return r;
}

Result<IdRange> ReadIdRange() { return ChooseIdRange(BRIG_TRY_CTX(ReadIdFiles(true), "host ids")); }

Result<std::optional<Subordinate>> ChooseSubordinate(const IdFiles& files, std::string_view name,
                                                     uid_t uid, gid_t gid) {
  const std::string number = std::to_string(uid);
  auto grant = [&](const std::string& text) -> std::optional<Grant> {
    std::vector<Grant> grants = Grants(text);
    const Grant* g = name.empty() ? nullptr : Find(grants, name);
    if (!g) g = Find(grants, number);
    if (!g) return std::nullopt;
    return *g;
  };
  std::optional<Grant> u = grant(files.subuid), g = grant(files.subgid);
  if (!u || !g) return std::optional<Subordinate>();
  const std::pair<const char*, const Grant*> checks[] = {{"/etc/subuid", &*u},
                                                         {"/etc/subgid", &*g}};
  for (const auto& [file, grant] : checks) {
    uint64_t own = grant == &*u ? uid : gid;
    std::string what = std::string(file) + "'s entry for " + grant->name;
    std::string span = "(" + Span(grant->first, grant->count) + ")";
    if (grant->first == 0 || grant->first + grant->count > 0xffffffffu) {
      return Fail("subordinate ids", what, span + " must lie within 1-4294967294");
    }
    if (own >= grant->first && own < grant->first + grant->count) {
      return Fail(
          "subordinate ids", what,
          span + " holds the user's own " + (grant == &*u ? "uid " : "gid ") + std::to_string(own));
    }
  }
  return std::optional<Subordinate>(
      Subordinate{static_cast<uint32_t>(u->first), static_cast<uint32_t>(u->count),
                  static_cast<uint32_t>(g->first), static_cast<uint32_t>(g->count)});
}

Result<std::optional<Subordinate>> CallersSubordinate(std::string* warning) {
  uid_t uid = geteuid();
  IdFiles files = BRIG_TRY_CTX(ReadIdFiles(false), "subordinate ids");
  const struct passwd* pw = getpwuid(uid);
  std::string name = pw ? pw->pw_name : "";
  std::optional<Subordinate> sub = BRIG_TRY(ChooseSubordinate(files, name, uid, getegid()));
  if (!sub) return sub;
  for (const char* helper : {sys::kNewUidMap, sys::kNewGidMap}) {
    if (access(helper, X_OK) == 0) continue;
    *warning = "/etc/subuid and /etc/subgid grant " + (name.empty() ? std::to_string(uid) : name) +
               " subordinate ids, but " + helper +
               " is not installed (package uidmap): the sandbox keeps the caller's "
               "supplementary groups";
    break;
  }
  return sub;
}

Status EnterCallersNamespace(std::string* warning) {
  std::optional<Subordinate> sub = BRIG_TRY(CallersSubordinate(warning));
  if (!sub || !warning->empty()) return sys::EnterOwnUserNamespace();
  uid_t uid = geteuid();
  gid_t gid = getegid();
  return sys::EnterOwnUserNamespace(
      sys::IdMaps{.uids = {{.inside = uid, .host = uid}, {sub->uid, sub->uid, sub->uid_count}},
                  .gids = {{.inside = gid, .host = gid}, {sub->gid, sub->gid, sub->gid_count}}});
}

Result<std::set<uid_t>> ProcessUids() {
  DIR* d = opendir("/proc");
  if (!d) return SysError("opendir", "/proc");
  std::set<uid_t> uids;
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
    // A process that is gone meanwhile has no file: it holds nothing.
    auto status = util::ReadFile(std::string("/proc/") + de->d_name + "/status");
    if (!status) continue;
    size_t at = status->find("\nUid:");
    if (at == std::string::npos) continue;
    std::istringstream ids(status->substr(at + 5, status->find('\n', at + 1) - at - 5));
    for (uint64_t id; ids >> id;) uids.insert(static_cast<uid_t>(id));
  }
  closedir(d);
  return uids;
}

Result<bool> DropLeft(const std::string& dir, std::vector<std::string>* removed) {
  // Read once, and only if a file is left: most runs find none.
  std::optional<Result<std::set<uid_t>>> uids;
  return util::DropUnheld(dir, removed, [&uids](const std::string& name) {
    if (!uids) uids.emplace(ProcessUids());
    std::optional<uint64_t> uid = Number(name);
    return !uid || !*uids || (*uids)->count(static_cast<uid_t>(*uid)) > 0;
  });
}

Result<SandboxIds> SandboxIds::Take(const IdRange& range, const std::string& dir) {
  BRIG_TRY_CTX(util::MakeDirs(dir), "host ids");
  std::optional<util::Slot> slot = BRIG_TRY_CTX(
      util::TakeSlot(dir, range.uid, range.count, util::Left::kSkip), "host ids");
  if (!slot) {
    return Fail("host ids", Span(range.uid, range.count),
                "every id of brig's range (" + range.source +
                    ") is held by a running sandbox, or by one whose brig was killed (brig gc "
                    "frees those once their processes are gone)");
  }
  SandboxIds ids;
  ids.uid_ = slot->n;
  ids.gid_ = range.gid + (slot->n - range.uid);
  ids.path_ = std::move(slot->path);
  ids.lock_ = std::move(slot->fd);
  return ids;
}

SandboxIds SandboxIds::Caller() {
  SandboxIds ids;
  ids.uid_ = geteuid();
  ids.gid_ = getegid();
  return ids;
}

SandboxIds::SandboxIds(SandboxIds&& o) noexcept
    : uid_(o.uid_), gid_(o.gid_), path_(std::exchange(o.path_, {})), lock_(std::move(o.lock_)) {}

SandboxIds& SandboxIds::operator=(SandboxIds&& o) noexcept {
  if (this != &o) {
    Release();
    uid_ = o.uid_;
    gid_ = o.gid_;
    path_ = std::exchange(o.path_, {});
    lock_ = std::move(o.lock_);
  }
  return *this;
}

// The file goes before the lock: a taker that locks it meanwhile finds it unlinked and
// tries another (util::LockHeld).
void SandboxIds::Release() {
  if (path_.empty()) return;
  (void)unlink(path_.c_str());
  path_.clear();
  lock_.Reset();
}

}  // namespace brig::security
