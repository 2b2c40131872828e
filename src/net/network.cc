#include "net/network.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

namespace brig::net {
namespace {

Status MakeDirs(const std::string& dir) {
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    std::string part = dir.substr(0, slash);
    if (mkdir(part.c_str(), 0700) < 0 && errno != EEXIST) return SysError("mkdir", part);
  }
  return {};
}

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
  BRIG_TRY(MakeDirs(dir + "/addr"));
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
  n->address_ = {n->lease_.addr(), subnet};
  n->listeners_ = BRIG_TRY_CTX(Listeners::Open(subnet.Gateway()), "network");
  n->rules_ = {id, PortName(id), n->address_.addr, MacFor(n->address_.addr),
               n->listeners_.ports()};
  BRIG_TRY(record.Add("net", n->RecordEntry()));
  BRIG_TRY_CTX(RunNft(AddPortScript(n->rules_, subnet)), "network");
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

void SandboxNet::Teardown() {
  if (rules_added_) {
    (void)RemovePortRules(rules_);
    rules_added_ = false;
  }
  lease_.Release();
}

std::string SandboxNet::RecordEntry() const {
  const ListenerPorts& l = rules_.listeners;
  return std::to_string(netns_) + "," + rules_.id + "," + rules_.port + "," +
         rules_.addr.Str() + "," + lease_.path() + "," + std::to_string(l.http) + "," +
         std::to_string(l.https) + "," + std::to_string(l.dns_tcp) + "," +
         std::to_string(l.dns_udp);
}

Result<std::vector<std::string>> RemoveStaleNet(const std::string& value) {
  auto f = SplitComma(value);
  auto bad = [&] { return Fail("net", value, "malformed record entry", ErrorKind::kInternal); };
  if (f.size() != 9) return bad();
  uint64_t ns = BRIG_TRY(NetnsId());
  if (f[0] != std::to_string(ns)) {
    return Fail("net", f[2], "in network namespace " + f[0] + ", not this one (" +
                                 std::to_string(ns) + "): run brig gc there");
  }
  PortRules r;
  r.id = f[1];
  r.port = f[2];
  r.addr = BRIG_TRY(ParseIpv4(f[3]));
  r.mac = MacFor(r.addr);
  uint16_t* ports[] = {&r.listeners.http, &r.listeners.https, &r.listeners.dns_tcp,
                       &r.listeners.dns_udp};
  for (int i = 0; i < 4; ++i) {
    const std::string& p = f[5 + i];
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
      return bad();
    }
    *ports[i] = static_cast<uint16_t>(std::stoul(p));
  }
  if (r.port.rfind(kPortPrefix, 0) != 0 ||
      f[4].rfind(std::string(kStateDir) + "/" + f[0] + "/addr/", 0) != 0) {
    return bad();
  }
  std::vector<std::string> removed;
  if (BRIG_TRY(RemovePortRules(r))) removed.push_back("nftables rules of " + r.addr.Str());
  if (BRIG_TRY(DeleteLinkIfExists(r.port))) removed.push_back("link " + r.port);
  if (BRIG_TRY(RemoveStaleLease(f[4]))) removed.push_back("address " + r.addr.Str());
  return removed;
}

}  // namespace brig::net
