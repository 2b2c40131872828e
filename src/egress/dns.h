// DNS messages (RFC 1035) for the per-sandbox resolver: the sandbox's queries, parsed
// strictly, and brig's replies to them, which copy the question byte for byte (case too:
// clients that randomise it, RFC draft "0x20", check the echo); then the queries brig
// itself sends upstream, rebuilt from a normalised name so that no byte of the sandbox's
// own message ever leaves the host, and the upstream's replies, read for the addresses at
// the end of the question's CNAME chain. Pure: no sockets. Unit-tested and fuzzed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::egress {

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypeAaaa = 28;
inline constexpr uint16_t kClassIn = 1;

inline constexpr uint8_t kRcodeNoError = 0;
inline constexpr uint8_t kRcodeServFail = 2;
inline constexpr uint8_t kRcodeNxDomain = 3;
inline constexpr uint8_t kRcodeRefused = 5;

// The most a UDP reply may hold for a client without EDNS (RFC 1035 4.2.1). brig's replies
// never exceed it: an address answer carries only as many records as fit.
inline constexpr size_t kMaxUdpReply = 512;
// The longest CNAME chain ParseAddressAnswer follows.
inline constexpr size_t kMaxCnameChain = 16;

using Ipv4Bytes = std::array<uint8_t, 4>;
using Ipv6Bytes = std::array<uint8_t, 16>;

// A query from the sandbox: a header with QR clear, opcode QUERY, exactly one question and
// no answer or authority records (additional records, EDNS's OPT, are allowed and not read).
struct DnsQuery {
  uint16_t id = 0;
  bool rd = false;  // recursion desired: copied into the reply
  bool cd = false;  // checking disabled: copied into the reply (RFC 4035 3.2.2)
  // The QNAME through NormalizeName. Empty when it is none of the names that accepts (the
  // root, "_srv._tcp.x", a label holding a dot or binary bytes...): no allowlist allows it.
  std::string name;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  size_t question_end = 0;  // where the question ends in the message: its bytes are [12, this)
};

// Refuses replies, other opcodes, a question count other than one, truncated input, and
// compression pointers: the question is the first name in its message, so a pointer in it
// could only point into the header. No client sends one, and refusing it means a query's
// name is read in one forward pass with nothing to bound.
Result<DnsQuery> ParseQuery(std::string_view msg);

// Replies to `q`, which was parsed from `raw`: the same id, RD and CD, QR and RA set, the
// question copied from `raw`, no authority or additional records (so no EDNS either, which
// RFC 6891 7 allows). Each is at most kMaxUdpReply bytes; empty if `raw` is too short to be
// the message `q` came from.
std::string BuildNxdomain(const DnsQuery& q, std::string_view raw);
std::string BuildRefused(const DnsQuery& q, std::string_view raw);
std::string BuildServfail(const DnsQuery& q, std::string_view raw);
// NOERROR without answers ("no data"): for the types brig does not answer.
std::string BuildEmpty(const DnsQuery& q, std::string_view raw);
// NOERROR with one A (or AAAA) record for each address, in order, as many as fit in
// kMaxUdpReply. The records' type follows the addresses, not q.qtype; a TTL above 2^31-1
// is sent as 2^31-1 (RFC 2181 8).
std::string BuildAddressAnswer(const DnsQuery& q, std::string_view raw,
                               const std::vector<Ipv4Bytes>& a, uint32_t ttl);
std::string BuildAddressAnswer(const DnsQuery& q, std::string_view raw,
                               const std::vector<Ipv6Bytes>& aaaa, uint32_t ttl);

// A query for the upstream resolver: RD set, class IN, an EDNS(0) OPT record offering 1232
// bytes (the 2020 DNS flag day's size). Empty if NormalizeName refuses `name`.
std::string BuildQuery(uint16_t id, std::string_view name, uint16_t qtype);

// What the upstream said about a name.
struct DnsAnswer {
  uint8_t rcode = 0;
  // TC was set: nothing was read past the question, ask again over TCP.
  bool truncated = false;
  // The addresses of the asked type (A or AAAA) owned by the asked name or a name of its
  // CNAME chain. Records owned by any other name are ignored: they were not asked for.
  std::vector<Ipv4Bytes> a;
  std::vector<Ipv6Bytes> aaaa;
  // The chain's targets in order, normalised. They are for the audit: brig's resolver never
  // shows them to the sandbox, which gets one A record for the name it asked (service.h).
  std::vector<std::string> cnames;
  // The smallest TTL of the records used; 0 without any.
  uint32_t ttl = 0;
};

// Reads the upstream's reply to the query BuildQuery(id, name, qtype) made: the id, QR,
// and the question (name compared case-insensitively, class IN) must match. With an rcode
// other than NOERROR, or TC, only the header and question are read. The answer section may
// use compression; pointers must point before the name part that holds them (as every
// compressor writes them), which bounds any loop, and a name takes at most 127 jumps. A
// CNAME whose target is no host name, two CNAMEs for a name, a loop, or a chain longer
// than kMaxCnameChain is an error; the authority and additional sections are not read.
Result<DnsAnswer> ParseAddressAnswer(std::string_view msg, uint16_t id, std::string_view name,
                                     uint16_t qtype);

// DNS over TCP (RFC 1035 4.2.2): every message preceded by its length, 2 bytes big-endian.
// Empty if `msg` is longer than 65535 bytes.
std::string FrameTcp(std::string_view msg);
// The first message of a TCP stream, or nullopt until all of it has arrived. It takes up
// 2 + size() bytes of `stream`.
std::optional<std::string_view> NextTcpMessage(std::string_view stream);

}  // namespace brig::egress
