// libFuzzer target: the resolver's DNS messages (egress/dns.h). Each input is read as a
// sandbox's query, as a TCP stream of one, and as an upstream reply to the question it
// holds. Besides "no crash, no UB": every reply built for a parsed query carries that query's
// id and question byte for byte, fits a UDP reply, and reads back (as a query with QR clear,
// and through ParseAddressAnswer) as what was built; the upstream query made from its name
// parses as the same question; a reply's CNAME names are normalised host names and its
// addresses are of the asked type.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/allowlist.h"
#include "egress/dns.h"
#include "fuzz_common.h"

namespace {

namespace egress = brig::egress;

uint16_t U16(std::string_view m, size_t i) {
  return static_cast<uint16_t>(static_cast<uint8_t>(m[i]) << 8 | static_cast<uint8_t>(m[i + 1]));
}

// `reply` read back as the query it answers: QR and the counts cleared.
void CheckAnswers(const egress::DnsQuery& q, std::string_view raw, const std::string& reply,
                  uint8_t rcode, uint16_t ancount) {
  FUZZ_CHECK(!reply.empty() && reply.size() <= egress::kMaxUdpReply);
  FUZZ_CHECK(U16(reply, 0) == q.id);
  FUZZ_CHECK((U16(reply, 2) & 0xfe0f) == (0x8000 | rcode));  // QR, QUERY, not AA or TC
  FUZZ_CHECK(U16(reply, 4) == 1 && U16(reply, 6) == ancount);
  FUZZ_CHECK(reply.compare(12, q.question_end - 12, raw, 12, q.question_end - 12) == 0);
  std::string as_query = reply;
  as_query[2] = static_cast<char>(as_query[2] & 0x7f);
  as_query[6] = as_query[7] = 0;
  auto back = egress::ParseQuery(as_query);
  FUZZ_CHECK(back);
  FUZZ_CHECK(back->id == q.id && back->rd == q.rd && back->cd == q.cd);
  FUZZ_CHECK(back->name == q.name && back->qtype == q.qtype && back->qclass == q.qclass);
  FUZZ_CHECK(back->question_end == q.question_end);
}

void Query(std::string_view s) {
  auto q = egress::ParseQuery(s);
  if (!q) {
    FUZZ_CHECK(q.error().kind == brig::ErrorKind::kBadInput);
    brig::fuzz::CheckRendersOneLine(q.error());
    return;
  }
  FUZZ_CHECK(q->question_end > 12 && q->question_end <= s.size());
  FUZZ_CHECK(q->name.empty() || egress::NormalizeName(q->name) == q->name);
  CheckAnswers(*q, s, egress::BuildNxdomain(*q, s), egress::kRcodeNxDomain, 0);
  CheckAnswers(*q, s, egress::BuildRefused(*q, s), egress::kRcodeRefused, 0);
  CheckAnswers(*q, s, egress::BuildServfail(*q, s), egress::kRcodeServFail, 0);
  CheckAnswers(*q, s, egress::BuildEmpty(*q, s), egress::kRcodeNoError, 0);

  // Addresses from the input's own bytes, more than fit.
  std::vector<egress::Ipv4Bytes> a(40);
  std::vector<egress::Ipv6Bytes> aaaa(40);
  for (size_t i = 0; i < s.size(); ++i) {
    a[i % a.size()][i % 4] ^= static_cast<uint8_t>(s[i]);
    aaaa[i % aaaa.size()][i % 16] ^= static_cast<uint8_t>(s[i]);
  }
  uint32_t ttl = static_cast<uint32_t>(q->id) << 16 | q->qtype;
  std::string ra = egress::BuildAddressAnswer(*q, s, a, ttl);
  std::string r6 = egress::BuildAddressAnswer(*q, s, aaaa, ttl);
  size_t na = (egress::kMaxUdpReply - q->question_end) / 16;
  size_t n6 = (egress::kMaxUdpReply - q->question_end) / 28;
  CheckAnswers(*q, s, ra, egress::kRcodeNoError, static_cast<uint16_t>(na));
  CheckAnswers(*q, s, r6, egress::kRcodeNoError, static_cast<uint16_t>(n6));

  if (q->name.empty()) {
    FUZZ_CHECK(egress::BuildQuery(q->id, q->name, q->qtype).empty());
    return;
  }
  auto up = egress::ParseQuery(egress::BuildQuery(q->id, q->name, q->qtype));
  FUZZ_CHECK(up && up->name == q->name && up->qtype == q->qtype && up->rd);

  bool address_type = q->qtype == egress::kTypeA || q->qtype == egress::kTypeAaaa;
  if (!address_type || q->qclass != egress::kClassIn) return;
  const std::string& built = q->qtype == egress::kTypeA ? ra : r6;
  auto ans = egress::ParseAddressAnswer(built, q->id, q->name, q->qtype);
  FUZZ_CHECK(ans && ans->rcode == 0 && ans->cnames.empty());
  FUZZ_CHECK(ans->ttl == std::min<uint32_t>(ttl, 0x7fffffff));
  if (q->qtype == egress::kTypeA) {
    FUZZ_CHECK(ans->a == std::vector<egress::Ipv4Bytes>(a.begin(), a.begin() + na));
  } else {
    FUZZ_CHECK(ans->aaaa == std::vector<egress::Ipv6Bytes>(aaaa.begin(), aaaa.begin() + n6));
  }
  auto nx = egress::ParseAddressAnswer(egress::BuildNxdomain(*q, s), q->id, q->name, q->qtype);
  FUZZ_CHECK(nx && nx->rcode == egress::kRcodeNxDomain && nx->a.empty() && nx->aaaa.empty());
}

// The input as the upstream's reply to the question it holds.
void Reply(std::string_view s) {
  if (s.size() < 12) return;
  std::string as_query(s);
  as_query[2] = static_cast<char>(as_query[2] & 0x7f);
  for (size_t i = 6; i < 10; ++i) as_query[i] = 0;
  auto q = egress::ParseQuery(as_query);
  if (!q || q->name.empty()) return;
  uint16_t qtype = q->qtype == egress::kTypeAaaa ? egress::kTypeAaaa : egress::kTypeA;
  auto ans = egress::ParseAddressAnswer(s, q->id, q->name, qtype);
  if (!ans) {
    FUZZ_CHECK(ans.error().kind == brig::ErrorKind::kBadInput);
    brig::fuzz::CheckRendersOneLine(ans.error());
    return;
  }
  FUZZ_CHECK(q->qtype == qtype && q->qclass == egress::kClassIn);
  FUZZ_CHECK(qtype == egress::kTypeA ? ans->aaaa.empty() : ans->a.empty());
  FUZZ_CHECK(ans->cnames.size() <= egress::kMaxCnameChain);
  for (const std::string& c : ans->cnames) {
    FUZZ_CHECK(egress::NormalizeName(c) == c && c != q->name);
  }
  if (ans->rcode != 0 || ans->truncated) {
    FUZZ_CHECK(ans->a.empty() && ans->aaaa.empty() && ans->cnames.empty() && ans->ttl == 0);
  }
  FUZZ_CHECK(ans->ttl <= 0x7fffffff);
  // Each record is at least 12 bytes (a pointer, type, class, TTL, length) plus its data.
  FUZZ_CHECK(ans->a.size() * 16 + ans->aaaa.size() * 28 <= s.size());
  // A different id is never taken for this reply.
  FUZZ_CHECK(!egress::ParseAddressAnswer(s, static_cast<uint16_t>(q->id + 1), q->name, qtype));
}

void Tcp(std::string_view s) {
  auto msg = egress::NextTcpMessage(s);
  if (!msg) {
    FUZZ_CHECK(s.size() < 2 || s.size() < 2u + U16(s, 0));
    return;
  }
  FUZZ_CHECK(egress::FrameTcp(*msg) == s.substr(0, 2 + msg->size()));
  Query(*msg);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65537) return -1;  // a TCP frame's most
  std::string_view s(reinterpret_cast<const char*>(data), size);
  Query(s);
  Reply(s);
  Tcp(s);
  return 0;
}
