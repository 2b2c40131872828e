// The egress parsers that read sandbox-controlled bytes: the allowlist and its name
// normalisation, DNS queries and the upstream's replies, the TLS ClientHello and the HTTP
// request head. Valid inputs are built byte by byte or are real clients' first flights
// (tests/fuzz/corpus/, captured on loopback); hostile ones are cut at every length.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "egress/allowlist.h"

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

}  // namespace
}  // namespace brig::egress
