// The egress parsers that read sandbox-controlled bytes: the allowlist and its name
// normalisation, DNS queries and the upstream's replies, the TLS ClientHello and the HTTP
// request head. Valid inputs are built byte by byte or are real clients' first flights
// (tests/fuzz/corpus/, captured on loopback); hostile ones are cut at every length.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "egress/allowlist.h"
#include "egress/dns.h"
#include "egress/http.h"
#include "http/framing.h"
#include "egress/tls.h"
#include "testlib/testlib.h"

namespace brig::egress {
namespace {

using namespace std::string_literals;
using namespace std::string_view_literals;

// For failure messages: the bytes with anything unprintable as \xNN.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string Be16(size_t v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }
std::string Be24(size_t v) { return static_cast<char>(v >> 16) + Be16(v & 0xffff); }
std::string Be32(uint32_t v) { return Be16(v >> 16) + Be16(v & 0xffff); }

std::string Corpus(const std::string& name) {
  std::string data = testing::ReadFileOrEmpty(testing::SourceRoot() + "/tests/fuzz/corpus/" + name);
  EXPECT_FALSE(data.empty()) << "missing seed " << name;
  return data;
}

// ---- Allowlist ----

TEST(EgressName, NormalizesCaseAndOneTrailingDot) {
  EXPECT_EQ(NormalizeName("Example.COM"), "example.com");
  EXPECT_EQ(NormalizeName("example.com."), "example.com");
  EXPECT_EQ(NormalizeName("XN--BCHER-KVA.Example"), "xn--bcher-kva.example");
  EXPECT_EQ(NormalizeName("localhost"), "localhost");
  EXPECT_EQ(NormalizeName("123.example"), "123.example");
  // Hyphens in the third and fourth place are fine outside "xn--" (real CDN names).
  EXPECT_EQ(NormalizeName("r3---sn-abc.example.net"), "r3---sn-abc.example.net");
  EXPECT_EQ(NormalizeName(*NormalizeName("A.b.C.")), "a.b.c");
}

TEST(EgressName, RefusesWhatIsNoHostName) {
  for (std::string_view bad : {""sv,
                               "."sv,
                               "example.com.."sv,
                               ".example.com"sv,
                               "a..b"sv,
                               "exa mple.com"sv,
                               "exa\\mple.com"sv,
                               "example.com\0"sv,
                               "example.com\0.evil.net"sv,
                               "\x01.com"sv,
                               "b\u00fccher.example"sv,
                               "_dmarc.example.com"sv,
                               "*.example.com"sv,
                               "example.com:443"sv,
                               "-a.example"sv,
                               "a-.example"sv,
                               "xn--.example"sv,
                               "a/b.com"sv,
                               "user@example.com"sv,
                               "example.com\r\nX: y"sv}) {
    EXPECT_FALSE(NormalizeName(bad)) << "accepted " << Printable(bad);
  }
}

TEST(EgressName, RefusesAddressesInEveryFormInetAtonReads) {
  for (const char* bad : {"10.0.0.1", "127.1", "2130706433", "0x7f.0.0.1", "1.0x7f", "0x7f",
                          "0177.0.0.1", "example.123", "1.2.3.4."}) {
    auto r = CheckName(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().detail.find("IP address"), std::string::npos) << r.error().Render();
  }
  EXPECT_TRUE(NormalizeName("0xz.example"));
  EXPECT_TRUE(NormalizeName("1.2.3.x4"));
}

TEST(EgressName, LengthLimits) {
  std::string l63(63, 'a'), l64(64, 'a');
  EXPECT_TRUE(NormalizeName(l63 + ".com"));
  EXPECT_EQ(CheckName(l64 + ".com").error().detail, "label longer than 63 bytes");
  // 4 * 63 + 1 = 253 bytes: the longest name; 254 only with the trailing dot.
  std::string n253 = l63 + "." + l63 + "." + l63 + "." + std::string(61, 'b');
  ASSERT_EQ(n253.size(), 253u);
  EXPECT_TRUE(NormalizeName(n253));
  EXPECT_TRUE(NormalizeName(n253 + "."));
  EXPECT_EQ(CheckName(n253 + "b").error().detail, "longer than 253 bytes");
}

TEST(EgressName, SaysWhyAndRendersOneLine) {
  auto r = CheckName("b\u00fccher.example");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().detail.find("punycode"), std::string::npos);
  EXPECT_NE(CheckName("a..b").error().detail.find("empty label"), std::string::npos);
  EXPECT_NE(CheckName("a\\b").error().detail.find("'\\'"), std::string::npos);
  EXPECT_NE(CheckName("a b").error().detail.find("space"), std::string::npos);
  EXPECT_NE(CheckName("a\nb").error().detail.find("control"), std::string::npos);
  EXPECT_EQ(CheckName("a\nb").error().Render().find('\n'), std::string::npos);
}

TEST(EgressPattern, ReadsTheThreeForms) {
  auto p = ParseHostPattern("Example.COM.");
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_EQ(p->name, "example.com");
  EXPECT_FALSE(p->subdomains_only);
  EXPECT_EQ(p->port, 0);
  p = ParseHostPattern("*.example.com:8443");
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_EQ(p->name, "example.com");
  EXPECT_TRUE(p->subdomains_only);
  EXPECT_EQ(p->port, 8443);
  EXPECT_EQ(p->Str(), "*.example.com:8443");
  EXPECT_EQ(*ParseHostPattern(p->Str()), *p);
  EXPECT_EQ(ParseHostPattern("pkg.example.com:443")->Str(), "pkg.example.com:443");
  EXPECT_EQ(ParseHostPattern("xn--bcher-kva.example")->name, "xn--bcher-kva.example");
  EXPECT_EQ(ParseHostPattern("a:65535")->port, 65535);
}

TEST(EgressPattern, RefusesWithTheReason) {
  struct Case {
    const char* entry;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty entry"},
           {"*", "open posture"},
           {"*.", "empty name"},
           {"*:443", "open posture"},
           {"foo.*.example.com", "wildcard"},
           {"*example.com", "wildcard"},
           {"a*.example.com", "wildcard"},
           {"*.*.example.com", "wildcard"},
           {"**.example.com", "wildcard"},
           {"example.*", "wildcard"},
           {"example.com:0", "out of range"},
           {"example.com:65536", "out of range"},
           {"example.com:", "port must be"},
           {"example.com:https", "port must be"},
           {"example.com:+443", "port must be"},
           {"example.com:4430000", "port must be"},
           {"1.2.3.4", "IP address"},
           {"1.2.3.4:443", "IP address"},
           {"[::1]:443", "IPv6"},
           {"::1", "IPv6"},
           {"fe80::1%eth0", "IPv6"},
           {"10.0.0.0/8", "address range"},
           {"b\u00fccher.example", "punycode"},
           {"exa_mple.com", "'_'"},
           {" example.com", "space"},
           {"example..com", "empty label"},
           {".example.com", "empty label"},
       }) {
    auto p = ParseHostPattern(c.entry);
    ASSERT_FALSE(p) << "accepted '" << c.entry << "'";
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(p.error().op, "allowlist entry");
    EXPECT_EQ(p.error().subject, c.entry);
    EXPECT_NE(p.error().detail.find(c.why), std::string::npos)
        << c.entry << ": " << p.error().Render();
  }
}

