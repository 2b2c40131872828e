// What brig derives from a text and would otherwise derive again at every start (a
// compiled seccomp filter, a parsed profile), kept in a directory that only its user writes.
// An entry is named by a hash of the text and of what shapes the derived bytes (the kind
// of entry, brig's version and build, a library version the caller names), and it holds
// all of them whole: it is used only when they match byte for byte, so a hash collision
// can never select another text's entry, nor another kind's or build's. A directory or an
// entry that anyone but brig's own user (root, or the ordinary user brig runs as) could
// have written is not used.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sys/fd.h"

namespace brig::util {

class TrustedCache {
 public:
  // The cache in `dir`, made (mode 0700, its parent too) if missing. `salt` names what,
  // besides the text, the entries depend on (with brig's version and the identity of its
  // executable, always included). An empty `dir`, or one that is not trusted: every
  // lookup misses and nothing is stored.
  TrustedCache(const std::string& dir, std::string_view salt);
  // The bytes stored for `text`, if a trusted entry holds exactly `text`.
  std::optional<std::string> Get(const std::string& text) const;
  // Stores `value` for `text` (best effort: a cache that cannot be written is no error).
  void Put(const std::string& text, std::string_view value) const;

 private:
  std::string EntryName(const std::string& text) const;
  std::string dir_, salt_;
  sys::UniqueFd fd_;
};

}  // namespace brig::util
