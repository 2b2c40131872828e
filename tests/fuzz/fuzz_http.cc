// libFuzzer target: the HTTP/1.1 framing brokers and the port-80 proxy share (http/framing.h)
// of sandbox bytes (requests) and upstream bytes (responses), and the proxy's reading of a
// request's Host (egress/http.h). Besides "no crash, no UB": however the bytes are split,
// the request framer sends the same bytes on, finds the same requests and refuses alike;
// every head it sends is origin-form, ends in CRLF CRLF with no bare LF, has one Host (the
// rules' when they set one) and the set headers once each at its end, and passes the
// rules' methods and paths and, for a broker, names no other host (AnotherHost); the
// response framer never reads past its input and never ends more responses than were asked
// for; a Host the proxy accepts is a normalised name.
//
// Input: one byte for the piece size, one of flags (bit 0: responses; bit 1: a broker's
// target Host and own_host; bit 2: no TRACE, methods and paths bound; bits 3-5 for
// responses: how many were asked for, bit 6 the first was a HEAD), then the bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/allowlist.h"
#include "egress/http.h"
#include "fuzz_common.h"
#include "http/framing.h"

namespace {

using brig::http::RequestFramer;
using brig::http::Rules;

struct Run {
  std::string out;
  std::vector<std::string> heads;  // method + " " + path + " " + host of each
  int done = 0;
  int refusal = 0;
};

size_t Count(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string_view::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

void CheckHead(const Rules& rules, const RequestFramer& f, std::string_view head) {
  FUZZ_CHECK(head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n");
  FUZZ_CHECK(Count(head, "\n") == Count(head, "\r\n"));
  size_t sp = head.find(' ');
  FUZZ_CHECK(sp != std::string_view::npos && head.substr(sp + 1, 1) == "/");
  FUZZ_CHECK(head.substr(sp + 1, 2) != "//" || (rules.paths.empty() && !rules.own_host));
  FUZZ_CHECK(head.find("\r\nx-secret: s3cr3t\r\nx-brig-attribution: id/1\r\n\r\n") !=
             std::string_view::npos);
  FUZZ_CHECK(Count(head, "\r\nx-secret:") == 1);
  const auto& h = f.head();
  FUZZ_CHECK(h.path.find('?') == std::string::npos && h.path[0] == '/');
  if (!rules.host.empty()) {
    FUZZ_CHECK(h.host == rules.host);
    FUZZ_CHECK(Count(head, "\r\nHost: " + rules.host + "\r\n") == 1);
  }
  if (rules.no_trace) FUZZ_CHECK(h.method != "TRACE");
  if (!rules.methods.empty()) FUZZ_CHECK(h.method == "GET" || h.method == "POST");
  if (!rules.paths.empty()) FUZZ_CHECK(brig::http::PathAllowed(h.path, rules.paths));
  if (rules.own_host) FUZZ_CHECK(brig::http::AnotherHost(h.path).empty());
  auto host = brig::egress::ParseHost(h.host);
  if (host.status == brig::egress::PeekStatus::kOk) {
    FUZZ_CHECK(brig::egress::NormalizeName(host.value.name) == host.value.name);
  } else {
    FUZZ_CHECK(!host.why.empty());
  }
}

Run Requests(const Rules& rules, std::string_view in, size_t piece) {
  RequestFramer f(&rules);
  Run r;
  for (size_t at = 0; at < in.size() && !f.refusal(); at += piece) {
    std::string_view chunk = in.substr(at, piece);
    while (!chunk.empty() && !f.refusal()) {
      size_t before = r.out.size();
      auto s = f.Feed(chunk, r.out);
      FUZZ_CHECK(s.consumed <= chunk.size());
      if (s.head) {
        r.heads.push_back(f.head().method + " " + f.head().path + " " + f.head().host);
        CheckHead(rules, f, std::string_view(r.out).substr(before));
      }
      r.done += s.done;
      if (s.consumed == 0 && !s.head && !s.done) break;
      chunk.remove_prefix(s.consumed);
    }
  }
  r.refusal = f.refusal();
  if (r.refusal) {
    FUZZ_CHECK(r.refusal == 400 || r.refusal == 403 || r.refusal == 405 || r.refusal == 431 ||
               r.refusal == 501);
    FUZZ_CHECK(!f.why().empty());
    for (char c : f.why()) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20);  // an audit line
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 200000) return -1;
  size_t piece = 1 + data[0] % 64;
  uint8_t flags = data[1];
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (!(flags & 1)) {
    Rules rules;
    rules.set = {{"x-secret", "s3cr3t"}, {"x-brig-attribution", "id/1"}};
    if (flags & 2) {
      rules.host = "target.example";
      rules.own_host = true;
    }
    if (flags & 4) {
      rules.no_trace = true;
      rules.methods = {"GET", "POST"};
      rules.paths = {"/v1/", "/models"};
    }
    Run whole = Requests(rules, in, in.size() ? in.size() : 1);
    Run split = Requests(rules, in, piece);
    FUZZ_CHECK(whole.out == split.out);
    FUZZ_CHECK(whole.heads == split.heads);
    FUZZ_CHECK(whole.done == split.done);
    FUZZ_CHECK(whole.refusal == split.refusal);
    return 0;
  }
  brig::http::ResponseFramer f;
  size_t asked = 1 + (flags >> 3) % 8;
  for (size_t i = 0; i < asked; ++i) f.Expect((flags & 64) && i == 0);
  size_t ended = 0;
  for (size_t at = 0; at < in.size() && !f.malformed(); at += piece) {
    std::string_view chunk = in.substr(at, piece);
    while (!chunk.empty() && !f.malformed()) {
      auto s = f.Feed(chunk);
      FUZZ_CHECK(s.consumed <= chunk.size());
      ended += s.done;
      if (s.consumed == 0 && !s.done) break;
      chunk.remove_prefix(s.consumed);
    }
  }
  ended += f.Eof().done;
  FUZZ_CHECK(ended <= asked);
  FUZZ_CHECK(f.outstanding() == asked - ended);
  return 0;
}
