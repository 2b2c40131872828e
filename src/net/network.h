// A sandbox's network interface (postures allowlist and open): the host bridge and brig's
// base rules (made once, under a lock), an address lease, the supervisor's listeners, the
// sandbox's own rules, and its veth. Everything is noted in the sandbox record before it
// is made, so brig gc can remove it after a crash.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "brig/result.h"
#include "net/addr.h"
#include "net/link.h"
#include "net/listeners.h"
#include "net/netns.h"
#include "net/nft.h"
#include "state/record.h"
#include "util/dirs.h"

namespace brig::net {

inline constexpr char kDefaultSubnet[] = "10.213.0.0/16";
inline std::string StateDir() { return util::RunDir() + "/net"; }

// What brig init needs to configure the sandbox side.
struct SandboxAddress {
  Ipv4 addr;
  Subnet subnet;
};

// A sandbox's network as its session (container/session.h) sees it, whichever way it is
// made: SandboxNet's veth into brig's bridge (root), or SealedNet's namespace served from
// inside (an ordinary user; net/sealed_net.h).
class Network {
 public:
  virtual ~Network() = default;
  virtual const SandboxAddress& address() const = 0;
  // The resolver's and proxy's listeners (for SealedNet, once attached).
  virtual const Listeners& listeners() const = 0;
  // The one client address the services serve (0: any that reaches the listeners).
  virtual uint32_t peer() const = 0;
  // After clone, while init waits: what is made in init's network namespace, `netns`.
  virtual Status Attach(int netns) = 0;
  // Once the sandbox has ended: what it left outside its namespace.
  virtual Status Teardown() = 0;
  // The sandbox's elements in brig's host tables, for the manifest (null: it has none).
  virtual const PortRules* port_rules() const { return nullptr; }
};

class SandboxNet final : public Network {
 public:
  // Before clone. Refuses a subnet that collides with the host's routes.
  static Result<std::unique_ptr<SandboxNet>> Prepare(const std::string& id, const Subnet& subnet,
                                                     state::Record& record);
  SandboxNet(const SandboxNet&) = delete;
  SandboxNet& operator=(const SandboxNet&) = delete;
  ~SandboxNet() override { (void)Teardown(); }

  const SandboxAddress& address() const override { return address_; }
  const Listeners& listeners() const override { return listeners_; }
  uint32_t peer() const override { return address_.addr.v; }
  // The sandbox's set elements as installed (net/nft.h).
  const PortRules* port_rules() const override { return &rules_; }
  // The veth, its sandbox end made in init's namespace.
  Status Attach(int netns) override;
  // Its rules out, its address free. The veth goes with the sandbox's network namespace.
  // On failure the lease file stays, naming what is left.
  Status Teardown() override;
  // Its entry in the sandbox record (and its lease file):
  // "NETNS,ID,PORT,ADDR,GATEWAY,LEASE,HTTP,HTTPS,DNSTCP,DNSUDP,COOKIE", NETNS and COOKIE
  // the inode and cookie of the network namespace brig runs in (netns.h).
  std::string RecordEntry() const;

 private:
  SandboxNet() = default;
  SandboxAddress address_;
  sys::UniqueFd port_slot_;  // net/addr.h's TakePortSlot
  Lease lease_;
  Listeners listeners_;
  PortRules rules_;
  NetnsKey netns_;
  int bridge_index_ = 0;
  Removal removal_ = Removal::kDelete;
  bool rules_added_ = false;
};

struct NetEntry {
  std::string netns, lease;  // netns: the inode, as it names brig's state directory
  NetnsKey ns;               // cookie 0 in an entry of a brig that did not write it
  PortRules rules;
  Ipv4 gateway;
};
// Parses a record entry, refusing anything brig would not have written. Pure.
Result<NetEntry> ParseEntry(const std::string& value);

// brig gc's removal of what a record's "net" entry names: the sandbox's rules, its veth if
// its namespace lingers, and its address lease. Returns a line for each thing removed. An
// entry of another network namespace is refused: gc must run where the sandbox ran.
Result<std::vector<std::string>> RemoveStaleNet(const std::string& id, const std::string& value);

// Removes this namespace's address leases that no one holds and that note nothing: a brig
// killed between taking an address and noting it (Lease::Note) made nothing there, and no
// record names the file. `here` is this namespace. Returns their paths.
Result<std::vector<std::string>> DropEmptyLeases(const NetnsKey& here);

// brig's per-namespace state directories (StateDir()/INODE), each with the cookie it notes
// (0 if it notes none).
std::vector<NetnsKey> StateDirs();
// Removes the state directory of namespace `gone`, which the caller found gone, unless it
// now belongs to a namespace that took the inode since, or a lease in it is held. Returns
// its path if it removed it, "" if not.
Result<std::string> RemoveStateDir(const NetnsKey& gone);

}  // namespace brig::net
