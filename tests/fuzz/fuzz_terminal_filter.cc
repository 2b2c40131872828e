// libFuzzer target: the terminal filter (supervise/terminal_filter.h), which reads what the
// workload writes to the caller's terminal. The input's first byte picks the terminal's
// codeset and the next two seed how the rest is cut into reads; whatever the cuts, the
// output must be the one-shot output, no longer than the input, a fixed point of the
// filter, and free of what makes a terminal answer, by a check written apart from the
// filter's own lists; unless the terminal is in UTF-8, with no byte 0x80 to 0x9F at all.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "supervise/terminal_filter.h"

namespace {

using brig::supervise::TerminalCodeset;
using brig::supervise::TerminalFilter;

std::string OneShot(std::string_view in, TerminalCodeset codeset) {
  TerminalFilter f(codeset);
  std::string out;
  f.Feed(in, out);
  return out;
}

bool In(std::string_view set, char c) { return set.find(c) != std::string_view::npos; }

// A CSI that makes a terminal answer: device attributes (c), status and cursor reports (n),
// window reports and the title stack (t), DECREQTPARM (x), media copy (i); the requests
// with an intermediate (DECRQM $ p, DECRQCRA * y, the locator's ', XTREPORTCOLORS #,
// DECSR + p, DECRQKD , w, DECRQUPSS & u, DECRQDE " v); XTQMODKEYS (? m), XTSMGRAPHICS
// (? S), kitty's keyboard flags (? u and the other markers), XTVERSION (> q).
bool CsiAnswers(char marker, std::string_view inter, char final) {
  if (In("cntxi", final)) return true;
  for (char c : inter) {
    if (In("$*'#+,&\"", c)) return true;
  }
  if (marker == '?' && In("mSu", final)) return true;
  return marker != 0 && marker != '?' && In("uq", final);
}

// Walks `out` as a terminal in `codeset` would and aborts on anything that answers or is
// not whole.
void CheckHarmless(std::string_view out, TerminalCodeset codeset) {
  if (codeset != TerminalCodeset::kUtf8) {
    // A C1 control to an 8-bit terminal, be it a byte of a UTF-8 character.
    for (char b : out) {
      FUZZ_CHECK(static_cast<uint8_t>(b) < 0x80 || static_cast<uint8_t>(b) >= 0xA0);
    }
  }
  size_t i = 0;
  while (i < out.size()) {
    auto c = static_cast<uint8_t>(out[i]);
    FUZZ_CHECK(c != 0x05);  // ENQ
    if (c >= 0x80 && codeset == TerminalCodeset::kEightBit) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      // Strict UTF-8, and no C1 control (U+0080 to U+009F) in it.
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      FUZZ_CHECK(c >= 0xC2 && c <= 0xF4 && i + len <= out.size());
      uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
      for (size_t k = 1; k < len; ++k) {
        auto cc = static_cast<uint8_t>(out[i + k]);
        FUZZ_CHECK((cc & 0xC0) == 0x80);
        cp = (cp << 6) | (cc & 0x3F);
      }
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      FUZZ_CHECK(cp >= kMin[len] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF));
      FUZZ_CHECK(cp >= 0xA0);
      i += len;
      continue;
    }
    if (c != 0x1b) {
      ++i;
      continue;
    }
    FUZZ_CHECK(i + 1 < out.size());
    char next = out[i + 1];
    // No string (OSC, DCS, SOS, PM, APC, screen's title), no DECID, never UTF-8 off.
    FUZZ_CHECK(!In("]PX^_kZ\\", next));
    if (next != '[') {
      size_t j = i + 1;
      while (j < out.size() && out[j] >= 0x20 && out[j] <= 0x2F) ++j;
      FUZZ_CHECK(j < out.size() && out[j] >= 0x30 && out[j] <= 0x7E);
      FUZZ_CHECK(!(next == '%' && out[j] != 'G'));
      i = j + 1;
      continue;
    }
    size_t j = i + 2;
    char marker = 0;
    if (j < out.size() && In("<=>?", out[j])) marker = out[j++];
    while (j < out.size() && In("0123456789;:", out[j])) ++j;
    size_t inter = j;
    while (j < out.size() && out[j] >= 0x20 && out[j] <= 0x2F) ++j;
    FUZZ_CHECK(j < out.size() && out[j] >= 0x40 && out[j] <= 0x7E);
    FUZZ_CHECK(!CsiAnswers(marker, out.substr(inter, j - inter), out[j]));
    i = j + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  constexpr TerminalCodeset kCodesets[] = {TerminalCodeset::kUtf8, TerminalCodeset::kEightBit,
                                           TerminalCodeset::kUnknown};
  TerminalCodeset codeset = kCodesets[data[0] % 3];
  uint32_t seed = data[1] | (data[2] << 8);
  std::string_view in(reinterpret_cast<const char*>(data) + 3, size - 3);

  std::string want = OneShot(in, codeset);
  FUZZ_CHECK(want.size() <= in.size());
  CheckHarmless(want, codeset);
  FUZZ_CHECK(OneShot(want, codeset) == want);

  TerminalFilter f(codeset);
  std::string out;
  for (size_t at = 0; at < in.size();) {
    seed = seed * 1103515245 + 12345;
    size_t n = 1 + (seed >> 16) % 17;
    f.Feed(in.substr(at, n), out);
    at += n;
    FUZZ_CHECK(f.held() <= TerminalFilter::kMaxSequence);
    FUZZ_CHECK(out.size() + f.held() <= std::min(at, in.size()));
  }
  FUZZ_CHECK(out == want);
  return 0;
}
