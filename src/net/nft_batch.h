// Set elements of brig's nftables tables as one netlink batch (libnftnl + libmnl): one
// kernel transaction, no ruleset cache to fetch, no script to parse. A sandbox's rules are
// only such elements, so adding and removing them stays cheap however many sandboxes
// run (libnftables spent several milliseconds a call on its cache and parser here).
#pragma once

#include <cstdint>
#include <optional>
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

// What a batch does to the elements it names.
enum class ElementOp {
  kAdd,     // makes them; fails with EEXIST if one is there
  kExpire,  // updates them to expire 1 ms ahead (in a set with timeouts), made if missing
  kDelete,  // removes them; fails with ENOENT if one is missing
};

// Applies `op` to every element in one transaction: all or nothing. With `timeout_ms` not 0
// (kAdd, kExpire), the elements get that timeout: their set must have been made with
// timeouts.
Status ApplyElements(ElementOp op, const std::vector<SetElements>& sets, uint64_t timeout_ms = 0);

// The flags (NFT_SET_*) of set `set` in `family`'s table `table`; nullopt if either is
// missing.
Result<std::optional<uint32_t>> SetFlags(uint16_t family, const std::string& table,
                                         const std::string& set);

// The expiry, in ms from now, of the element of `one` (a single element): nullopt if it has
// none; 0 if it is missing (an expired element is, to the kernel).
Result<std::optional<uint64_t>> ElementExpiry(const SetElements& one);

// Key fields in the kernel's layout.
std::string IfnameField(const std::string& name);  // 16 bytes, NUL-padded
std::string EtherField(const uint8_t mac[6]);        // 6 bytes + 2 of padding
std::string Ipv4Field(uint32_t host_order);          // 4 bytes, network order
std::string PortField(uint16_t port);                // 2 bytes, network order, + 2 of padding
std::string ProtoField(uint8_t proto);               // 1 byte + 3 of padding
std::string PortData(uint16_t port);                 // 2 bytes, network order (map data)

}  // namespace brig::net
