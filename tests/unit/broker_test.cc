// Brokers, the pure parts (issue 8): the --broker SPEC syntax and its checks, and the HTTP
// framing that rewrites request heads and finds where requests and responses end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "broker/http.h"
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
      {"m=port=1,to=unix:/x,header=a:env:A,mode=tcp", "headers and attribution"},
      {"m=port=1,to=unix:/x,mode=udp", "neither http nor tcp"},
  };
  for (const auto& c : cases) {
    std::string why = Why(c.spec);
    EXPECT_NE(why.find(c.why), std::string::npos) << c.spec << " -> " << why;
  }
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

TEST(BrokerSpec, ProfilesCheckTheirBrokers) {
  const std::string base =
      "isolation: ISOLATION_SANDBOX filesystem { workspace: WORKSPACE_RO } "
      "network { posture: POSTURE_NONE } security { seccomp_policy: \"default\" } ";
  auto ok =
      config::ParseProfile(base +
                               "brokers { name: \"m\" port: 8080 to: \"https://api.example.com\" "
                               "headers { name: \"x-api-key\" from: \"env:MODEL_KEY\" } }",
                           "p");
  EXPECT_TRUE(ok) << ok.error().Render();
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

// ---- framing ------------------------------------------------------------------------------

struct Framed {
  std::string out;
  std::vector<RequestHead> heads;
  int done = 0;
  int refusal = 0;
};

// Feeds `in` to a request framer in pieces of `piece` bytes.
Framed FeedRequests(const Rewrite& rw, const std::string& in, size_t piece) {
  RequestFramer f(&rw);
  Framed r;
  for (size_t at = 0; at < in.size() && !f.refusal(); at += piece) {
    std::string_view chunk = std::string_view(in).substr(at, piece);
    while (!chunk.empty() && !f.refusal()) {
      auto s = f.Feed(chunk, r.out);
      if (s.head) r.heads.push_back(f.head());
      r.done += s.done;
      if (s.consumed == 0 && !s.head && !s.done) break;
      chunk.remove_prefix(s.consumed);
    }
  }
  r.refusal = f.refusal();
  return r;
}

Rewrite ModelRewrite() {
  Rewrite rw;
  rw.set = {{"x-api-key", "host-secret"}, {"x-brig-attribution", "brig-0123456789ab/2"}};
  return rw;
}

TEST(BrokerHttp, ReplacesClientCopiesAndSetsAttribution) {
  std::string req =
      "GET /v1/models?key=q HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-API-KEY: forged\r\n"
      "x-brig-attribution: someone-else\r\nAccept: */*\r\n\r\n";
  Framed r = FeedRequests(ModelRewrite(), req, req.size());
  EXPECT_EQ(r.out,
            "GET /v1/models?key=q HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n"
            "x-api-key: host-secret\r\nx-brig-attribution: brig-0123456789ab/2\r\n\r\n");
  ASSERT_EQ(r.heads.size(), 1u);
  EXPECT_EQ(r.heads[0].method, "GET");
  EXPECT_EQ(r.heads[0].path, "/v1/models");
  EXPECT_EQ(r.heads[0].host, "127.0.0.1:8080");
  EXPECT_EQ(r.done, 1);
}

TEST(BrokerHttp, HostIsTheTargetsForAnHttpTarget) {
  Rewrite rw = ModelRewrite();
  rw.host = "api.example.com";
  Framed r = FeedRequests(rw, "GET / HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n", 7);
  EXPECT_EQ(r.out,
            "GET / HTTP/1.1\r\nHost: api.example.com\r\nx-api-key: host-secret\r\n"
            "x-brig-attribution: brig-0123456789ab/2\r\n\r\n");
  EXPECT_EQ(r.heads.at(0).host, "api.example.com");
}

TEST(BrokerHttp, KeepAliveChunkedBodiesPassAsTheyCame) {
  std::string body = "5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n";
  std::string req = "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body +
                    "PUT /b HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nwxyz" +
                    "GET /c HTTP/1.1\r\nHost: h\r\n\r\n";
  std::string want;
  for (size_t piece : {req.size(), size_t{1}, size_t{2}, size_t{5}, size_t{13}}) {
    Framed r = FeedRequests(ModelRewrite(), req, piece);
    ASSERT_EQ(r.refusal, 0);
    EXPECT_EQ(r.done, 3) << piece;
    ASSERT_EQ(r.heads.size(), 3u);
    EXPECT_EQ(r.heads[1].method, "PUT");
    EXPECT_EQ(r.heads[2].path, "/c");
    EXPECT_NE(r.out.find("\r\n\r\n" + body + "PUT /b"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("x-brig-attribution: brig-0123456789ab/2\r\n\r\nwxyzGET /c"),
              std::string::npos);
    if (want.empty()) want = r.out;
    EXPECT_EQ(r.out, want) << "split in pieces of " << piece;
  }
}

TEST(BrokerHttp, RefusesUpgradeConnectAndMalformedHeads) {
  EXPECT_EQ(FeedRequests(ModelRewrite(),
                         "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n"
                         "Upgrade: websocket\r\n\r\n",
                         100)
                .refusal,
            501);
  Framed connect = FeedRequests(ModelRewrite(), "CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 100);
  EXPECT_EQ(connect.refusal, 501);
  EXPECT_EQ(connect.out, "");
  EXPECT_EQ(FeedRequests(ModelRewrite(), "GET / HTTP/1.1\r\nBad Header\r\n\r\n", 100).refusal, 400);
  EXPECT_EQ(FeedRequests(ModelRewrite(), "\x16\x03\x01\x02\x00", 100).refusal, 400);
  // http-parser takes any byte after the head's last CR; brig does not (found by fuzzing).
  for (size_t piece : {size_t{1}, size_t{5}, size_t{100}}) {
    EXPECT_EQ(FeedRequests(ModelRewrite(), "GET / HTTP/1.1\r\nHost: h\r\n\r-x", piece).refusal,
              400);
  }
  // After a good request, a bad one: the good one went on whole, nothing of the bad one.
  Framed r = FeedRequests(ModelRewrite(), "GET /ok HTTP/1.1\r\nHost: h\r\n\r\nJUNK\r\n\r\n", 3);
  EXPECT_EQ(r.done, 1);
  EXPECT_EQ(r.refusal, 400);
  EXPECT_EQ(r.out.find("JUNK"), std::string::npos);
  std::string huge = "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(70000, 'a') + "\r\n\r\n";
  EXPECT_NE(FeedRequests(ModelRewrite(), huge, 4096).refusal, 0);
}

TEST(BrokerHttp, ResponsesEndWhereTheyEnd) {
  ResponseFramer f;
  f.Expect(false);
  f.Expect(true);  // HEAD: no body, whatever Content-Length says
  f.Expect(false);
  std::string in =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nevent1\r\n0\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"
      "HTTP/1.1 404 Not Found\r\n\r\ntail until close";
  std::vector<int> statuses;
  size_t passed = 0;
  std::string_view rest = in;
  while (!rest.empty()) {
    auto s = f.Feed(rest.substr(0, 3));
    passed += s.consumed;
    if (s.done) statuses.push_back(s.status);
    rest.remove_prefix(s.consumed);
    ASSERT_FALSE(f.malformed()) << f.why();
  }
  EXPECT_EQ(passed, in.size());
  EXPECT_EQ(statuses, (std::vector<int>{200, 200}));
  auto end = f.Eof();
  EXPECT_TRUE(end.done);
  EXPECT_EQ(end.status, 404);
  EXPECT_EQ(f.outstanding(), 0u);
}

TEST(BrokerHttp, UnaskedOrMalformedResponsesEndTheConnection) {
  ResponseFramer unasked;
  unasked.Feed("HTTP/1.1 200 OK\r\n\r\n");
  EXPECT_TRUE(unasked.malformed());
  ResponseFramer bad;
  bad.Expect(false);
  bad.Feed("SSH-2.0-OpenSSH\r\n");
  EXPECT_TRUE(bad.malformed());
}

}  // namespace
}  // namespace brig::broker
