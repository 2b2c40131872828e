#include "net/network.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include <netinet/in.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>

#include "util/files.h"
#include "util/parse.h"
#include "util/slots.h"

namespace brig::net {
namespace {

// The id's last 12 hex digits (a --name before them would not fit IFNAMSIZ).
std::string PortName(const std::string& id) {
  return kPortPrefix + id.substr(id.size() < 12 ? 0 : id.size() - 12);
}

// Every field, an empty one at either end included.
std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  for (std::string_view part : util::Split(s, ',')) out.emplace_back(part);
  return out;
}

// A decimal number of at most 19 digits.
std::optional<uint64_t> ParseNumber(const std::string& s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(s);
}

std::string DirOf(uint64_t ino) { return StateDir() + "/" + std::to_string(ino); }

// The cookie a state directory notes; 0 if it notes none.
Result<uint64_t> NotedCookie(const std::string& dir) {
  auto text = util::ReadFile(dir + "/netns");
  if (!text) {
    if (text.error().err == ENOENT) return uint64_t{0};
    return std::move(text).error();
  }
  return ParseNumber(*text).value_or(0);
}

// Makes a locked state directory this namespace's. One that notes another cookie was left
// by a namespace that is gone and had this inode: its leases were that namespace's.
Status ClaimStateDir(const std::string& dir, const NetnsKey& ns) {
  if (ns.cookie == 0) return {};
  uint64_t noted = BRIG_TRY(NotedCookie(dir));
  if (noted == ns.cookie) return {};
  if (noted != 0) BRIG_TRY(util::DropUnheld(dir + "/addr"));
  return util::WriteFileAtomic(dir + "/netns", std::to_string(ns.cookie), 0600);
}

// Locks this namespace's state directory, made if missing, for making the bridge and the
// base tables (one brig at a time).
Result<sys::UniqueFd> LockStateDir(const std::string& dir, const NetnsKey& ns) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    BRIG_TRY(util::MakeDirs(dir + "/addr"));
    std::string lock_path = dir + "/lock";
    sys::UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock) return SysError("open", lock_path);
    if (flock(lock.get(), LOCK_EX) < 0) return SysError("flock", lock_path);
    // brig gc removes the directory of a namespace that is gone, lock last; a namespace
    // that has since taken its inode makes it again.
    struct stat st;
    if (fstat(lock.get(), &st) < 0) return SysError("fstat", lock_path);
    if (st.st_nlink == 0) continue;
    BRIG_TRY(ClaimStateDir(dir, ns));
    return lock;
  }
  return Fail("network", dir, "removed again and again while brig was taking it");
}

}  // namespace

Result<std::unique_ptr<SandboxNet>> SandboxNet::Prepare(const std::string& id,
                                                        const Subnet& subnet,
                                                        state::Record& record) {
  NetnsKey ns = BRIG_TRY(CurrentNetns());
  std::string dir = DirOf(ns.ino);
  std::unique_ptr<SandboxNet> n(new SandboxNet());
  n->netns_ = ns;
  {
    sys::UniqueFd lock = BRIG_TRY(LockStateDir(dir, ns));
    BRIG_TRY_CTX(CheckNoRouteOverlap(subnet, kBridge), "network");
    n->bridge_index_ = BRIG_TRY_CTX(EnsureBridge(kBridge, subnet), "network");
    n->removal_ = BRIG_TRY_CTX(EnsureBaseRules(dir + "/removal"), "network");
  }
  n->port_slot_ = BRIG_TRY_CTX(TakePortSlot(dir + "/ports", kBridge), "network");
  n->lease_ = BRIG_TRY_CTX(Lease::Take(dir + "/addr", subnet), "network");
  // The address of a crashed run that brig gc has not seen yet: its rules go first.
  if (!n->lease_.previous().empty()) {
    auto old = ParseEntry(n->lease_.previous());
    if (old) (void)RemoveStalePortRules(old->rules, old->gateway);
  }
  n->address_ = {n->lease_.addr(), subnet};
  n->listeners_ = BRIG_TRY_CTX(Listeners::Open(subnet.Gateway()), "network");
  n->rules_ = {id, PortName(id), n->address_.addr, MacFor(n->address_.addr),
               n->listeners_.ports()};
  std::string entry = n->RecordEntry();
  BRIG_TRY(record.Add("net", entry));
  BRIG_TRY_CTX(n->lease_.Note(entry), "network");
  Status added = AddPortRules(n->rules_, subnet.Gateway(), n->removal_);
  // Elements with our keys (the address is leased to us, the port named for our id) can
  // only be leftovers: most often the address's last holder's, which expire at the tick
  // after it ended (nft.h's Removal), and this run may come before that tick.
  if (!added && added.error().err == EEXIST) {
    BRIG_TRY_CTX(RemoveStalePortRules(n->rules_, subnet.Gateway()), "network");
    added = AddPortRules(n->rules_, subnet.Gateway(), n->removal_);
  }
  BRIG_TRY_CTX(std::move(added), "network");
  n->rules_added_ = true;
  return n;
}

