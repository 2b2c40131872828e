// libFuzzer target: the value parsers of util/parse.h (flag values typed by a user, and
// --env-file's files).
// Each input is one string given to every parser; besides "no crash, no UB" it checks
// the documented contracts and compares against simple reference implementations.
#include <sys/resource.h>

#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.h"
#include "util/parse.h"

namespace {

using brig::ErrorKind;
using brig::fuzz::CheckRendersOneLine;

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

uint64_t Decimal(std::string_view s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  FUZZ_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size());
  return v;
}

void CheckError(const brig::Error& e) {
  FUZZ_CHECK(e.kind == ErrorKind::kBadInput);
  FUZZ_CHECK(!e.detail.empty());
  CheckRendersOneLine(e);
}

void Duration(std::string_view s) {
  auto d = brig::util::ParseDuration(s);
  auto again = brig::util::ParseDuration(s);
  FUZZ_CHECK(d.has_value() == again.has_value());
  if (!d) {
    CheckError(d.error());
    FUZZ_CHECK(d.error().Render() == again.error().Render());
  } else {
    FUZZ_CHECK(*d == *again);
    FUZZ_CHECK(d->count() >= 1);                  // "Must be > 0", rounded to >= 1ms
    FUZZ_CHECK(d->count() <= 1'000'000'000'000);  // the "too long" bound
  }
  // A bare number is seconds; "<n>ms" is milliseconds. Exact for these sizes.
  if (s.size() <= 9 && AllDigits(s)) {
    uint64_t n = Decimal(s);
    FUZZ_CHECK(d.has_value() == (n > 0));
    if (d) FUZZ_CHECK(static_cast<uint64_t>(d->count()) == n * 1000);
  }
  if (s.size() > 2 && s.size() <= 11 && s.substr(s.size() - 2) == "ms" &&
      AllDigits(s.substr(0, s.size() - 2))) {
    uint64_t n = Decimal(s.substr(0, s.size() - 2));
    FUZZ_CHECK(d.has_value() == (n > 0));
    if (d) FUZZ_CHECK(static_cast<uint64_t>(d->count()) == n);
  }
}

void Size(std::string_view s) {
  auto v = brig::util::ParseSize(s);
  auto again = brig::util::ParseSize(s);
  FUZZ_CHECK(v.has_value() == again.has_value());
  if (!v) {
    CheckError(v.error());
  } else {
    FUZZ_CHECK(*v == *again);
    FUZZ_CHECK(*v >= 1);
    FUZZ_CHECK(*v <= 1'000'000'000'000'000'000ull);
  }
  // Plain byte counts and KiB counts are exact below 2^53.
  if (s.size() <= 15 && AllDigits(s)) {
    uint64_t n = Decimal(s);
    FUZZ_CHECK(v.has_value() == (n > 0));
    if (v) FUZZ_CHECK(*v == n);
  }
  if (s.size() >= 2 && s.size() <= 13 && (s.back() == 'K' || s.back() == 'k') &&
      AllDigits(s.substr(0, s.size() - 1))) {
    uint64_t n = Decimal(s.substr(0, s.size() - 1));
    FUZZ_CHECK(v.has_value() == (n > 0));
    if (v) FUZZ_CHECK(*v == n * 1024);
  }
}

void Limit(std::string_view s) {
  auto v = brig::util::ParseLimit(s);
  if (s == "unlimited") {
    FUZZ_CHECK(v && *v == uint64_t{RLIM_INFINITY});
    return;
  }
  // Exactly 1..19 decimal digits (19 digits always fit in 64 bits).
  bool want = AllDigits(s) && s.size() <= 19;
  FUZZ_CHECK(v.has_value() == want);
  if (v) {
    FUZZ_CHECK(*v == Decimal(s));
  } else {
    CheckError(v.error());
  }
}

void EnvName(std::string_view s) {
  bool want = !s.empty() && !(s[0] >= '0' && s[0] <= '9');
  for (char c : s) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    want = want && ok;
  }
  FUZZ_CHECK(brig::util::IsEnvName(s) == want);
}

void SizeLimit(std::string_view s) {
  auto v = brig::util::ParseSizeLimit(s);
  if (!v) {
    CheckError(v.error());
    return;
  }
  // "0" and "unlimited" are the only additions to ParseSize.
  if (s == "0") FUZZ_CHECK(*v == 0);
  if (s == "unlimited") FUZZ_CHECK(*v == UINT64_MAX);
  if (s != "0" && s != "unlimited") FUZZ_CHECK(*v == *brig::util::ParseSize(s));
}

void Memory(std::string_view s) {
  auto v = brig::util::ParseMemory(s);
  auto size = brig::util::ParseSize(s);
  if (!v) {
    CheckError(v.error());
    FUZZ_CHECK(!size || *size < brig::util::kMinMemory);
    return;
  }
  FUZZ_CHECK(size && *v == *size && *v >= brig::util::kMinMemory);
}

void Cpus(std::string_view s) {
  auto v = brig::util::ParseCpus(s);
  if (!v) {
    CheckError(v.error());
    return;
  }
  FUZZ_CHECK(*v >= 10 && *v <= 1024000);  // 0.01 .. 1024 CPUs in thousandths
  // Whole numbers are exact.
  if (s.size() <= 4 && AllDigits(s)) FUZZ_CHECK(*v == Decimal(s) * 1000);
}

}  // namespace

// An env file (--env-file): every entry is a valid name with, if set, a value holding no
// newline; each comes from one line of the input, in order; an error names a line.
void EnvFile(std::string_view s) {
  auto e = brig::util::ParseEnvFile(s);
  if (!e) {
    CheckError(e.error());
    FUZZ_CHECK(e.error().op.rfind("line ", 0) == 0);
    return;
  }
  size_t lines = 1;
  for (char c : s) lines += c == '\n';
  FUZZ_CHECK(e->size() <= lines);
  size_t searched = 0;
  for (const auto& entry : *e) {
    FUZZ_CHECK(brig::util::IsEnvName(entry.key));
    if (entry.value) FUZZ_CHECK(entry.value->find('\n') == std::string::npos);
    size_t at = s.find(entry.key, searched);
    FUZZ_CHECK(at != std::string_view::npos);
    searched = at + entry.key.size();
  }
}

// A --name or mount name: the container-name charset, 1 to 64 bytes.
void ObjectName(std::string_view s) {
  bool want = !s.empty() && s.size() <= 64 && s[0] != '_' && s[0] != '.' && s[0] != '-';
  for (char c : s) {
    want = want && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-');
  }
  FUZZ_CHECK(brig::util::IsObjectName(s) == want);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // flag values are short; longer adds nothing but time
  std::string_view s(reinterpret_cast<const char*>(data), size);
  Duration(s);
  Size(s);
  Limit(s);
  SizeLimit(s);
  Memory(s);
  Cpus(s);
  EnvName(s);
  EnvFile(s);
  ObjectName(s);
  return 0;
}
