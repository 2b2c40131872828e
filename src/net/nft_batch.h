// Set elements of brig's nftables tables as one netlink batch (libnftnl + libmnl): one
// kernel transaction, no ruleset cache to fetch, no script to parse. A sandbox's rules are
// only such elements, so adding and removing them stays cheap however many sandboxes
// run (libnftables spent several milliseconds a call on its cache and parser here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::net {

// Elements of one set or map, keys and data already in the kernel's layout (each field
// of a concatenation padded to 4 bytes, network byte order).
struct SetElements {
  uint16_t family;  // NFPROTO_INET, NFPROTO_BRIDGE
  std::string table, set;
  struct Elem {
    std::string key, data;  // data empty for a set
  };
  std::vector<Elem> elems;
};

// Adds (or deletes) every element in one transaction: all or nothing.
Status ApplyElements(bool add, const std::vector<SetElements>& sets);

// Whether table `name` of `family` exists.
Result<bool> TableExists(uint16_t family, const std::string& name);

// Key fields in the kernel's layout.
std::string IfnameField(const std::string& name);  // 16 bytes, NUL-padded
std::string EtherField(const uint8_t mac[6]);        // 6 bytes + 2 of padding
std::string Ipv4Field(uint32_t host_order);          // 4 bytes, network order
std::string PortField(uint16_t port);                // 2 bytes, network order, + 2 of padding
std::string ProtoField(uint8_t proto);               // 1 byte + 3 of padding
std::string PortData(uint16_t port);                 // 2 bytes, network order (map data)

}  // namespace brig::net