TEST(EgressAllowlist, ParseNamesTheBadEntry) {
  auto l = Allowlist::Parse({"example.com", "foo..example.net", "*.example.org"});
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().Render(),
            "allowlist entry 'foo..example.net': empty label (a leading dot or \"..\")");
  EXPECT_EQ(Allowlist::Parse({})->patterns().size(), 0u);
  EXPECT_FALSE(Allowlist().Allows("example.com", 443));
}

TEST(EgressAllowlist, MatchesWholeLabels) {
  auto l = Allowlist::Parse({"example.com"});
  ASSERT_TRUE(l);
  for (const char* yes : {"example.com", "EXAMPLE.com", "example.com.", "www.example.com",
                          "a.b.example.com", "WWW.Example.Com."}) {
    EXPECT_TRUE(l->Allows(yes, 443)) << yes;
  }
  for (std::string_view no :
       {"evil-example.com"sv, "example.com.evil.net"sv, "example.co"sv, "xample.com"sv,
        "wwwexample.com"sv, "example.com.."sv, ".example.com"sv, "www..example.com"sv,
        "example.com\0"sv, "www.example.com\0.evil.net"sv, "com"sv, ""sv}) {
    EXPECT_FALSE(l->Allows(no, 443)) << Printable(no);
  }
}

TEST(EgressAllowlist, WildcardIsSubdomainsOnly) {
  auto l = Allowlist::Parse({"*.example.com"});
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->Allows("example.com", 443));
  EXPECT_FALSE(l->Allows("example.com.", 443));
  EXPECT_TRUE(l->Allows("www.example.com", 443));
  EXPECT_TRUE(l->Allows("a.b.example.com", 80));
  EXPECT_FALSE(l->Allows("evil-example.com", 443));
  EXPECT_FALSE(l->Allows("www.example.com.evil.net", 443));
}

TEST(EgressAllowlist, PortsAndPortZero) {
  auto l = Allowlist::Parse({"example.com:443", "*.example.org:8443"});
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->Allows("example.com", 443));
  EXPECT_FALSE(l->Allows("example.com", 80));
  EXPECT_TRUE(l->Allows("example.com", 0)) << "a name allowed on some port resolves";
  EXPECT_TRUE(l->Allows("a.example.org", 8443));
  EXPECT_FALSE(l->Allows("a.example.org", 443));
  EXPECT_TRUE(l->Allows("a.example.org", 0));
  EXPECT_FALSE(l->Allows("example.org", 0));
}

TEST(EgressAllowlist, PunycodeIsMatchedAsItsALabelOnly) {
  auto l = Allowlist::Parse({"xn--bcher-kva.example"});
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->Allows("xn--bcher-kva.example", 443));
  EXPECT_TRUE(l->Allows("WWW.XN--BCHER-KVA.EXAMPLE", 443));
  EXPECT_FALSE(l->Allows("b\u00fccher.example", 443)) << "raw UTF-8 is refused, not mapped";
  EXPECT_FALSE(l->Allows("bucher.example", 443));
}

TEST(EgressAllowlist, AnAddressIsNeverAllowedAsAName) {
  auto l = Allowlist::Parse({"example.com", "com"});
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->Allows("anything.com", 443));
  EXPECT_FALSE(l->Allows("10.0.0.1", 443));
  EXPECT_FALSE(l->Allows("169.254.169.254", 80));
}

// ---- DNS ----

std::string Labels(std::string_view dotted) {
  std::string out;
  while (!dotted.empty()) {
    size_t dot = dotted.find('.');
    std::string_view l = dotted.substr(0, dot);
    out += static_cast<char>(l.size());
    out += l;
    dotted.remove_prefix(dot == std::string_view::npos ? dotted.size() : dot + 1);
  }
  return out + '\0';
}

std::string Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an = 0, uint16_t ns = 0,
                   uint16_t ar = 0) {
  return Be16(id) + Be16(flags) + Be16(qd) + Be16(an) + Be16(ns) + Be16(ar);
}

std::string Query(uint16_t id, std::string_view name, uint16_t qtype, uint16_t flags = 0x0100) {
  return Header(id, flags, 1) + Labels(name) + Be16(qtype) + Be16(kClassIn);
}

// A resource record with its owner already in wire form.
std::string Rr(const std::string& owner, uint16_t type, uint32_t ttl, const std::string& data) {
  return owner + Be16(type) + Be16(kClassIn) + Be32(ttl) + Be16(data.size()) + data;
}

TEST(EgressDns, ParsesAQueryAndKeepsItsCaseForTheAnswer) {
  std::string raw = Query(0xbeef, "WwW.ExAmple.com", kTypeAaaa, 0x0110) + "\0\0\x29\x04\xd0"s;
  raw[11] = 1;  // an OPT record follows the question; it is not read
  auto q = ParseQuery(raw);
  ASSERT_TRUE(q) << q.error().Render();
  EXPECT_EQ(q->id, 0xbeef);
  EXPECT_TRUE(q->rd);
  EXPECT_TRUE(q->cd);
  EXPECT_EQ(q->name, "www.example.com");
  EXPECT_EQ(q->qtype, kTypeAaaa);
  EXPECT_EQ(q->qclass, kClassIn);
  EXPECT_EQ(q->question_end, 12 + 17 + 4u);

  std::string nx = BuildNxdomain(*q, raw);
  EXPECT_EQ(nx.substr(0, 12), Header(0xbeef, 0x8193, 1));  // QR RD RA CD, NXDOMAIN
  EXPECT_EQ(nx.substr(12), raw.substr(12, 21)) << "the question, case and all";
  EXPECT_EQ(BuildRefused(*q, raw)[3] & 0xf, kRcodeRefused);
  EXPECT_EQ(BuildServfail(*q, raw)[3] & 0xf, kRcodeServFail);
  std::string empty = BuildEmpty(*q, raw);
  EXPECT_EQ(empty.substr(0, 12), Header(0xbeef, 0x8190, 1));
  EXPECT_EQ(empty.size(), q->question_end);
}

