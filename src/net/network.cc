#include "net/network.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include <netinet/in.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>

#include "util/files.h"

namespace brig::net {
namespace {

std::string PortName(const std::string& id) { return kPortPrefix + id.substr(id.find('-') + 1); }

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

}  // namespace

Result<uint64_t> NetnsId() {
  struct stat st;
  if (stat("/proc/self/ns/net", &st) < 0) return SysError("stat", "/proc/self/ns/net");
  return static_cast<uint64_t>(st.st_ino);
}

Result<std::unique_ptr<SandboxNet>> SandboxNet::Prepare(const std::string& id,
                                                        const Subnet& subnet,
                                                        state::Record& record) {
  uint64_t ns = BRIG_TRY(NetnsId());
  std::string dir = std::string(kStateDir) + "/" + std::to_string(ns);
  BRIG_TRY(util::MakeDirs(dir + "/addr"));
  std::unique_ptr<SandboxNet> n(new SandboxNet());
  n->netns_ = ns;
  {
    // One brig at a time makes the bridge and the base tables.
    std::string lock_path = dir + "/lock";
    sys::UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock) return SysError("open", lock_path);
    if (flock(lock.get(), LOCK_EX) < 0) return SysError("flock", lock_path);
    BRIG_TRY_CTX(CheckNoRouteOverlap(subnet, kBridge), "network");
    n->bridge_index_ = BRIG_TRY_CTX(EnsureBridge(kBridge, subnet), "network");
    BRIG_TRY_CTX(EnsureBaseRules(), "network");
  }
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
  BRIG_TRY_CTX(AddPortRules(n->rules_, subnet.Gateway()), "network");
  n->rules_added_ = true;
  return n;
}

Status SandboxNet::Attach(pid_t init) {
  std::string path = "/proc/" + std::to_string(init) + "/ns/net";
  sys::UniqueFd ns(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return SysError("open", path);
  BRIG_TRY_CTX(CreateSandboxVeth(rules_.port, bridge_index_, ns.get(), rules_.mac), "network");
  return {};
}

Status SandboxNet::Teardown() {
  if (!rules_added_) {
    lease_.Release();
    return {};
  }
  rules_added_ = false;
  Status s = RemovePortRules(rules_, address_.subnet.Gateway());
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
  return std::to_string(netns_) + "," + rules_.id + "," + rules_.port + "," +
         rules_.addr.Str() + "," + address_.subnet.Gateway().Str() + "," + lease_.path() + "," +
         std::to_string(l.http) + "," + std::to_string(l.https) + "," +
         std::to_string(l.dns_tcp) + "," + std::to_string(l.dns_udp);
}

Result<NetEntry> ParseEntry(const std::string& value) {
  auto f = SplitComma(value);
  auto bad = [&] { return Fail("net", value, "malformed record entry", ErrorKind::kInternal); };
  if (f.size() != 10) return bad();
  NetEntry e;
  e.netns = f[0];
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
      e.lease.rfind(std::string(kStateDir) + "/" + e.netns + "/addr/", 0) != 0 ||
      e.lease.find("/..") != std::string::npos) {
    return bad();
  }
  return e;
}

Result<std::vector<std::string>> RemoveStaleNet(const std::string& id, const std::string& value) {
  NetEntry e = BRIG_TRY(ParseEntry(value));
  if (e.rules.id != id) return Fail("net", value, "belongs to " + e.rules.id + ", not " + id);
  uint64_t ns = BRIG_TRY(NetnsId());
  if (e.netns != std::to_string(ns)) {
    return Fail("net", e.rules.port, "in network namespace " + e.netns + ", not this one (" +
                                         std::to_string(ns) + "): run brig gc there");
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

}  // namespace brig::net
