// libFuzzer target: the egress allowlist (egress/allowlist.h). The input is lines; each is
// tried as a name and as an entry, the entries that parse make one Allowlist, and every
// line, and names made from each pattern, are asked about. Besides "no crash, no UB":
// NormalizeName's output is a host name in brig's form and a fixed point; an entry prints
// back as itself; Allows agrees with a reference matcher over labels and never allows a
// name NormalizeName refuses.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "egress/allowlist.h"
#include "fuzz_common.h"

namespace {

using brig::egress::Allowlist;
using brig::egress::HostPattern;
using brig::egress::NormalizeName;

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

void CheckNormalForm(std::string_view in, const std::string& n) {
  FUZZ_CHECK(!n.empty() && n.size() <= brig::egress::kMaxNameLength);
  FUZZ_CHECK(n.size() <= in.size());
  for (std::string_view label : Split(n, '.')) {
    FUZZ_CHECK(!label.empty() && label.size() <= brig::egress::kMaxLabelLength);
    FUZZ_CHECK(label.front() != '-' && label.back() != '-');
    for (char c : label) FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  }
  // A name is never an address literal, which the proxy refuses as such.
  FUZZ_CHECK(!brig::egress::IsAddressLiteral(n));
  // A fixed point, and the same name whatever the case or one trailing dot.
  FUZZ_CHECK(NormalizeName(n) == n);
  FUZZ_CHECK(NormalizeName(n + ".") == n);
  std::string upper = n;
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  FUZZ_CHECK(NormalizeName(upper) == n);
  FUZZ_CHECK(!NormalizeName(n + "..") && !NormalizeName("." + n));
}

void Name(std::string_view s) {
  auto n = NormalizeName(s);
  auto checked = brig::egress::CheckName(s);
  FUZZ_CHECK(n.has_value() == checked.has_value());
  if (n) {
    FUZZ_CHECK(*n == *checked);
    CheckNormalForm(s, *n);
  } else {
    FUZZ_CHECK(checked.error().kind == brig::ErrorKind::kBadInput);
    FUZZ_CHECK(!checked.error().detail.empty());
    brig::fuzz::CheckRendersOneLine(checked.error());
  }
}

// The documented matching, written again over labels.
struct Reference {
  explicit Reference(const Allowlist& list) {
    for (const HostPattern& p : list.patterns()) patterns.push_back({&p, Split(p.name, '.')});
  }
  bool Allows(const std::string& name, uint16_t port) const {
    std::vector<std::string_view> n = Split(name, '.');
    for (const auto& [p, want] : patterns) {
      if (p->port != 0 && port != 0 && port != p->port) continue;
      if (n.size() < want.size() + (p->subdomains_only ? 1 : 0)) continue;
      if (std::equal(want.rbegin(), want.rend(), n.rbegin())) return true;
    }
    return false;
  }
  std::vector<std::pair<const HostPattern*, std::vector<std::string_view>>> patterns;
};

void Ask(const Allowlist& list, const Reference& ref, std::string_view name, uint16_t port) {
  bool allowed = list.Allows(name, port);
  auto n = NormalizeName(name);
  if (!n) {
    FUZZ_CHECK(!allowed);
    return;
  }
  FUZZ_CHECK(allowed == ref.Allows(*n, port));
  FUZZ_CHECK(list.Allows(*n, port) == allowed);
  if (allowed) FUZZ_CHECK(list.Allows(name, 0));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // entries and names are short; longer adds only time
  std::string_view s(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines = Split(s, '\n');
  // Every name is asked of every pattern: keep that quadratic cost small.
  if (lines.size() > 32) return -1;

  std::vector<std::string> entries;
  for (std::string_view line : lines) {
    Name(line);
    auto p = brig::egress::ParseHostPattern(line);
    if (!p) {
      FUZZ_CHECK(p.error().op == "allowlist entry" && p.error().subject == line);
      brig::fuzz::CheckRendersOneLine(p.error());
      continue;
    }
    FUZZ_CHECK(NormalizeName(p->name) == p->name);
    auto again = brig::egress::ParseHostPattern(p->Str());
    FUZZ_CHECK(again && *again == *p);
    entries.emplace_back(line);
  }
  auto list = Allowlist::Parse(entries);
  FUZZ_CHECK(list && list->patterns().size() == entries.size());
  Reference ref(*list);

  for (std::string_view line : lines) {
    for (uint16_t port : {0, 80, 443}) Ask(*list, ref, line, port);
  }
  // Names next to each pattern's: a subdomain, the apex, a label glued on either side; on
  // any port, the pattern's own and another.
  for (const HostPattern& p : list->patterns()) {
    for (const std::string& n : {p.name, "x." + p.name, "x" + p.name, p.name + ".x", "x-" + p.name,
                                 p.name + "-x", "X." + p.name + "."}) {
      for (uint16_t port : {uint16_t{0}, p.port, static_cast<uint16_t>(p.port + 1)}) {
        Ask(*list, ref, n, port);
      }
    }
  }
  return 0;
}
