// libFuzzer target: `brig run --broker NAME=SPEC` (broker/spec.h), user bytes. Besides "no
// crash, no UB": an error renders as one line; a spec that checks names a valid broker (a
// name of [A-Za-z0-9_-], a listener, a target, header names that are HTTP tokens, methods
// and path prefixes the HTTP framing can hold a request to), and its target, written back
// out, parses to the same target.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "broker/spec.h"
#include "fuzz_common.h"
#include "http/framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;
  std::string_view s(reinterpret_cast<const char*>(data), size);
  auto parsed = brig::broker::ParseSpec(s);
  if (!parsed) {
    brig::fuzz::CheckRendersOneLine(parsed.error());
    return 0;
  }
  auto c = brig::broker::Check(*parsed);
  if (!c) {
    brig::fuzz::CheckRendersOneLine(c.error());
    return 0;
  }
  FUZZ_CHECK(!c->name.empty() && c->name.size() <= 32);
  FUZZ_CHECK(c->port != 0 || !c->unix_path.empty());
  FUZZ_CHECK(c->unix_path.empty() || c->unix_path[0] == '/');
  FUZZ_CHECK(brig::broker::IsHeaderName(c->attribution));
  for (const auto& h : c->headers) FUZZ_CHECK(brig::broker::IsHeaderName(h.name));
  // A binding holds only what the framing can enforce: method tokens, never TRACE, TRACK or
  // CONNECT; canonical path prefixes, which allow themselves.
  FUZZ_CHECK(c->http || (c->methods.empty() && c->paths.empty()));
  for (const auto& m : c->methods) {
    FUZZ_CHECK(brig::broker::IsHeaderName(m) && m != "TRACE" && m != "TRACK" && m != "CONNECT");
  }
  for (const auto& p : c->paths) {
    FUZZ_CHECK(brig::http::NotCanonical(p).empty() && brig::http::AnotherHost(p).empty() &&
               brig::http::PathAllowed(p, c->paths));
  }
  FUZZ_CHECK(brig::broker::CheckAll({*c}));
  // The target as brig writes it (the audit's host of a tcp broker) reads back the same.
  brig::v1::Broker again = *parsed;
  again.set_to(c->to.Str());
  auto c2 = brig::broker::Check(again);
  FUZZ_CHECK(c2);
  FUZZ_CHECK(c2->to.Str() == c->to.Str() && c2->to.kind == c->to.kind &&
             c2->to.port == c->to.port && c2->to.host == c->to.host);
  return 0;
}