TEST(EgressDns, NamesThatAreNoHostNamesParseButMatchNothing) {
  // A label holding a dot must not read as two labels: "example.com" as one label under
  // "evil.net" is not www.example.com's sibling.
  std::string one_label = Header(1, 0, 1) +
                          "\x0b"
                          "example.com\x04"
                          "evil\x03net"s +
                          '\0' + Be16(kTypeA) + Be16(kClassIn);
  for (const std::string& raw :
       {one_label, Query(2, "_dmarc.example.com", 16), Query(3, "10.0.0.1", kTypeA),
        Header(4, 0, 1) + '\0' + Be16(2) + Be16(kClassIn),  // the root, NS
        Header(5, 0, 1) +
            "\x03"
            "a\0b\x03"
            "com"s +
            '\0' + Be16(kTypeA) + Be16(kClassIn)}) {
    auto q = ParseQuery(raw);
    ASSERT_TRUE(q) << q.error().Render();
    EXPECT_EQ(q->name, "");
    EXPECT_FALSE(Allowlist::Parse({"com", "net", "example.com"})->Allows(q->name, 0));
    EXPECT_EQ(BuildNxdomain(*q, raw).substr(12), raw.substr(12));
  }
}

TEST(EgressDns, RefusesWhatIsNoPlainQuery) {
  struct Case {
    std::string raw;
    const char* why;
  };
  std::string q = Query(7, "example.com", kTypeA);
  std::string name = Labels("example.com");
  std::string long_name;
  for (int i = 0; i < 4; ++i) long_name += "\x3f" + std::string(63, 'a');
  std::vector<Case> cases = {
      {"", "shorter than a DNS header"},
      {q.substr(0, 11), "shorter than a DNS header"},
      {Header(7, 0x8100, 1) + q.substr(12), "a reply"},
      {Header(7, 0x0900, 1) + q.substr(12), "opcode 1"},  // IQUERY
      {Header(7, 0x1100, 1) + q.substr(12), "opcode 2"},  // STATUS
      {Header(7, 0x2900, 1) + q.substr(12), "opcode 5"},  // UPDATE
      {Header(7, 0x0100, 0), "0 questions"},
      {Header(7, 0x0100, 2) + q.substr(12) + q.substr(12), "2 questions"},
      {Header(7, 0x0100, 1, 1) + q.substr(12), "answer or authority"},
      {Header(7, 0x0100, 1, 0, 1) + q.substr(12), "answer or authority"},
      {Header(7, 0x0100, 1) + "\xc0\x0c"s + Be16(1) + Be16(1), "compression pointer"},
      {Header(7, 0x0100, 1) + "\x03www\xc0\x0c"s + Be16(1) + Be16(1), "compression pointer"},
      {Header(7, 0x0100, 1) +
           "\x41"
           "abc"s +
           '\0' + Be16(1) + Be16(1),
       "label type"},
      {Header(7, 0x0100, 1) + "\x81"s + '\0' + Be16(1) + Be16(1), "label type"},
      {Header(7, 0x0100, 1) + long_name + '\0' + Be16(1) + Be16(1), "longer than 255"},
      {Header(7, 0x0100, 1) + "\x05"
                              "abc"s,
       "runs past the end"},
      {q.substr(0, q.size() - 1), "question runs past the end"},
  };
  for (const Case& c : cases) {
    auto r = ParseQuery(c.raw);
    ASSERT_FALSE(r) << c.why;
    EXPECT_NE(r.error().detail.find(c.why), std::string::npos) << r.error().Render();
    EXPECT_EQ(r.error().Render().find('\n'), std::string::npos);
  }
  // Every cut of a valid query is refused, never read past.
  for (size_t n = 0; n < q.size(); ++n) EXPECT_FALSE(ParseQuery(q.substr(0, n))) << n;
}

TEST(EgressDns, AddressAnswersRoundTripAndFitInAUdpReply) {
  std::string raw = Query(0x1234, "Pkg.Example.com", kTypeA);
  auto q = ParseQuery(raw);
  ASSERT_TRUE(q);
  std::vector<Ipv4Bytes> a = {{{93, 184, 215, 14}}, {{93, 184, 215, 15}}};
  std::string reply = BuildAddressAnswer(*q, raw, a, 300);
  EXPECT_EQ(reply.substr(0, 12), Header(0x1234, 0x8180, 1, 2));
  EXPECT_EQ(reply.substr(q->question_end, 16),
            "\xc0\x0c"s + Be16(kTypeA) + Be16(kClassIn) + Be32(300) + Be16(4) + "\x5d\xb8\xd7\x0e");
  auto back = ParseAddressAnswer(reply, 0x1234, "pkg.example.com", kTypeA);
  ASSERT_TRUE(back) << back.error().Render();
  EXPECT_EQ(back->a, a);
  EXPECT_EQ(back->ttl, 300u);
  EXPECT_TRUE(back->cnames.empty());

  std::string raw6 = Query(9, "example.com", kTypeAaaa);
  auto q6 = ParseQuery(raw6);
  ASSERT_TRUE(q6);
  std::vector<Ipv6Bytes> many(100);
  for (size_t i = 0; i < many.size(); ++i) many[i][15] = static_cast<uint8_t>(i);
  std::string big = BuildAddressAnswer(*q6, raw6, many, 0xffffffffu);
  EXPECT_LE(big.size(), kMaxUdpReply);
  auto back6 = ParseAddressAnswer(big, 9, "example.com", kTypeAaaa);
  ASSERT_TRUE(back6) << back6.error().Render();
  EXPECT_EQ(back6->aaaa.size(), (kMaxUdpReply - q6->question_end) / 28);
  EXPECT_EQ(back6->aaaa[3][15], 3);
  EXPECT_EQ(back6->ttl, 0x7fffffffu) << "RFC 2181 8: at most 2^31-1";

  // A query that is not the bytes it claims to come from gets nothing.
  EXPECT_EQ(BuildNxdomain(*q6, raw6.substr(0, 20)), "");
  EXPECT_EQ(BuildAddressAnswer(*q, "", a, 1), "");
}

