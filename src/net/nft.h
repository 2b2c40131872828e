// brig's nftables rules (libnftables), in tables of its own: `inet brig` and `bridge brig`.
// Tables, chains and rules brig did not create are never touched. Each sandbox's rules
// go in and out in one transaction each.
//
// The walls, for every port of the bridge:
//   bridge brig: a port's frames must carry its own MAC and IPv4 address; ARP only for
//     the gateway; nothing but IPv4 and ARP (so no IPv6); no frame from one port to
//     another. Sandboxes have /32 addresses and send everything to the gateway, so
//     traffic for another sandbox arrives at the host, where the inet table rejects it.
//   inet brig: TCP 80, 443 and TCP/UDP 53 from a sandbox address are redirected to that
//     sandbox's own supervisor listeners, and only those redirected connections reach
//     the host; everything else from the bridge, to the host or anywhere beyond it, is
//     rejected at once (TCP reset, ICMP administratively prohibited), in prerouting, so
//     whether the host forwards makes no difference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brig/result.h"
#include "net/link.h"
#include "net/nft_batch.h"

namespace brig::net {

inline constexpr char kBridge[] = "brig0";
// Host ends of sandbox veths: the prefix and the sandbox id's 12 hex digits.
inline constexpr char kPortPrefix[] = "bv";

// The supervisor's listeners for one sandbox (ports on the gateway address).
struct ListenerPorts {
  uint16_t http = 0, https = 0, dns_tcp = 0, dns_udp = 0;
};

struct PortRules {
  std::string id;    // the sandbox id
  std::string port;  // the host end of its veth
  Ipv4 addr;
  Mac mac;
  ListenerPorts listeners;
};

// Runs one nft script (libnftables) as a single transaction: the base tables.
Status RunNft(const std::string& script);

// How a sandbox's elements leave the sets when it ends.
enum class Removal {
  // Updated to expire at the next tick: a transaction that frees nothing, so neither it nor
  // the close of brig's netlink socket waits for an RCU grace period. An expired element
  // matches no packet and is not listed; the set's garbage collection frees it within a
  // second. Needs a kernel that updates an element's expiry (older ones ignore it).
  kExpire,
  // Deleted: the kernel frees them after a grace period, and closing the socket that
  // deleted them (brig's exit) waits for it, ~10 ms.
  kDelete,
};

// The timeout a sandbox's elements get under Removal::kExpire: never reached.
inline constexpr uint64_t kElementTimeoutMs = 36500ull * 24 * 3600 * 1000;

// Creates brig's tables if they are missing (their sets made with timeouts) and says how
// this host's elements are removed: kExpire if the sets have timeouts and the kernel
// updates an element's expiry (probed once, when the tables are made, and noted in
// `note`, a file), kDelete otherwise (tables an older brig made, or an older kernel). Call
// under the network lock.
Result<Removal> EnsureBaseRules(const std::string& note);

// The script of brig's base tables, as EnsureBaseRules installs it.
std::string BaseRules();

// The elements of `set` (one of brig's tables' sets) as `nft list set` prints them: fields
// joined by " . ", a map's data after " : ". For the manifest (manifest/manifest.h).
std::vector<std::string> RenderElements(const SetElements& set);

// One sandbox's rules are set elements only, added and removed in one batch each
// (nft_batch.h). Pure; unit-tested.
std::vector<SetElements> PortElements(const PortRules& r, Ipv4 gateway);
Status AddPortRules(const PortRules& r, Ipv4 gateway, Removal removal);
Status RemovePortRules(const PortRules& r, Ipv4 gateway, Removal removal);
// brig gc: removes whichever of them still exist, those of `family` only if it is not 0
// (NFPROTO_BRIDGE: the port's, keyed by its name; NFPROTO_INET: the address's). Returns
// whether any did.
Result<bool> RemoveStalePortRules(const PortRules& r, Ipv4 gateway, uint16_t family = 0);

}  // namespace brig::net
