// libFuzzer target: what --export-changes reads of the copy's git repository, which the
// sandbox wrote (fs/export_git.h): HEAD's first line and a packed-refs file. The input is
// HEAD, a NUL, then packed-refs. Besides "no crash, no UB": a commit returned is an object
// name, a ref stays a plain name under refs/ that cannot climb out of .git.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fs/export_git.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view head = in.substr(0, nul);
  std::string_view packed = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  auto h = brig::fs::ParseHead(head);
  if (h) {
    FUZZ_CHECK(h->hash.empty() != h->ref.empty());
    if (!h->hash.empty()) FUZZ_CHECK(brig::fs::IsObjectHash(h->hash));
    if (!h->ref.empty()) {
      FUZZ_CHECK(h->ref.rfind("refs/", 0) == 0);
      FUZZ_CHECK(h->ref.find("..") == std::string::npos);
      FUZZ_CHECK(h->ref.find('\n') == std::string::npos && h->ref.find('\0') == std::string::npos);
      FUZZ_CHECK(h->ref.back() != '/');
      if (auto c = brig::fs::PackedRef(packed, h->ref)) FUZZ_CHECK(brig::fs::IsObjectHash(*c));
    }
  }
  if (auto c = brig::fs::PackedRef(packed, "refs/heads/main")) {
    FUZZ_CHECK(brig::fs::IsObjectHash(*c));
  }
  return 0;
}
