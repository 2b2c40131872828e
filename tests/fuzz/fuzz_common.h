// Shared by the libFuzzer targets: a check that aborts (so libFuzzer records the input)
// with a message, whatever NDEBUG says.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace brig::fuzz {

// result.h: "An Error renders as one line". Also what main.cc prints and what the
// --result JSON carries, so a newline here would forge a line of brig's output.
inline void CheckRendersOneLine(const Error& e) {
  std::string line = e.Render();
  if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos) {
    std::fprintf(stderr, "Render() is not one line: [%s]\n", line.c_str());
    std::abort();
  }
}

// 0..size: every length up to 600, beyond that the first and last 64 and 200 in between.
inline std::vector<size_t> PrefixLengths(size_t size) {
  std::vector<size_t> out;
  for (size_t n = 0; n <= size; ++n) {
    if (size <= 600 || n < 64 || size - n < 64 || n % (size / 200) == 0) out.push_back(n);
  }
  return out;
}

// For an incremental parser, which says kNeedMore until it can answer: once a prefix of
// `s` gets a final answer, every longer prefix gets the same one, and so does `s` (whose
// answer is `full`). `check` parses (and checks) one prefix; `same` compares answers.
template <typename Answer, typename Check, typename Same>
void CheckPrefixesAgree(std::string_view s, const Answer& full, Check check, Same same) {
  bool final = false;
  Answer first_final;
  for (size_t n : PrefixLengths(s.size())) {
    Answer p = check(s.substr(0, n));
    if (final) FUZZ_CHECK(same(p, first_final));
    if (!final && p.status != decltype(p.status)::kNeedMore) {
      final = true;
      first_final = p;
    }
  }
  if (final) FUZZ_CHECK(same(full, first_final));
}

}  // namespace brig::fuzz