TEST(EgressDns, BuildsUpstreamQueriesFromTheNormalisedNameOnly) {
  std::string up = BuildQuery(0x4242, "WWW.Example.com.", kTypeA);
  EXPECT_EQ(up, Header(0x4242, 0x0100, 1, 0, 0, 1) + Labels("www.example.com") + Be16(kTypeA) +
                    Be16(kClassIn) + '\0' + Be16(41) + Be16(1232) + Be32(0) + Be16(0));
  auto q = ParseQuery(up);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->name, "www.example.com");
  EXPECT_EQ(BuildQuery(1, "exa_mple.com", kTypeA), "");
  EXPECT_EQ(BuildQuery(1, "", kTypeA), "");
}

// An upstream reply: www.example.com CNAME cdn.example.net (compressed), A records.
std::string CnameReply() { return Corpus("dns/reply-cname-a"); }

TEST(EgressDns, FollowsTheCnameChainInsideTheReply) {
  auto r = ParseAddressAnswer(CnameReply(), 0x4242, "WWW.example.com", kTypeA);
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->rcode, kRcodeNoError);
  EXPECT_EQ(r->cnames, std::vector<std::string>{"cdn.example.net"});
  ASSERT_EQ(r->a.size(), 2u);
  EXPECT_EQ(r->a[1], (Ipv4Bytes{93, 184, 215, 15}));
  EXPECT_EQ(r->ttl, 60u);
  // The reply is for A: asking what it says about AAAA, or another name, is refused.
  EXPECT_FALSE(ParseAddressAnswer(CnameReply(), 0x4242, "www.example.com", kTypeAaaa));
  EXPECT_FALSE(ParseAddressAnswer(CnameReply(), 0x4242, "example.com", kTypeA));
  EXPECT_FALSE(ParseAddressAnswer(CnameReply(), 0x4243, "www.example.com", kTypeA));
}

// A reply to `name`/A built from answer records (owners in wire form, compression allowed:
// the question's name is at offset 12).
std::string Reply(std::string_view name, const std::vector<std::string>& answers,
                  uint16_t flags = 0x8180, uint16_t id = 1) {
  std::string m = Header(id, flags, 1, static_cast<uint16_t>(answers.size())) + Labels(name) +
                  Be16(kTypeA) + Be16(kClassIn);
  for (const std::string& rr : answers) m += rr;
  return m;
}

TEST(EgressDns, IgnoresAddressesOfNamesOffTheChain) {
  const std::string at12 = "\xc0\x0c";
  std::string m =
      Reply("example.com", {Rr(Labels("evil.example.net"), kTypeA, 5, "\x0a\0\0\x01"s),
                            Rr(at12, kTypeA, 50, "\x5d\xb8\xd7\x0e"),
                            Rr(Labels("example.com.evil.net"), kTypeA, 5, "\x7f\0\0\x01"s)});
  auto r = ParseAddressAnswer(m, 1, "example.com", kTypeA);
  ASSERT_TRUE(r) << r.error().Render();
  ASSERT_EQ(r->a.size(), 1u);
  EXPECT_EQ(r->a[0], (Ipv4Bytes{93, 184, 215, 14}));
  EXPECT_EQ(r->ttl, 50u);
}

TEST(EgressDns, RcodeAndTruncationStopAfterTheQuestion) {
  auto nx = ParseAddressAnswer(Reply("example.com", {}, 0x8183), 1, "example.com", kTypeA);
  ASSERT_TRUE(nx);
  EXPECT_EQ(nx->rcode, kRcodeNxDomain);
  // TC, with an answer count the message does not hold: not read.
  std::string tc = Reply("example.com", {}, 0x8380);
  tc[7] = 9;
  auto t = ParseAddressAnswer(tc, 1, "example.com", kTypeA);
  ASSERT_TRUE(t) << t.error().Render();
  EXPECT_TRUE(t->truncated);
  EXPECT_TRUE(t->a.empty());
  EXPECT_FALSE(ParseAddressAnswer(Query(1, "example.com", kTypeA), 1, "example.com", kTypeA));
}

TEST(EgressDns, RefusesPointerLoopsAndForwardPointers) {
  std::string head = Reply("example.com", {});
  head[7] = 1;
  size_t here = head.size();
  struct Case {
    std::string owner;
    const char* why;
  };
  std::vector<Case> cases = {
      {Be16(0xc000 | here), "does not point backwards"},             // to itself
      {Be16(0xc000 | (here + 2)), "does not point backwards"},       // forwards
      {"\x01x"s + Be16(0xc000 | here), "does not point backwards"},  // a label, then back to it
      {Be16(0xc000 | 0x3fff), "does not point backwards"},
  };
  for (const Case& c : cases) {
    std::string m = head + c.owner + Be16(kTypeA) + Be16(kClassIn) + Be32(1) + Be16(4) + "abcd";
    auto r = ParseAddressAnswer(m, 1, "example.com", kTypeA);
    ASSERT_FALSE(r) << c.why;
    EXPECT_NE(r.error().detail.find(c.why), std::string::npos) << r.error().Render();
  }
  auto cut = ParseAddressAnswer(head + "\xc0", 1, "example.com", kTypeA);
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().detail.find("runs past the end"), std::string::npos);
  // Backwards through a chain of pointers to pointers is fine.
  std::string m = head;
  m[7] = 2;
  m += Rr("\xc0\x0c"s, kTypeA, 1, "\x01\x02\x03\x04");
  m += Rr(Be16(0xc000 | here), kTypeA, 1, "\x05\x06\x07\x08");
  auto r = ParseAddressAnswer(m, 1, "example.com", kTypeA);
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->a.size(), 2u);
}

