#include "cli/reclaim.h"

#include <unistd.h>

#include <map>
#include <optional>
#include <utility>

#include "cgroup/groups.h"
#include "cli/cli.h"
#include "fs/host_marks.h"
#include "net/netns.h"
#include "net/network.h"
#include "security/sandbox_ids.h"
#include "state/record.h"
#include "util/files.h"

namespace brig::cli {
namespace {

// A group that still has tasks and no cgroup.kill (v1): processes a killed brig of the
// none profile left, or a sandbox still dying. Emptying it means waiting, which a run does
// not do; a later run or brig gc takes it.
bool Busy(const std::string& group) {
  auto procs = util::ReadFile(group + "/cgroup.procs");
  return procs && !procs->empty() && access((group + "/cgroup.kill").c_str(), F_OK) != 0;
}

class Reclaimer {
 public:
  Reclaimer(ReclaimMode mode, net::NetnsKey here) : mode_(mode), here_(here) {}

  // One stale record: true once everything it names is gone, false to leave it untouched.
  Result<bool> Clean(const std::string& id, const std::vector<state::Entry>& entries);
  // brig's state directories of network namespaces that are gone (all of them, or only
  // those of namespaces found gone while cleaning records).
  void SweepStateDirs(Reclaimed& out);
  std::vector<std::string>& removed() { return removed_; }

 private:
  bool Gone(const net::NetnsKey& k);
  // The network namespace of a record's "net" entries that is not this one, if any.
  Result<std::optional<net::NetnsKey>> Elsewhere(const std::vector<state::Entry>& entries);
  Status CleanOne(const std::string& id, const state::Entry& e);

  ReclaimMode mode_;
  net::NetnsKey here_;
  std::map<std::pair<uint64_t, uint64_t>, bool> gone_;  // by (inode, cookie)
  std::vector<std::string> removed_;
};

bool Reclaimer::Gone(const net::NetnsKey& k) {
  auto key = std::make_pair(k.ino, k.cookie);
  auto it = gone_.find(key);
  if (it != gone_.end()) return it->second;
  bool gone = !net::GoneOf({k}).empty();
  gone_[key] = gone;
  return gone;
}

Result<std::optional<net::NetnsKey>> Reclaimer::Elsewhere(
    const std::vector<state::Entry>& entries) {
  for (const auto& e : entries) {
    if (e.kind != "net") continue;
    net::NetEntry n = BRIG_TRY(net::ParseEntry(e.value));
    if (!here_.Matches(n.ns)) return std::optional<net::NetnsKey>(n.ns);
  }
  return std::optional<net::NetnsKey>();
}

Status Reclaimer::CleanOne(const std::string& id, const state::Entry& e) {
  if (e.kind == "cgroup") {
    if (BRIG_TRY(cgroup::RemoveStale(id, e.value))) removed_.push_back("cgroup " + e.value);
  } else if (fs::IsMarkKind(e.kind)) {
    if (BRIG_TRY(fs::RemoveStaleMark(e.kind, e.value))) {
      removed_.push_back(e.kind + " " + e.value.substr(e.value.find(":/") + 1) + " (" + id + ")");
    }
  } else {
    for (const auto& what : BRIG_TRY(net::RemoveStaleNet(id, e.value))) {
      removed_.push_back(what + " (" + id + ")");
    }
  }
  return {};
}

Result<bool> Reclaimer::Clean(const std::string& id, const std::vector<state::Entry>& entries) {
  for (const auto& e : entries) {
    if (e.kind != "cgroup" && e.kind != "net" && e.kind != state::kAboutKind &&
        !fs::IsMarkKind(e.kind)) {
      return Fail("brig gc", id, "unknown resource kind '" + e.kind + "' in its record",
                  ErrorKind::kInternal);
    }
  }
  // A sandbox of another network namespace: its rules and lease are that namespace's to
  // remove. If the namespace is gone they went with it, and the record's net entry is
  // done with.
  std::optional<net::NetnsKey> elsewhere = BRIG_TRY_CTX(Elsewhere(entries), id);
  bool net_gone = elsewhere && Gone(*elsewhere);
  if (mode_ == ReclaimMode::kQuiet) {
    if (elsewhere && !net_gone) return false;
    for (const auto& e : entries) {
      if (e.kind == "cgroup" && Busy(e.value)) return false;
    }
  }
  // Every entry is tried; the record stays if any of them could not be cleaned.
  std::optional<Error> failed;
  for (const auto& e : entries) {
    if ((e.kind == "net" && net_gone) || e.kind == state::kAboutKind) continue;
    if (auto s = CleanOne(id, e); !s && !failed) failed = std::move(s).error().Wrap(id);
  }
  if (net_gone) {
    removed_.push_back("network entry of namespace " + std::to_string(elsewhere->ino) +
                       ", which is gone (" + id + ")");
  }
  if (failed) return std::move(*failed);
  return true;
}

void Reclaimer::SweepStateDirs(Reclaimed& out) {
  std::vector<net::NetnsKey> candidates;
  if (mode_ == ReclaimMode::kReport) {
    for (const auto& k : net::StateDirs()) {
      if (k.ino != here_.ino) candidates.push_back(k);
    }
  } else {
    for (const auto& [key, gone] : gone_) {
      if (gone) candidates.push_back({key.first, key.second});
    }
  }
  std::vector<net::NetnsKey> unknown;
  for (const auto& k : candidates) {
    if (!gone_.count({k.ino, k.cookie})) unknown.push_back(k);
  }
  for (const auto& k : unknown) gone_[{k.ino, k.cookie}] = false;
  for (const auto& k : net::GoneOf(unknown)) gone_[{k.ino, k.cookie}] = true;
  for (const auto& k : candidates) {
    if (!gone_[{k.ino, k.cookie}]) continue;
    auto removed = net::RemoveStateDir(k);
    if (!removed) {
      out.failed.push_back(std::move(removed).error());
    } else if (!removed->empty()) {
      out.removed.push_back(*removed + " (its network namespace is gone)");
    }
  }
}

}  // namespace

Result<Reclaimed> Reclaim(ReclaimMode mode, const std::string& only) {
  net::NetnsKey here = BRIG_TRY(net::CurrentNetns());
  Reclaimer r(mode, here);
  auto collected = BRIG_TRY(state::CollectStale(
      state::SandboxDir(),
      [&](const std::string& id, const std::vector<state::Entry>& entries) {
        return r.Clean(id, entries);
      },
      only));
  Reclaimed out;
  out.removed = std::move(r.removed());
  out.failed = std::move(collected.failed);
  if (only.empty()) {
    r.SweepStateDirs(out);
    if (auto leases = net::DropEmptyLeases(here); !leases) {
      out.failed.push_back(std::move(leases).error());
    } else {
      for (const auto& path : *leases) {
        out.removed.push_back(path + " (its brig was killed before it used the address)");
      }
    }
    // The host ids' files of brigs that are gone, once their sandboxes are too
    // (security/sandbox_ids.h).
    std::vector<std::string> ids;
    if (auto dropped = security::DropLeft(security::IdsDir(), &ids); !dropped) {
      out.failed.push_back(std::move(dropped).error());
    }
    for (const auto& path : ids) {
      out.removed.push_back(path + " (its brig and every process of its uid are gone)");
    }
  }
  return out;
}

}  // namespace brig::cli
