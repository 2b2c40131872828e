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

// Creates brig's tables if they are missing. Call under the network lock.
Status EnsureBaseRules();

// The script of brig's base tables, as EnsureBaseRules installs it.
std::string BaseRules();

// The elements of `set` (one of brig's tables' sets) as `nft list set` prints them: fields
// joined by " . ", a map's data after " : ". For the manifest (manifest/manifest.h).
std::vector<std::string> RenderElements(const SetElements& set);

// One sandbox's rules are set elements only, added and removed in one batch each
// (nft_batch.h). Pure; unit-tested.
std::vector<SetElements> PortElements(const PortRules& r, Ipv4 gateway);
Status AddPortRules(const PortRules& r, Ipv4 gateway);
Status RemovePortRules(const PortRules& r, Ipv4 gateway);
// brig gc: removes whichever of them still exist, those of `family` only if it is not 0
// (NFPROTO_BRIDGE: the port's, keyed by its name; NFPROTO_INET: the address's). Returns
// whether any did.
Result<bool> RemoveStalePortRules(const PortRules& r, Ipv4 gateway, uint16_t family = 0);

}  // namespace brig::net
