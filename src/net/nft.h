// brig's nftables rules (libnftables), in tables of its own: `inet brig` and `bridge brig`.
// Tables, chains and rules brig did not create are never touched. Each sandbox's rules
// go in and out in one transaction each.
//
// The walls, for every port of the bridge:
//   bridge brig: a port's frames must carry its own MAC and IPv4 address; ARP only for
//     the gateway; nothing but IPv4 and ARP (so no IPv6); no frame from one port to
//     another (lateral traffic is rejected).
//   inet brig: TCP 80, 443 and TCP/UDP 53 from a sandbox address are redirected to that
//     sandbox's own supervisor listeners, and only those redirected connections reach
//     the host; everything else from the bridge, to the host or anywhere beyond it, is
//     rejected at once (TCP reset, ICMP administratively prohibited), in prerouting, so
//     whether the host forwards makes no difference.
#pragma once

#include <cstdint>
#include <string>

#include "brig/result.h"
#include "net/link.h"

namespace brig::net {

inline constexpr char kBridge[] = "brig0";
// Host ends of sandbox veths: the prefix and the sandbox id's 12 hex digits.
inline constexpr char kPortPrefix[] = "bv";

// The supervisor's listeners for one sandbox (ports on the gateway address).
struct ListenerPorts {
  uint16_t http = 0, https = 0, dns_tcp = 0, dns_udp = 0;
};

struct PortRules {
  std::string id;    // the sandbox id: its chain is "sb-<12 hex>"
  std::string port;  // the host end of its veth
  Ipv4 addr;
  Mac mac;
  ListenerPorts listeners;
};

// Runs one nft script as a single transaction.
Status RunNft(const std::string& script);

// Creates brig's tables if they are missing. Call under the network lock.
Status EnsureBaseRules();
// The scripts that add and remove one sandbox's rules (pure; unit-tested).
std::string AddPortScript(const PortRules& r, const Subnet& subnet);
std::string RemovePortScript(const PortRules& r);
// Removes what AddPortScript added, of what still exists (brig gc). Returns whether any.
Result<bool> RemovePortRules(const PortRules& r);

}  // namespace brig::net