TEST(EgressDns, RefusesBadCnameChains) {
  const std::string at12 = "\xc0\x0c";
  auto run = [](const std::string& m) { return ParseAddressAnswer(m, 1, "example.com", kTypeA); };
  // a -> b -> a
  auto loop = run(Reply("example.com", {Rr(at12, kTypeCname, 1, Labels("b.example.net")),
                                        Rr(Labels("b.example.net"), kTypeCname, 1, at12)}));
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().detail.find("CNAME loop"), std::string::npos);
  auto two = run(Reply("example.com", {Rr(at12, kTypeCname, 1, Labels("b.example.net")),
                                       Rr(at12, kTypeCname, 1, Labels("c.example.net"))}));
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().detail.find("two CNAMEs"), std::string::npos);
  auto odd = run(Reply("example.com", {Rr(at12, kTypeCname, 1, Labels("_x.example.net"))}));
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().detail.find("not a host name"), std::string::npos);
  auto longer = run(Reply("example.com", {Rr(at12, kTypeCname, 1, Labels("b.example") + "x")}));
  ASSERT_FALSE(longer);
  EXPECT_NE(longer.error().detail.find("not exactly one name"), std::string::npos);
  auto a5 = run(Reply("example.com", {Rr(at12, kTypeA, 1, "12345")}));
  ASSERT_FALSE(a5);
  EXPECT_NE(a5.error().detail.find("not 4 bytes"), std::string::npos);

  // kMaxCnameChain links are followed; one more is refused.
  for (size_t links : {kMaxCnameChain, kMaxCnameChain + 1}) {
    std::vector<std::string> rrs;
    std::string owner = at12;
    for (size_t i = 0; i < links; ++i) {
      std::string target = Labels("c" + std::to_string(i) + ".example.net");
      rrs.push_back(Rr(owner, kTypeCname, 100, target));
      owner = target;
    }
    rrs.push_back(Rr(owner, kTypeA, 7, "\x01\x02\x03\x04"));
    auto r = run(Reply("example.com", rrs));
    if (links == kMaxCnameChain) {
      ASSERT_TRUE(r) << r.error().Render();
      EXPECT_EQ(r->cnames.size(), links);
      EXPECT_EQ(r->cnames.back(), "c15.example.net");
      EXPECT_EQ(r->a.size(), 1u);
      EXPECT_EQ(r->ttl, 7u);
    } else {
      ASSERT_FALSE(r);
      EXPECT_NE(r.error().detail.find("longer than 16"), std::string::npos);
    }
  }
}

TEST(EgressDns, EveryCutOfAReplyIsRefusedNotOverread) {
  std::string m = CnameReply();
  for (size_t n = 0; n < m.size(); ++n) {
    EXPECT_FALSE(ParseAddressAnswer(m.substr(0, n), 0x4242, "www.example.com", kTypeA)) << n;
  }
  // The count says more records than there are.
  m[7] = 4;
  EXPECT_FALSE(ParseAddressAnswer(m, 0x4242, "www.example.com", kTypeA));
}

TEST(EgressDns, TopBitTtlIsZero) {
  auto r = ParseAddressAnswer(Reply("example.com", {Rr("\xc0\x0c"s, kTypeA, 0x80000000u, "abcd")}),
                              1, "example.com", kTypeA);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ttl, 0u);
}

TEST(EgressDns, TcpFraming) {
  std::string q = Query(1, "example.com", kTypeA);
  std::string framed = FrameTcp(q);
  EXPECT_EQ(framed, Be16(q.size()) + q);
  std::string stream = framed + FrameTcp("xy");
  auto first = NextTcpMessage(stream);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, q);
  auto second = NextTcpMessage(std::string_view(stream).substr(2 + first->size()));
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, "xy");
  for (size_t n = 0; n < framed.size(); ++n) EXPECT_FALSE(NextTcpMessage(framed.substr(0, n)));
  EXPECT_EQ(FrameTcp(std::string(65536, 'x')), "");
  EXPECT_EQ(FrameTcp(std::string(65535, 'x')).size(), 65537u);
  EXPECT_EQ(Corpus("dns/tcp-query").size(), 2 + NextTcpMessage(Corpus("dns/tcp-query"))->size());
}

// ---- TLS ----

std::string Ext(uint16_t type, const std::string& data) {
  return Be16(type) + Be16(data.size()) + data;
}

std::string SniExt(const std::string& name, uint8_t type = 0) {
  std::string entry = static_cast<char>(type) + Be16(name.size()) + name;
  return Ext(kExtServerName, Be16(entry.size()) + entry);
}

struct HelloSpec {
  uint16_t version = 0x0303;
  std::string session = std::string(32, 's');
  std::string suites = "\x13\x01\x13\x02\x00\xff"s;
  std::string compression = std::string(1, '\0');
  std::vector<std::string> exts = {SniExt("example.com"), Ext(0x002b, "\x02\x03\x04")};
  bool no_extensions = false;
};

std::string HelloBody(const HelloSpec& s) {
  std::string b = Be16(s.version) + std::string(32, 'r');
  b += static_cast<char>(s.session.size()) + s.session;
  b += Be16(s.suites.size()) + s.suites;
  b += static_cast<char>(s.compression.size()) + s.compression;
  if (s.no_extensions) return b;
  std::string exts;
  for (const std::string& e : s.exts) exts += e;
  return b + Be16(exts.size()) + exts;
}

std::string Handshake(const std::string& body, uint8_t type = 1) {
  return static_cast<char>(type) + Be24(body.size()) + body;
}

// `hs` in handshake records of at most `frag` bytes.
std::string Records(const std::string& hs, size_t frag = 16384, uint8_t minor = 1) {
  std::string out;
  for (size_t i = 0; i < hs.size(); i += frag) {
    std::string part = hs.substr(i, frag);
    out += "\x16\x03"s + static_cast<char>(minor) + Be16(part.size()) + part;
  }
  return out;
}

std::string Hello(const HelloSpec& s = {}) { return Records(Handshake(HelloBody(s))); }

using TlsStatus = HelloParse::Status;

TEST(EgressTls, RealClientsFirstFlights) {
  struct Seed {
    const char* file;
    const char* sni;
  };
  for (const Seed& s : {Seed{"tls/openssl-tls13-example.com", "example.com"},
                        Seed{"tls/curl-example.com", "example.com"},
                        Seed{"tls/openssl-tls12-www.example.org", "www.example.org"},
                        Seed{"tls/openssl-no-sni", ""}}) {
    std::string b = Corpus(s.file);
    HelloParse r = ParseClientHello(b);
    ASSERT_EQ(r.status, TlsStatus::kOk) << s.file << ": " << r.why;
    EXPECT_EQ(r.value.sni, s.sni) << s.file;
    EXPECT_EQ(r.value.version, 0x0303);
    EXPECT_FALSE(r.value.ech);
    EXPECT_FALSE(r.value.esni);
    // Whatever follows (a second flight, early data) is not read.
    EXPECT_EQ(ParseClientHello(b + "\x17\x03\x03garbage").value.sni, s.sni);
    // Every proper prefix asks for more, never reads past its end.
    for (size_t n = 0; n < b.size(); ++n) {
      ASSERT_EQ(ParseClientHello(b.substr(0, n)).status, TlsStatus::kNeedMore) << s.file << n;
    }
  }
}

