// libFuzzer target: an http broker's framing (broker/http.h) of sandbox bytes (requests)
// and target bytes (responses). Besides "no crash, no UB": however the bytes are split, the
// request framer sends the same bytes upstream, finds the same requests and refuses alike;
// nothing it sends upstream comes after a refusal's point; every head it sends carries the
// injected headers once each, at its end; the response framer never reads past its input
// and never ends more responses than were asked for.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/http.h"
#include "fuzz_common.h"

namespace {

struct Run {
  std::string out;
  std::vector<std::string> heads;  // method + " " + path of each
  int done = 0;
  int refusal = 0;
  size_t consumed = 0;
};

Run Requests(const brig::broker::Rewrite& rw, std::string_view in, size_t piece) {
  brig::broker::RequestFramer f(&rw);
  Run r;
  for (size_t at = 0; at < in.size() && !f.refusal(); at += piece) {
    std::string_view chunk = in.substr(at, piece);
    while (!chunk.empty() && !f.refusal()) {
      size_t before = r.out.size();
      auto s = f.Feed(chunk, r.out);
      FUZZ_CHECK(s.consumed <= chunk.size());
      if (s.head) {
        r.heads.push_back(f.head().method + " " + f.head().path);
        std::string_view head(r.out.data() + before, r.out.size() - before);
        FUZZ_CHECK(head.find("\r\nx-secret: s3cr3t\r\nx-brig-attribution: id/1\r\n\r\n") !=
                   std::string_view::npos);
        FUZZ_CHECK(f.head().path.find('?') == std::string::npos);
      }
      r.done += s.done;
      r.consumed += s.consumed;
      if (s.consumed == 0 && !s.head && !s.done) break;
      chunk.remove_prefix(s.consumed);
    }
  }
  r.refusal = f.refusal();
  if (r.refusal) {
    FUZZ_CHECK(r.refusal == 400 || r.refusal == 431 || r.refusal == 501);
    FUZZ_CHECK(!f.why().empty());
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 200000) return -1;
  size_t piece = 1 + data[0] % 64;
  bool response = data[1] & 1;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (!response) {
    brig::broker::Rewrite rw;
    rw.set = {{"x-secret", "s3cr3t"}, {"x-brig-attribution", "id/1"}};
    if (data[1] & 2) rw.host = "target.example";
    Run whole = Requests(rw, in, in.size() ? in.size() : 1);
    Run split = Requests(rw, in, piece);
    FUZZ_CHECK(whole.out == split.out);
    FUZZ_CHECK(whole.heads == split.heads);
    FUZZ_CHECK(whole.done == split.done);
    FUZZ_CHECK(whole.refusal == split.refusal);
    return 0;
  }
  brig::broker::ResponseFramer f;
  size_t asked = 1 + data[1] / 2 % 8;
  for (size_t i = 0; i < asked; ++i) f.Expect(data[1] & 4 && i == 0);
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
