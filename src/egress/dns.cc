// DNS wire format. Every read is checked against the message's size before it is made, and
// names are read by ReadName alone.
#include "egress/dns.h"

#include <algorithm>
#include <limits>

#include "egress/allowlist.h"

namespace brig::egress {
namespace {

constexpr size_t kHeaderSize = 12;
constexpr size_t kMaxWireName = 255;
// A 255-byte name has at most 127 labels; a name that jumps more often than that is only
// revisiting. The pointer rule in ReadName already ends every walk; this bounds its cost.
constexpr int kMaxJumps = 127;
constexpr size_t kMaxQuestion = kMaxWireName + 4;

constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagTc = 0x0200;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;
constexpr uint16_t kFlagCd = 0x0010;
constexpr uint16_t kTypeOpt = 41;
constexpr uint16_t kEdnsPayload = 1232;

uint8_t Byte(std::string_view m, size_t i) { return static_cast<uint8_t>(m[i]); }
uint16_t U16(std::string_view m, size_t i) {
  return static_cast<uint16_t>(Byte(m, i) << 8 | Byte(m, i + 1));
}
uint32_t U32(std::string_view m, size_t i) {
  return static_cast<uint32_t>(U16(m, i)) << 16 | U16(m, i + 2);
}
int Opcode(uint16_t flags) { return (flags >> 11) & 0xf; }

void PutU16(std::string& s, uint16_t v) {
  s += static_cast<char>(v >> 8);
  s += static_cast<char>(v & 0xff);
}
void PutU32(std::string& s, uint32_t v) {
  PutU16(s, static_cast<uint16_t>(v >> 16));
  PutU16(s, static_cast<uint16_t>(v & 0xffff));
}

struct Name {
  std::string text;  // the labels joined by dots, in lower case
  bool host = true;  // every label is letters, digits and hyphens, so `text` means what it says
};

// Reads the name at `pos` into `name` and moves `pos` past it (past its first pointer if it
// has one). Returns why the name is malformed, or an empty string. A pointer must point
// before `limit`, the start of the part of the name being read; so every jump goes further
// back than the last, and the walk ends whatever the message holds.
std::string ReadName(std::string_view m, size_t& pos, bool pointers, Name& name) {
  name = {};
  size_t p = pos;
  size_t limit = pos;
  size_t wire = 1;  // the root's length byte
  int jumps = 0;
  bool jumped = false;
  for (;;) {
    if (p >= m.size()) return "name runs past the end of the message";
    uint8_t len = Byte(m, p);
    if ((len & 0xc0) == 0xc0) {
      if (!pointers) return "compression pointer in a query's question";
      if (p + 1 >= m.size()) return "name runs past the end of the message";
      size_t target = static_cast<size_t>(len & 0x3f) << 8 | Byte(m, p + 1);
      if (target >= limit) return "compression pointer that does not point backwards";
      if (++jumps > kMaxJumps) return "more than 127 compression pointers in a name";
      if (!jumped) pos = p + 2;
      jumped = true;
      p = limit = target;
      continue;
    }
    if ((len & 0xc0) != 0) return "label type other than a plain label or a pointer";
    if (len == 0) break;
    wire += 1 + len;
    if (wire > kMaxWireName) return "name longer than 255 bytes";
    if (len > m.size() - p - 1) return "name runs past the end of the message";
    if (!name.text.empty()) name.text += '.';
    for (size_t i = p + 1; i <= p + len; ++i) {
      char c = m[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      bool ldh = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      if (!ldh) name.host = false;
      name.text += c;
    }
    p += 1 + len;
  }
  if (!jumped) pos = p + 1;
  if (name.text.empty()) name.host = false;  // the root is no host
  return {};
}

// The header and question of a reply to `q`; empty if `raw` cannot be its message.
std::string ReplyHead(const DnsQuery& q, std::string_view raw, uint8_t rcode, uint16_t ancount) {
  if (q.question_end < kHeaderSize + 5 || q.question_end > raw.size() ||
      q.question_end > kHeaderSize + kMaxQuestion) {
    return {};
  }
  std::string r;
  r.reserve(kMaxUdpReply);
  PutU16(r, q.id);
  PutU16(r, static_cast<uint16_t>(kFlagQr | kFlagRa | (q.rd ? kFlagRd : 0) | (q.cd ? kFlagCd : 0) |
                                  (rcode & 0xf)));
  PutU16(r, 1);
  PutU16(r, ancount);
  PutU16(r, 0);
  PutU16(r, 0);
  r.append(raw.data() + kHeaderSize, q.question_end - kHeaderSize);
  return r;
}

template <size_t N>
std::string AddressAnswer(const DnsQuery& q, std::string_view raw,
                          const std::vector<std::array<uint8_t, N>>& addrs, uint16_t type,
                          uint32_t ttl) {
  // Each record: a pointer to the question's name (offset 12), type, class, TTL, length.
  constexpr size_t kRecord = 2 + 2 + 2 + 4 + 2 + N;
  size_t room = q.question_end < kMaxUdpReply ? (kMaxUdpReply - q.question_end) / kRecord : 0;
  size_t n = std::min(addrs.size(), room);
  std::string r = ReplyHead(q, raw, kRcodeNoError, static_cast<uint16_t>(n));
  if (r.empty()) return r;
  ttl = std::min<uint32_t>(ttl, std::numeric_limits<int32_t>::max());
  for (size_t i = 0; i < n; ++i) {
    PutU16(r, 0xc000 | kHeaderSize);
    PutU16(r, type);
    PutU16(r, kClassIn);
    PutU32(r, ttl);
    PutU16(r, N);
    r.append(reinterpret_cast<const char*>(addrs[i].data()), N);
  }
  return r;
}

struct Record {
  Name owner;
  uint16_t type = 0, cls = 0;
  uint32_t ttl = 0;
  size_t rdata = 0, rdlen = 0;
};

// Reads the answer section starting at `pos`.
Result<std::vector<Record>> ReadAnswers(std::string_view m, size_t pos, uint16_t count) {
  auto bad = [](std::string why) { return BadInput("dns reply", "", std::move(why)); };
  std::vector<Record> rrs;
  for (uint16_t i = 0; i < count; ++i) {
    Record r;
    std::string why = ReadName(m, pos, true, r.owner);
    if (!why.empty()) return bad(std::move(why));
    if (m.size() - pos < 10) return bad("record runs past the end of the message");
    r.type = U16(m, pos);
    r.cls = U16(m, pos + 2);
    // RFC 2181 8: a TTL with the top bit set is taken as zero.
    r.ttl = U32(m, pos + 4) & 0x80000000u ? 0 : U32(m, pos + 4);
    r.rdlen = U16(m, pos + 8);
    pos += 10;
    if (r.rdlen > m.size() - pos) return bad("record data runs past the end of the message");
    r.rdata = pos;
    pos += r.rdlen;
    if (r.cls == kClassIn && r.type == kTypeA && r.rdlen != 4) return bad("A record not 4 bytes");
    if (r.cls == kClassIn && r.type == kTypeAaaa && r.rdlen != 16) {
      return bad("AAAA record not 16 bytes");
    }
    rrs.push_back(std::move(r));
  }
  return rrs;
}

}  // namespace

Result<DnsQuery> ParseQuery(std::string_view m) {
  auto bad = [](std::string why) { return BadInput("dns query", "", std::move(why)); };
  if (m.size() < kHeaderSize) return bad("shorter than a DNS header");
  uint16_t flags = U16(m, 2);
  if (flags & kFlagQr) return bad("a reply, not a query");
  if (int op = Opcode(flags); op != 0) {
    return bad("opcode " + std::to_string(op) + ", only QUERY (0) is answered");
  }
  if (uint16_t n = U16(m, 4); n != 1) {
    return bad(std::to_string(n) + " questions, only 1 is answered");
  }
  if (U16(m, 6) != 0 || U16(m, 8) != 0) return bad("a query with answer or authority records");
  DnsQuery q;
  q.id = U16(m, 0);
  q.rd = (flags & kFlagRd) != 0;
  q.cd = (flags & kFlagCd) != 0;
  size_t pos = kHeaderSize;
  Name name;
  std::string why = ReadName(m, pos, false, name);
  if (!why.empty()) return bad(std::move(why));
  if (m.size() - pos < 4) return bad("question runs past the end of the message");
  q.qtype = U16(m, pos);
  q.qclass = U16(m, pos + 2);
  q.question_end = pos + 4;
  if (name.host) q.name = NormalizeName(name.text).value_or("");
  return q;
}

std::string BuildNxdomain(const DnsQuery& q, std::string_view raw) {
  return ReplyHead(q, raw, kRcodeNxDomain, 0);
}
std::string BuildRefused(const DnsQuery& q, std::string_view raw) {
  return ReplyHead(q, raw, kRcodeRefused, 0);
}
std::string BuildServfail(const DnsQuery& q, std::string_view raw) {
  return ReplyHead(q, raw, kRcodeServFail, 0);
}
std::string BuildEmpty(const DnsQuery& q, std::string_view raw) {
  return ReplyHead(q, raw, kRcodeNoError, 0);
}

std::string BuildAddressAnswer(const DnsQuery& q, std::string_view raw,
                               const std::vector<Ipv4Bytes>& a, uint32_t ttl) {
  return AddressAnswer(q, raw, a, kTypeA, ttl);
}
std::string BuildAddressAnswer(const DnsQuery& q, std::string_view raw,
                               const std::vector<Ipv6Bytes>& aaaa, uint32_t ttl) {
  return AddressAnswer(q, raw, aaaa, kTypeAaaa, ttl);
}

std::string BuildQuery(uint16_t id, std::string_view name, uint16_t qtype) {
  std::optional<std::string> n = NormalizeName(name);
  if (!n) return {};
  std::string q;
  PutU16(q, id);
  PutU16(q, kFlagRd);
  PutU16(q, 1);  // one question
  PutU16(q, 0);
  PutU16(q, 0);
  PutU16(q, 1);  // the OPT record
  std::string_view rest = *n;
  for (;;) {
    size_t dot = rest.find('.');
    std::string_view label = rest.substr(0, dot);
    q += static_cast<char>(label.size());
    q += label;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  q += '\0';
  PutU16(q, qtype);
  PutU16(q, kClassIn);
  // OPT (RFC 6891 6.1.2): the root, its class the payload size, TTL 0 (version 0, no DO).
  q += '\0';
  PutU16(q, kTypeOpt);
  PutU16(q, kEdnsPayload);
  PutU32(q, 0);
  PutU16(q, 0);
  return q;
}

Result<DnsAnswer> ParseAddressAnswer(std::string_view m, uint16_t id, std::string_view name,
                                     uint16_t qtype) {
  auto bad = [](std::string why) { return BadInput("dns reply", "", std::move(why)); };
  std::optional<std::string> asked = NormalizeName(name);
  if (!asked) return bad("asked about something that is not a host name");
  if (qtype != kTypeA && qtype != kTypeAaaa) return bad("asked for a type other than A or AAAA");
  if (m.size() < kHeaderSize) return bad("shorter than a DNS header");
  if (U16(m, 0) != id) return bad("id " + std::to_string(U16(m, 0)) + " was not asked");
  uint16_t flags = U16(m, 2);
  if (!(flags & kFlagQr)) return bad("a query, not a reply");
  if (Opcode(flags) != 0) return bad("opcode other than QUERY");
  if (U16(m, 4) != 1) return bad("a reply without exactly one question");
  size_t pos = kHeaderSize;
  Name qname;
  std::string why = ReadName(m, pos, true, qname);
  if (!why.empty()) return bad(std::move(why));
  if (m.size() - pos < 4) return bad("question runs past the end of the message");
  if (!qname.host || qname.text != *asked || U16(m, pos) != qtype || U16(m, pos + 2) != kClassIn) {
    return bad("the question is not the one asked");
  }
  pos += 4;

  DnsAnswer ans;
  ans.rcode = flags & 0xf;
  ans.truncated = (flags & kFlagTc) != 0;
  if (ans.rcode != kRcodeNoError || ans.truncated) return ans;
  std::vector<Record> rrs = BRIG_TRY(ReadAnswers(m, pos, U16(m, 6)));

  // Walk the chain from the asked name: at each name take its addresses of the asked type
  // and follow its one CNAME, if any. Nothing owned by a name off the chain is used.
  std::string current = *asked;
  uint32_t ttl = std::numeric_limits<uint32_t>::max();
  bool used = false;
  for (;;) {
    const Record* cname = nullptr;
    for (const Record& r : rrs) {
      if (r.cls != kClassIn || !r.owner.host || r.owner.text != current) continue;
      if (r.type == qtype) {
        if (qtype == kTypeA) {
          Ipv4Bytes b;
          std::copy_n(m.data() + r.rdata, b.size(), reinterpret_cast<char*>(b.data()));
          ans.a.push_back(b);
        } else {
          Ipv6Bytes b;
          std::copy_n(m.data() + r.rdata, b.size(), reinterpret_cast<char*>(b.data()));
          ans.aaaa.push_back(b);
        }
        ttl = std::min(ttl, r.ttl);
        used = true;
      } else if (r.type == kTypeCname) {
        if (cname) return bad("two CNAMEs for " + current);
        cname = &r;
      }
    }
    if (!cname) break;
    if (ans.cnames.size() == kMaxCnameChain) return bad("CNAME chain longer than 16");
    size_t p = cname->rdata;
    Name target;
    why = ReadName(m, p, true, target);
    if (!why.empty()) return bad(std::move(why));
    if (p != cname->rdata + cname->rdlen) return bad("CNAME data is not exactly one name");
    std::optional<std::string> t = target.host ? NormalizeName(target.text) : std::nullopt;
    if (!t) return bad("CNAME of " + current + " to something that is not a host name");
    if (*t == *asked || std::find(ans.cnames.begin(), ans.cnames.end(), *t) != ans.cnames.end()) {
      return bad("CNAME loop at " + *t);
    }
    ttl = std::min(ttl, cname->ttl);
    used = true;
    ans.cnames.push_back(*t);
    current = *t;
  }
  ans.ttl = used ? ttl : 0;
  return ans;
}

std::string FrameTcp(std::string_view msg) {
  if (msg.size() > 0xffff) return {};
  std::string out;
  out.reserve(2 + msg.size());
  PutU16(out, static_cast<uint16_t>(msg.size()));
  out += msg;
  return out;
}

std::optional<std::string_view> NextTcpMessage(std::string_view stream) {
  if (stream.size() < 2) return std::nullopt;
  size_t len = U16(stream, 0);
  if (stream.size() - 2 < len) return std::nullopt;
  return stream.substr(2, len);
}

}  // namespace brig::egress