TEST(EgressTls, ReassemblesAHelloAcrossRecords) {
  std::string hs = Handshake(HelloBody({}));
  for (size_t frag : {1, 2, 3, 4, 5, 7, 64, 100}) {
    std::string b = Records(hs, frag, 3);
    HelloParse r = ParseClientHello(b);
    ASSERT_EQ(r.status, TlsStatus::kOk) << frag << ": " << r.why;
    EXPECT_EQ(r.value.sni, "example.com");
    for (size_t n = 0; n < b.size(); ++n) {
      ASSERT_EQ(ParseClientHello(b.substr(0, n)).status, TlsStatus::kNeedMore) << frag << " " << n;
    }
  }
  // The biggest hello read (a large key share) spans two records; one byte more is refused.
  HelloSpec big;
  big.exts.push_back(Ext(0x0033, std::string(kMaxClientHello - 110, 'k')));
  ASSERT_EQ(HelloBody(big).size(), kMaxClientHello);
  std::string b = Records(Handshake(HelloBody(big)));
  ASSERT_EQ(b.size(), 4 + kMaxClientHello + 2 * 5);
  EXPECT_EQ(ParseClientHello(b).status, TlsStatus::kOk) << ParseClientHello(b).why;
  big.exts.back() += "k";
  big.exts.back()[3] = static_cast<char>(big.exts.back()[3] + 1);
  HelloParse r = ParseClientHello(Records(Handshake(HelloBody(big))).substr(0, 9));
  EXPECT_EQ(r.status, TlsStatus::kMalformed);
  EXPECT_EQ(r.why, "ClientHello longer than 16384 bytes");
}

TEST(EgressTls, ReadsNameCaseEchAndEsni) {
  HelloSpec s;
  s.exts = {SniExt("WWW.Example.COM."), Ext(kExtEncryptedClientHello, "\x00\x00\x01\x00\x01"s)};
  HelloParse r = ParseClientHello(Hello(s));
  ASSERT_EQ(r.status, TlsStatus::kOk) << r.why;
  EXPECT_EQ(r.value.sni, "www.example.com");
  EXPECT_TRUE(r.value.ech);
  EXPECT_FALSE(r.value.esni);
  s.exts = {Ext(kExtEsni, "x")};
  r = ParseClientHello(Hello(s));
  ASSERT_EQ(r.status, TlsStatus::kOk) << r.why;
  EXPECT_EQ(r.value.sni, "");
  EXPECT_TRUE(r.value.esni);
  s.no_extensions = true;
  r = ParseClientHello(Hello(s));
  ASSERT_EQ(r.status, TlsStatus::kOk) << r.why;
  EXPECT_EQ(r.value.sni, "");
}

TEST(EgressTls, NonTlsBytesAreRefusedAtOnce) {
  EXPECT_EQ(ParseClientHello("").status, TlsStatus::kNeedMore);
  EXPECT_EQ(ParseClientHello("G").status, TlsStatus::kMalformed);
  EXPECT_EQ(ParseClientHello("GET / HTTP/1.1\r\n").why, "not a TLS handshake record");
  EXPECT_EQ(ParseClientHello("\x16\x02").status, TlsStatus::kMalformed);
  EXPECT_EQ(ParseClientHello("\x16\x03\x00"s).status, TlsStatus::kMalformed);  // SSL 3.0
  EXPECT_EQ(ParseClientHello("\x16\x03\x05"s).status, TlsStatus::kMalformed);
  EXPECT_EQ(ParseClientHello("\x16\x03\x01\x00"s).status, TlsStatus::kNeedMore);
  EXPECT_EQ(ParseClientHello("\x16\x03\x01\x00\x05\x02"s).why, "handshake is not a ClientHello");
  // SSLv2-compatible hellos are not TLS records.
  EXPECT_EQ(ParseClientHello("\x80\x2e\x01\x03\x01"s).status, TlsStatus::kMalformed);
}

