// Shared by the libFuzzer targets: a check that aborts (so libFuzzer records the input)
// with a message, whatever NDEBUG says.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace brig::fuzz