Status SandboxNet::Attach(int netns) {
  BRIG_TRY_CTX(CreateSandboxVeth(rules_.port, bridge_index_, netns, rules_.mac), "network");
  return {};
}

Status SandboxNet::Teardown() {
  if (!rules_added_) {
    lease_.Release();
    return {};
  }
  rules_added_ = false;
  // Expiring ones are made, expired, if missing: only deletion finds some gone.
  Status s = RemovePortRules(rules_, address_.subnet.Gateway(), removal_);
  // Some were gone (removed by hand, or the tables flushed): remove the rest one by one.
  if (!s && s.error().err == ENOENT) {
    auto piecewise = RemoveStalePortRules(rules_, address_.subnet.Gateway());
    s = piecewise ? Status() : Status(std::move(piecewise).error());
  }
  if (!s) {
    // The lease file names what is left, for brig gc (and for whoever reclaims it).
    lease_.Abandon();
    return std::move(s).error().Wrap("network teardown");
  }
  lease_.Release();
  return {};
}

std::string SandboxNet::RecordEntry() const {
  const ListenerPorts& l = rules_.listeners;
  return std::to_string(netns_.ino) + "," + rules_.id + "," + rules_.port + "," +
         rules_.addr.Str() + "," + address_.subnet.Gateway().Str() + "," + lease_.path() + "," +
         std::to_string(l.http) + "," + std::to_string(l.https) + "," +
         std::to_string(l.dns_tcp) + "," + std::to_string(l.dns_udp) + "," +
         std::to_string(netns_.cookie);
}

Result<NetEntry> ParseEntry(const std::string& value) {
  auto f = SplitComma(value);
  auto bad = [&] { return Fail("net", value, "malformed record entry", ErrorKind::kInternal); };
  // Ten fields from a brig that did not note the namespace's cookie.
  if (f.size() != 10 && f.size() != 11) return bad();
  NetEntry e;
  e.netns = f[0];
  std::optional<uint64_t> ino = ParseNumber(f[0]);
  std::optional<uint64_t> cookie = f.size() == 11 ? ParseNumber(f[10]) : uint64_t{0};
  if (!ino || !cookie) return bad();
  e.ns = {*ino, *cookie};
  e.rules.id = f[1];
  e.rules.port = f[2];
  e.rules.addr = BRIG_TRY(ParseIpv4(f[3]));
  e.rules.mac = MacFor(e.rules.addr);
  e.gateway = BRIG_TRY(ParseIpv4(f[4]));
  e.lease = f[5];
  uint16_t* ports[] = {&e.rules.listeners.http, &e.rules.listeners.https,
                       &e.rules.listeners.dns_tcp, &e.rules.listeners.dns_udp};
  for (int i = 0; i < 4; ++i) {
    const std::string& p = f[6 + i];
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(p) > 65535) {
      return bad();
    }
    *ports[i] = static_cast<uint16_t>(std::stoul(p));
  }
  if (e.rules.port.rfind(kPortPrefix, 0) != 0 || e.rules.port.size() >= 16 ||
      e.lease.rfind(StateDir() + "/" + e.netns + "/addr/", 0) != 0 ||
      e.lease.find("/..") != std::string::npos) {
    return bad();
  }
  return e;
}