TEST(EgressTls, RefusesLyingLengths) {
  std::string hs = Handshake(HelloBody({}));
  struct Case {
    std::string bytes;
    const char* why;
  };
  auto with = [&](auto change) {
    HelloSpec c;
    change(c);
    return Hello(c);
  };
  std::string body = HelloBody({});
  std::vector<Case> cases = {
      {"\x16\x03\x01\x00\x00"s, "empty handshake record"},
      {"\x16\x03\x01\x40\x01"s, "longer than 16384"},
      {"\x16\x03\x01\xff\xff"s, "longer than 16384"},
      {"\x16\x03\x01\x00\x04\x01\xff\xff\xff"s, "ClientHello longer than 16384"},
      {Records(hs.substr(0, 10)) + "\x15\x03\x03\x00\x02\x02\x28"s, "another type"},
      {Records(Handshake(body.substr(0, 10))), "runs past"},
      {with([](HelloSpec& c) { c.version = 0x0300; }), "version not TLS"},
      {with([](HelloSpec& c) { c.version = 0x0304; }), "version not TLS"},
      {with([](HelloSpec& c) { c.session = std::string(33, 's'); }), "session id"},
      {with([](HelloSpec& c) { c.suites = "\x13\x01\x13"; }), "odd length"},
      {with([](HelloSpec& c) { c.suites = ""; }), "odd length"},
      {with([](HelloSpec& c) { c.compression = "\x01"; }), "without null"},
      {with([](HelloSpec& c) {
         c.exts = {SniExt("a.example"), SniExt("b.example")};
       }),
       "twice"},
      {with([](HelloSpec& c) {
         c.exts = {Ext(5, ""), Ext(5, "")};
       }),
       "twice"},
      {with([](HelloSpec& c) { c.exts = {Be16(0) + Be16(100) + "short"}; }), "runs past"},
      {with([](HelloSpec& c) { c.exts = {Ext(0, "")}; }), "list length"},
      {with([](HelloSpec& c) { c.exts = {Ext(0, Be16(0))}; }), "empty server_name list"},
      {with([](HelloSpec& c) {
         c.exts = {Ext(0, Be16(20) + "\0\0\x0b"
                                     "example.com"s)};
       }),
       "list length"},
      {with([](HelloSpec& c) {
         c.exts = {Ext(0, Be16(14) + "\0\0\x0c"
                                     "example.com"s)};
       }),
       "runs past its list"},
      {with([](HelloSpec& c) {
         std::string two =
             "\0\0\x03"
             "a.b\0\0\x03"
             "c.d"s;
         c.exts = {Ext(0, Be16(two.size()) + two)};
       }),
       "more than one entry"},
      {with([](HelloSpec& c) { c.exts = {SniExt("example.com", 1)}; }), "other than host_name"},
      {with([](HelloSpec& c) { c.exts = {SniExt("10.0.0.1")}; }), "IP address"},
      {with([](HelloSpec& c) { c.exts = {SniExt("::1")}; }), "not allowed in a host name"},
      {with([](HelloSpec& c) { c.exts = {SniExt("example.com\0.evil.net"s)}; }), "control"},
      {with([](HelloSpec& c) { c.exts = {SniExt("")}; }), "empty name"},
      {with([](HelloSpec& c) { c.exts = {SniExt("b\u00fccher.example")}; }), "punycode"},
  };
  // The extensions block says more, or less, than the hello holds.
  std::string more = body;
  size_t ext_len_at = 2 + 32 + 1 + 32 + 2 + 6 + 1 + 1;
  more[ext_len_at + 1] = static_cast<char>(more[ext_len_at + 1] + 1);
  cases.push_back({Records(Handshake(more)), "extensions length"});
  std::string less = body;
  less[ext_len_at + 1] = static_cast<char>(less[ext_len_at + 1] - 1);
  cases.push_back({Records(Handshake(less)), "extensions length"});
  cases.push_back({Records(Handshake(body + "x")), "extensions length"});

  for (const Case& c : cases) {
    HelloParse r = ParseClientHello(c.bytes);
    EXPECT_EQ(r.status, TlsStatus::kMalformed) << c.why;
    EXPECT_NE(r.why.find(c.why), std::string::npos) << c.why << " vs " << r.why;
    // Cut anywhere, it is never read past its end.
    for (size_t n = 0; n < c.bytes.size(); ++n) {
      EXPECT_NE(ParseClientHello(c.bytes.substr(0, n)).status, TlsStatus::kOk) << c.why << n;
    }
  }
}

TEST(EgressTls, AnAddressForAServerNameIsMarkedAsSuch) {
  HelloSpec spec;
  spec.exts = {SniExt("198.51.100.20")};
  HelloParse r = ParseClientHello(Hello(spec));
  ASSERT_EQ(r.status, HelloParse::Status::kMalformed);
  EXPECT_TRUE(r.address) << r.why;
  spec.exts = {SniExt("bad_name.test")};
  r = ParseClientHello(Hello(spec));
  ASSERT_EQ(r.status, HelloParse::Status::kMalformed);
  EXPECT_FALSE(r.address) << r.why;
}

TEST(EgressTls, AlertRecord) {
  EXPECT_EQ(TlsAlert(kAlertAccessDenied), "\x15\x03\x03\x00\x02\x02\x31"s);
  EXPECT_EQ(TlsAlert(kAlertUnrecognizedName), "\x15\x03\x03\x00\x02\x02\x70"s);
}

// ---- HTTP ----

using HttpStatus = HostParse::Status;

// The proxy's reading of a connection's first request on port 80: framed as every request
// is (http/framing.h), then its Host read for the name. kNeedMore until a head is whole.
HostParse FirstHost(std::string_view in) {
  http::Rules rules;
  http::RequestFramer f(&rules);
  std::string out;
  while (!in.empty() && !f.refusal()) {
    http::RequestFramer::Step s = f.Feed(in, out);
    in.remove_prefix(s.consumed);
    if (s.head) return ParseHost(f.head().host);
    if (s.consumed == 0 && !s.done) break;
  }
  HostParse r;
  if (f.refusal()) {
    r.status = HttpStatus::kMalformed;
    r.why = f.why();
  }
  return r;
}

TEST(EgressHttp, RealClientsRequests) {
  // A seed of fuzz_http: two bytes of its own (piece size, flags), then the client's bytes.
  std::string curl = Corpus("http/curl-get").substr(2);
  HostParse r = FirstHost(curl);
  ASSERT_EQ(r.status, HttpStatus::kOk) << r.why;
  EXPECT_EQ(r.value.name, "example.com");
  EXPECT_EQ(r.value.port, 0);
  r = FirstHost(Corpus("http/wget-get-port").substr(2));
  ASSERT_EQ(r.status, HttpStatus::kOk) << r.why;
  EXPECT_EQ(r.value.name, "pkg.example.com");
  EXPECT_EQ(r.value.port, 8082);
  for (size_t n = 0; n < curl.size(); ++n) {
    ASSERT_EQ(FirstHost(curl.substr(0, n)).status, HttpStatus::kNeedMore) << n;
  }
  r = FirstHost(curl + "body bytes\0\r\n"s);
  EXPECT_EQ(r.status, HttpStatus::kOk);
}

TEST(EgressHttp, HostForms) {
  struct Case {
    const char* req;
    const char* host;
    uint16_t port;
  };
  for (const Case& c : std::vector<Case>{
           {"GET / HTTP/1.1\r\nhOsT: Example.COM.\r\n\r\n", "example.com", 0},
           {"GET / HTTP/1.1\r\nHost: \t example.com \t\r\n\r\n", "example.com", 0},
           {"GET / HTTP/1.1\r\nHost:example.com:8080\r\nX: \x80\xff\r\n\r\n", "example.com", 8080},
           {"GET http://Example.com/x?y HTTP/1.1\r\nHost: example.com:80\r\n\r\n", "example.com",
            80},
           {"GET HTTP://example.com:8080 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", "example.com",
            8080},
           {"GET / HTTP/1.0\r\nHost: xn--bcher-kva.example\r\n\r\n", "xn--bcher-kva.example", 0},
       }) {
    HostParse r = FirstHost(c.req);
    ASSERT_EQ(r.status, HttpStatus::kOk) << c.req << ": " << r.why;
    EXPECT_EQ(r.value.name, c.host) << c.req;
    EXPECT_EQ(r.value.port, c.port) << c.req;
  }
}

