// Brokers, the pure parts (issue 8): the --broker SPEC syntax and its checks. The HTTP
// framing they share with the proxy is tested in http_framing_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "broker/spec.h"
#include "config/profile.h"
#include "testlib/testlib.h"

namespace brig::broker {
namespace {

Result<Config> Spec(const std::string& s) {
  auto b = ParseSpec(s);
  if (!b) return std::move(b).error();
  return Check(*b);
}

std::string Why(const std::string& s) {
  auto c = Spec(s);
  return c ? "" : c.error().Render();
}

TEST(BrokerSpec, ReadsEveryKey) {
  auto c = Spec(
      "model=port=8080,unix=/run/brig/model.sock,to=https://API.example.com,"
      "header=x-api-key:env:MODEL_KEY,header=Authorization:file:/etc/brig/tok,"
      "attribution=x-run");
  ASSERT_TRUE(c) << c.error().Render();
  EXPECT_EQ(c->name, "model");
  EXPECT_EQ(c->port, 8080);
  EXPECT_EQ(c->unix_path, "/run/brig/model.sock");
  EXPECT_EQ(c->to.kind, Target::kHttps);
  EXPECT_EQ(c->to.host, "api.example.com");
  EXPECT_EQ(c->to.port, 443);
  EXPECT_EQ(c->to.Authority(), "api.example.com");
  EXPECT_TRUE(c->http);
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[0].name, "x-api-key");
  EXPECT_EQ(c->headers[0].from, "env:MODEL_KEY");
  EXPECT_EQ(c->headers[1].from, "file:/etc/brig/tok");
  EXPECT_EQ(c->attribution, "x-run");
}

TEST(BrokerSpec, ModeFollowsTheTarget) {
  auto tcp = Spec("db=port=5432,to=tcp:127.0.0.1:5432");
  ASSERT_TRUE(tcp);
  EXPECT_FALSE(tcp->http);
  EXPECT_EQ(tcp->to.Str(), "tcp:127.0.0.1:5432");
  auto unix_http = Spec("tools=unix=/run/t.sock,to=unix:/run/tools.sock,mode=http");
  ASSERT_TRUE(unix_http);
  EXPECT_TRUE(unix_http->http);
  EXPECT_EQ(unix_http->attribution, kDefaultAttribution);
  auto headers = Spec("t=port=1,to=unix:/x,header=a:env:A");
  ASSERT_TRUE(headers);
  EXPECT_TRUE(headers->http);
  auto plain = Spec("p=port=81,to=http://[::1]:8080/");
  ASSERT_TRUE(plain) << plain.error().Render();
  EXPECT_EQ(plain->to.Authority(), "[::1]:8080");
}

TEST(BrokerSpec, RefusesWhatIsMalformedOrConflicting) {
  struct Case {
    const char* spec;
    const char* why;
  } cases[] = {
      {"noequals", "expected NAME=SPEC"},
      {"bad name=port=1,to=unix:/x", "is not 1-32 characters"},
      {"=port=1,to=unix:/x", "is not 1-32 characters"},
      {"m=port=0,to=unix:/x", "'0' is not 1-65535"},
      {"m=port=65536,to=unix:/x", "'65536' is not 1-65535"},
      {"m=port=1,port=2,to=unix:/x", "'port' given twice"},
      {"m=port=1,to=unix:/x,colour=red", "unknown key 'colour'"},
      {"m=port=1,to=unix:relative.sock", "'relative.sock' is not absolute"},
      {"m=unix=run/x.sock,to=unix:/x", "'run/x.sock' is not absolute"},
      {"m=unix=/run/../x.sock,to=unix:/x", "not a normalised path"},
      {"m=unix=/proc/x.sock,to=unix:/x", "under /proc"},
      {"m=unix=/workspace/x.sock,to=unix:/x", "/workspace"},
      {"m=to=unix:/x", "no listener inside"},
      {"m=port=1", "missing: where the broker forwards to"},
      {"m=port=1,to=ftp://x", "is none of"},
      {"m=port=1,to=http://x/v1", "no path"},
      {"m=port=1,to=tcp:host", "names no port"},
      {"m=port=1,to=tcp:h:0", "'0' is not 1-65535"},
      {"m=port=1,to=https://user@h", "no path"},
      {"m=port=1,to=unix:/x,header=bad name:env:K", "'bad name' is not an HTTP header name"},
      {"m=port=1,to=unix:/x,header=x-k:env:1K", "'1K' is not a variable name"},
      {"m=port=1,to=unix:/x,header=x-k:file:rel", "is not absolute"},
      {"m=port=1,to=unix:/x,header=x-k:secret", "neither env:VAR nor file:/PATH"},
      {"m=port=1,to=unix:/x,header=x-k", "expected NAME:env:VAR"},
      {"m=port=1,to=unix:/x,header=Host:env:H", "frames the request"},
      {"m=port=1,to=unix:/x,header=a:env:A,header=A:env:B", "given twice"},
      {"m=port=1,to=unix:/x,header=x-brig-attribution:env:A", "given twice"},
      {"m=port=1,to=unix:/x,attribution=a b", "not an HTTP header name"},
      {"m=port=1,to=http://h,mode=tcp", "the target is an http(s) URL"},
      {"m=port=1,to=unix:/x,header=a:env:A,mode=tcp", "headers, attribution"},
      {"m=port=1,to=unix:/x,methods=GET,mode=tcp", "methods and paths are HTTP's"},
      {"m=port=1,to=http://h,methods=", "empty"},
      {"m=port=1,to=http://h,methods=GET,methods=PUT", "'methods' given twice"},
      {"m=port=1,to=http://h,methods=GET,GET", "'GET' given twice"},
      {"m=port=1,to=http://h,methods=GET,TRACE", "TRACE is never brokered"},
      {"m=port=1,to=http://h,methods=G T", "not a method name"},
      {"m=port=1,to=http://h,paths=v1", "does not start with /"},
      {"m=port=1,to=http://h,paths=/v1/../admin", ". or .. segment"},
      {"m=port=1,to=http://h,paths=/v1//x", "empty segment"},
      {"m=port=1,to=http://h,paths=/v1/%2e", "percent-encodes"},
      {"m=port=1,to=http://h,paths=/;a/v1/", "another host"},
      {"m=port=1,to=http://h,paths=/v1?x", "'?' or '#'"},
      {"m=port=1,to=http://h,paths=/a,/a", "given twice"},
      {"m=port=1,to=http://h,POST", "'POST' is not KEY=VALUE"},
      {"m=port=1,to=unix:/x,mode=udp", "neither http nor tcp"},
  };
  for (const auto& c : cases) {
    std::string why = Why(c.spec);
    EXPECT_NE(why.find(c.why), std::string::npos) << c.spec << " -> " << why;
  }
}

// methods= and paths= are lists that go on over the items after them without '='.
TEST(BrokerSpec, MethodsAndPathsBindTheBroker) {
  auto c = Spec("m=port=1,methods=GET,POST,to=http://h,paths=/v1/,/v2/models,header=a:env:A");
  ASSERT_TRUE(c) << c.error().Render();
  EXPECT_EQ(c->methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(c->paths, (std::vector<std::string>{"/v1/", "/v2/models"}));
  EXPECT_TRUE(c->http);
  auto unix_target = Spec("m=port=1,to=unix:/x,paths=/v1/");
  ASSERT_TRUE(unix_target) << unix_target.error().Render();
  EXPECT_TRUE(unix_target->http);
  auto none = Spec("m=port=1,to=http://h");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->methods.empty() && none->paths.empty());
}

TEST(BrokerSpec, BrokersOfARunAreDistinct) {
  auto a = *Spec("a=port=8080,unix=/run/a.sock,to=unix:/x");
  auto dup_name = *Spec("a=port=8081,to=unix:/x");
  auto dup_port = *Spec("b=port=8080,to=unix:/x");
  auto dup_path = *Spec("c=unix=/run/a.sock,to=unix:/x");
  auto inside = *Spec("d=unix=/run/a.sock/d.sock,to=unix:/x");
  auto other = *Spec("e=port=9,unix=/run/e.sock,to=unix:/x");
  EXPECT_TRUE(CheckAll({a, other}));
  EXPECT_NE(CheckAll({a, dup_name}).error().Render().find("used twice"), std::string::npos);
  EXPECT_NE(CheckAll({a, dup_port}).error().Render().find("taken"), std::string::npos);
  EXPECT_NE(CheckAll({a, dup_path}).error().Render().find("taken"), std::string::npos);
  EXPECT_NE(CheckAll({a, inside}).error().Render().find("inside another"), std::string::npos);
}

TEST(BrokerSpec, HeaderValuesComeFromTheHost) {
  testing::ScratchDir dir;
  std::string tok = dir.Write("tok", "Bearer abc\n");
  std::string crlf = dir.Write("crlf", "a\r\nInjected: 1\n");
  std::string e1 = "MODEL_KEY=k-123", e2 = "EMPTY=";
  char* env[] = {e1.data(), e2.data(), nullptr};
  auto c = *Spec("m=port=1,to=unix:/x,header=x-api-key:env:MODEL_KEY,header=a:file:" + tok);
  ASSERT_TRUE(Resolve(c, env));
  EXPECT_EQ(c.headers[0].value, "k-123");
  EXPECT_EQ(c.headers[1].value, "Bearer abc");
  auto missing = *Spec("m=port=1,to=unix:/x,header=k:env:NOT_SET_ANYWHERE");
  EXPECT_NE(Resolve(missing, env).error().Render().find("$NOT_SET_ANYWHERE is not set"),
            std::string::npos);
  auto empty = *Spec("m=port=1,to=unix:/x,header=k:env:EMPTY");
  EXPECT_NE(Resolve(empty, env).error().Render().find("is empty"), std::string::npos);
  auto unreadable = *Spec("m=port=1,to=unix:/x,header=k:file:" + dir.path() + "/none");
  EXPECT_NE(Resolve(unreadable, env).error().Render().find("No such file"), std::string::npos);
  auto injected = *Spec("m=port=1,to=unix:/x,header=k:file:" + crlf);
  EXPECT_NE(Resolve(injected, env).error().Render().find("CR, LF or NUL"), std::string::npos);
}

// A dry run plans without the secrets (issue 32, item 7): a header it cannot read is
// noted, not refused, and no value it could read is kept.
TEST(BrokerSpec, ADryRunNotesAnUnreadHeaderAndKeepsNoValue) {
  std::string e1 = "MODEL_KEY=k-123";
  char* env[] = {e1.data(), nullptr};
  auto c = *Spec("m=port=1,to=unix:/x,header=x-api-key:env:MODEL_KEY,header=b:env:UNSET_HERE");
  ASSERT_TRUE(Resolve(c, env, true));
  EXPECT_EQ(c.unread, std::vector<std::string>{"header b: $UNSET_HERE is not set"});
  for (const auto& h : c.headers) EXPECT_EQ(h.value, "") << h.name;
  auto run = *Spec("m=port=1,to=unix:/x,header=x-api-key:env:MODEL_KEY,header=b:env:UNSET_HERE");
  EXPECT_FALSE(Resolve(run, env));
}

TEST(BrokerSpec, ProfilesCheckTheirBrokers) {
  const std::string base =
      "isolation: ISOLATION_SANDBOX filesystem { workspace: WORKSPACE_RO } "
      "network { posture: POSTURE_NONE } security { seccomp_policy: \"default\" } ";
  auto ok =
      config::ParseProfile(base +
                               "brokers { name: \"m\" port: 8080 to: \"https://api.example.com\" "
                               "headers { name: \"x-api-key\" from: \"env:MODEL_KEY\" } "
                               "methods: \"GET\" paths: \"/v1/\" }",
                           "p");
  EXPECT_TRUE(ok) << ok.error().Render();
  auto unbound = config::ParseProfile(
      base + "brokers { name: \"m\" port: 8080 to: \"http://h\" paths: \"/v1/../x\" }", "p");
  ASSERT_FALSE(unbound);
  EXPECT_NE(unbound.error().Render().find(". or .. segment"), std::string::npos)
      << unbound.error().Render();
  auto bad = config::ParseProfile(base + "brokers { name: \"m\" port: 8080 to: \"ftp://x\" }", "p");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().Render().find("brokers"), std::string::npos) << bad.error().Render();
  auto twice = config::ParseProfile(base +
                                        "brokers { name: \"a\" port: 1 to: \"unix:/x\" } "
                                        "brokers { name: \"b\" port: 1 to: \"unix:/x\" }",
                                    "p");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().Render().find("taken"), std::string::npos);
  auto none = config::ParseProfile(
      "isolation: ISOLATION_NONE brokers { name: \"m\" port: 1 to: \"unix:/x\" }", "p");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("broker"), std::string::npos);
}

}  // namespace
}  // namespace brig::broker