Result<std::vector<std::string>> RemoveStaleNet(const std::string& id, const std::string& value) {
  NetEntry e = BRIG_TRY(ParseEntry(value));
  if (e.rules.id != id) return Fail("net", value, "belongs to " + e.rules.id + ", not " + id);
  NetnsKey here = BRIG_TRY(CurrentNetns());
  if (!here.Matches(e.ns)) {
    return Fail("net", e.rules.port, "in network namespace " + e.netns + ", not this one (" +
                                         std::to_string(here.ino) + "): run brig gc there");
  }
  std::vector<std::string> removed;
  // The port's elements and link are this sandbox's alone.
  if (BRIG_TRY(RemoveStalePortRules(e.rules, e.gateway, NFPROTO_BRIDGE))) {
    removed.push_back("nftables elements of port " + e.rules.port);
  }
  if (BRIG_TRY(DeleteLinkIfExists(e.rules.port))) removed.push_back("link " + e.rules.port);
  // The address's may since be another sandbox's: decide holding its lease, so that none
  // can take it meanwhile. A live holder removed these leftovers when it took it.
  auto lease = LockLease(e.lease);
  if (!lease) {
    if (lease.error().err == EWOULDBLOCK) return removed;
    return std::move(lease).error();
  }
  std::string holder = BRIG_TRY(util::ReadFd(lease->get(), 0));
  if (!holder.empty() && holder != value) return removed;  // another dead run's: its gc
  if (BRIG_TRY(RemoveStalePortRules(e.rules, e.gateway, NFPROTO_INET))) {
    removed.push_back("nftables elements of " + e.rules.addr.Str());
  }
  if (unlink(e.lease.c_str()) < 0 && errno != ENOENT) return SysError("unlink", e.lease);
  if (!holder.empty()) removed.push_back("address " + e.rules.addr.Str());
  return removed;
}

Result<std::vector<std::string>> DropEmptyLeases(const NetnsKey& here) {
  std::string dir = DirOf(here.ino) + "/addr";
  std::vector<std::string> removed;
  BRIG_TRY(util::DropUnheld(dir, &removed, [&](const std::string& name) {
    struct stat st;
    return stat((dir + "/" + name).c_str(), &st) != 0 || st.st_size != 0;
  }));
  return removed;
}

std::vector<NetnsKey> StateDirs() {
  std::vector<NetnsKey> out;
  DIR* d = opendir(StateDir().c_str());
  if (!d) return out;
  while (struct dirent* de = readdir(d)) {
    std::optional<uint64_t> ino = ParseNumber(de->d_name);
    if (!ino) continue;
    auto cookie = NotedCookie(DirOf(*ino));
    out.push_back({*ino, cookie ? *cookie : 0});
  }
  closedir(d);
  return out;
}

Result<std::string> RemoveStateDir(const NetnsKey& gone) {
  std::string dir = DirOf(gone.ino), lock_path = dir + "/lock";
  sys::UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock) {
    if (errno == ENOENT) return std::string();
    return SysError("open", lock_path);
  }
  if (flock(lock.get(), LOCK_EX | LOCK_NB) < 0) return std::string();  // a brig is in it
  // Under the lock: a namespace that took the inode since notes its own cookie first.
  if (BRIG_TRY(NotedCookie(dir)) != gone.cookie) return std::string();
  for (const char* sub : {"/addr", "/ports"}) {
    if (!BRIG_TRY(util::DropUnheld(dir + sub))) return std::string();
    // A lease or a port taken meanwhile keeps the directory (ENOTEMPTY).
    if (rmdir((dir + sub).c_str()) < 0 && errno != ENOENT) {
      if (errno == ENOTEMPTY) return std::string();
      return SysError("rmdir", dir + sub);
    }
  }
  for (const char* file : {"/removal", "/netns"}) {
    std::string path = dir + file;
    if (unlink(path.c_str()) < 0 && errno != ENOENT) return SysError("unlink", path);
  }
  // The lock goes last: a brig waiting for it sees it unlinked and makes the directory anew.
  if (unlink(lock_path.c_str()) < 0 && errno != ENOENT) return SysError("unlink", lock_path);
  if (rmdir(dir.c_str()) < 0) {
    if (errno == ENOENT || errno == ENOTEMPTY) return std::string();  // removed, or in use
    return SysError("rmdir", dir);
  }
  return dir;
}

}  // namespace brig::net