TEST(EgressHttp, AnAddressForAHostIsMarkedAsSuch) {
  for (const char* req : {"GET / HTTP/1.1\r\nHost: 198.51.100.20\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: 198.51.100.20:80\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: [::ffff:198.51.100.20]\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: 127.1\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: 0x7F000001\r\n\r\n"}) {
    HostParse r = FirstHost(req);
    ASSERT_EQ(r.status, HttpStatus::kMalformed) << req;
    EXPECT_TRUE(r.address) << req << ": " << r.why;
  }
  for (const char* req : {"GET / HTTP/1.1\r\nHost: exa_mple.com\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: user@example.com\r\n\r\n",
                          "GET / HTTP/1.1\r\n\r\n"}) {
    HostParse r = FirstHost(req);
    ASSERT_EQ(r.status, HttpStatus::kMalformed) << req;
    EXPECT_FALSE(r.address) << req;
  }
}

TEST(EgressName, AddressLiterals) {
  for (const char* a : {"198.51.100.20", "198.51.100.20.", "[::1]", "2001:db8::1", "127.1",
                        "2130706433", "0X7F000001", "a.b.0x10"}) {
    EXPECT_TRUE(IsAddressLiteral(a)) << a;
  }
  for (const char* n : {"", ".", "example.com", "198.51.100.com", "xn--bcher-kva.test",
                        "1e100.net", "0x.test", "a.0xg"}) {
    EXPECT_FALSE(IsAddressLiteral(n)) << n;
  }
}

// Every head two readers could take for different hosts or different requests is refused,
// and no prefix of it is read as a request.
TEST(EgressHttp, RefusesAmbiguousHeads) {
  struct Case {
    std::string req;
    const char* why;
  };
  std::vector<Case> cases = {
      {"GET / HTTP/1.1\r\n\r\n", "no Host"},
      {"GET / HTTP/1.0\r\n\r\n", "no Host"},
      {"GET / HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\n\r\n", "more than one Host"},
      {"GET / HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n", "more than one Host"},
      {"GET / HTTP/1.1\r\nHost: a.example\r\n b.example\r\n\r\n", "obs-fold"},
      {"GET / HTTP/1.1\r\nX: 1\r\n\tHost: b.example\r\nHost: a.example\r\n\r\n", "obs-fold"},
      {"GET / HTTP/1.1\nHost: a.example\n\n", "bare LF"},
      {"GET / HTTP/1.1\r\nHost: a.example\n\r\n", "bare LF"},
      {"GET / HTTP/1.1\r\nHost: a.example\rX: y\r\n\r\n", "malformed"},
      {"GET / HTTP/1.1\r\nHost: a.exa\0mple\r\n\r\n"s, "malformed"},
      {"GET / HTTP/1.1\r\nX: \x01\r\nHost: a.example\r\n\r\n", "malformed"},
      {"GET / HTTP/1.1\r\nHost : a.example\r\n\r\n", "malformed"},
      {"GET / HTTP/1.1\r\nHost\r\n\r\n", "malformed"},
      {"GET / HTTP/1.1\r\n: a.example\r\n\r\n", "malformed"},
      {"GET / HTTP/1.1\r\nHost: \r\n\r\n", "empty host"},
      {"GET / HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", "IP address"},
      {"GET / HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n", "IP address"},
      {"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "IP literal"},
      {"GET / HTTP/1.1\r\nHost: ::1\r\n\r\n", "port"},
      {"GET / HTTP/1.1\r\nHost: a.example:0\r\n\r\n", "port"},
      {"GET / HTTP/1.1\r\nHost: a.example:65536\r\n\r\n", "port"},
      {"GET / HTTP/1.1\r\nHost: a.example:\r\n\r\n", "port"},
      {"GET / HTTP/1.1\r\nHost: a.example:80:80\r\n\r\n", "port"},
      {"GET / HTTP/1.1\r\nHost: user@a.example\r\n\r\n", "userinfo"},
      {"GET / HTTP/1.1\r\nHost: a.example/x\r\n\r\n", "not allowed"},
      {"GET / HTTP/1.1\r\nHost: b\u00fccher.example\r\n\r\n", "punycode"},
      {"GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", "names http://a.example"},
      {"GET http://a.example:8080/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "names http://a.exa"},
      {"GET http://a.example/ HTTP/1.1\r\n\r\n", "no Host"},
      {"GET http://u@a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "absolute-form"},
      {"GET ftp://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "names ftp://"},
      {"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", "CONNECT"},
      {"OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n", "absolute-form"},
      {"GET a.example HTTP/1.1\r\nHost: a.example\r\n\r\n", "malformed"},
      {"GET / HTTP/2.0\r\nHost: a.example\r\n\r\n", "HTTP/1.x"},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "malformed"},
      {"GET / http/1.1\r\nHost: a.example\r\n\r\n", "malformed"},
      {"GET /\xc3\xa9 HTTP/1.1\r\nHost: a.example\r\n\r\n", "malformed"},
      {"G(T / HTTP/1.1\r\nHost: a.example\r\n\r\n", "malformed"},
      {"\x16\x03\x01\x02\x00\x01", "malformed"},
      {" GET / HTTP/1.1\r\n", "malformed"},
      {"GET /#frag HTTP/1.1\r\nHost: a.example\r\n\r\n", "fragment"},
      {"GET /ws HTTP/1.1\r\nHost: a.example\r\nUpgrade: websocket\r\n\r\n", "Upgrade"},
      {"GET / HTTP/1.1\r\nX: " + std::string(http::kMaxHead, 'x'), "larger than"},
  };
  for (const Case& c : cases) {
    HostParse r = FirstHost(c.req);
    EXPECT_EQ(r.status, HttpStatus::kMalformed) << Printable(c.req);
    EXPECT_NE(r.why.find(c.why), std::string::npos) << c.why << " vs " << r.why;
    for (size_t n = 0; n < c.req.size() && n < 200; ++n) {
      EXPECT_NE(FirstHost(c.req.substr(0, n)).status, HttpStatus::kOk) << c.why << n;
    }
  }
  // A TLS hello on port 80 is refused from its first byte, a method's first byte is not.
  EXPECT_EQ(FirstHost("\x16").status, HttpStatus::kMalformed);
  EXPECT_EQ(FirstHost("G").status, HttpStatus::kNeedMore);
}

}  // namespace
}  // namespace brig::egress
