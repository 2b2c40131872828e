// Value parsers. No locale, no exceptions, overflow checked.
#include "util/parse.h"

#include <sys/resource.h>

#include <cctype>
#include <cmath>
#include <limits>

namespace brig::util {
namespace {

Error Bad(std::string_view value, std::string why) {
  return Fail("invalid value", std::string(value), std::move(why), ErrorKind::kBadInput);
}

// Reads a non-negative decimal number with an optional fraction at s[i...].
bool ReadNumber(std::string_view s, size_t& i, double& out) {
  size_t start = i;
  double v = 0;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
  if (i < s.size() && s[i] == '.') {
    ++i;
    double scale = 0.1;
    size_t frac = i;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
      v += (s[i++] - '0') * scale;
      scale /= 10;
    }
    if (i == frac) return false;
  }
  out = v;
  return i > start;
}

}  // namespace

Result<std::chrono::milliseconds> ParseDuration(std::string_view s) {
  if (s.empty()) return Bad(s, "empty duration");
  double total_ms = 0;
  size_t i = 0;
  while (i < s.size()) {
    double v;
    if (!ReadNumber(s, i, v)) return Bad(s, "expected a number, as in 30s, 5m, 1h30m");
    size_t u = i;
    while (i < s.size() && isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(u, i - u);
    double scale;
    if (unit.empty()) {
      if (i != s.size() || total_ms != 0) return Bad(s, "missing unit");
      scale = 1000;  // a bare number is seconds
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60e3;
    } else if (unit == "h") {
      scale = 3600e3;
    } else {
      return Bad(s, "unknown unit '" + std::string(unit) + "' (ms, s, m, h)");
    }
    total_ms += v * scale;
    if (total_ms > 1e12) return Bad(s, "too long");
  }
  if (total_ms < 1) return Bad(s, "must be at least 1ms");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

Result<uint64_t> ParseSize(std::string_view s) {
  if (s.empty()) return Bad(s, "empty size");
  size_t i = 0;
  double v;
  if (!ReadNumber(s, i, v)) return Bad(s, "expected a number, as in 512M or 1G");
  std::string unit;
  for (char c : s.substr(i)) unit += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  double scale;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return Bad(s, "unknown unit '" + std::string(s.substr(i)) + "' (K, M, G, T)");
  }
  double bytes = v * scale;
  if (bytes > 1e18) return Bad(s, "too large");
  if (bytes < 1) return Bad(s, "must be at least 1 byte");
  return static_cast<uint64_t>(bytes);
}

Result<uint64_t> ParseMemory(std::string_view s) {
  uint64_t v = BRIG_TRY(ParseSize(s));
  // Below this, brig init cannot even set the sandbox up (the floor Docker uses, too).
  if (v < kMinMemory) return Bad(s, "must be at least 6M");
  return v;
}

Result<uint64_t> ParseDiskSize(std::string_view s) {
  uint64_t v = BRIG_TRY(ParseSize(s));
  if (v < kMinDiskSize) return Bad(s, "must be at least 1M");
  return v;
}

Result<uint64_t> ParseSizeLimit(std::string_view s) {
  if (s == "0") return uint64_t{0};
  if (s == "unlimited") return UINT64_MAX;
  return ParseSize(s);
}

Result<uint64_t> ParseCpus(std::string_view s) {
  size_t i = 0;
  double v;
  if (!ReadNumber(s, i, v) || i != s.size()) return Bad(s, "expected a CPU count, as in 0.5 or 2");
  // cpu.max takes a quota of at least 1ms a 100ms period.
  if (v < 0.01) return Bad(s, "must be at least 0.01");
  if (v > 1024) return Bad(s, "must be at most 1024");
  return static_cast<uint64_t>(std::llround(v * 1000));
}

Result<uint64_t> ParseLimit(std::string_view s) {
  if (s == "unlimited") return uint64_t{RLIM_INFINITY};
  if (s.empty() || s.size() > 19) return Bad(s, "expected a number or 'unlimited'");
  uint64_t v = 0;
  for (char c : s) {
    if (!isdigit(static_cast<unsigned char>(c))) return Bad(s, "expected a number or 'unlimited'");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string UnescapeMountinfo(std::string_view f) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 3 < f.size() && f[i + 1] >= '0' && f[i + 1] <= '3') {
      out += static_cast<char>((f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0'));
      i += 3;
    } else {
      out += f[i];
    }
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::optional<std::string_view> EnvLookup(char** environ, std::string_view key) {
  std::optional<std::string_view> found;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=') {
      found = kv.substr(key.size() + 1);
    }
  }
  return found;
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Result<std::vector<EnvFileEntry>> ParseEnvFile(std::string_view text) {
  std::vector<EnvFileEntry> out;
  size_t number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line.remove_prefix(first);
    auto bad = [&](const std::string& why) {
      return Fail("line " + std::to_string(number), "", why, ErrorKind::kBadInput);
    };
    if (line.find('\0') != std::string_view::npos) return bad("holds a NUL byte");
    size_t eq = line.find('=');
    std::string key(line.substr(0, eq));
    if (!IsEnvName(key)) {
      return bad("'" + OneLine(key) + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    EnvFileEntry e{key, std::nullopt};
    if (eq != std::string_view::npos) e.value = std::string(line.substr(eq + 1));
    out.push_back(std::move(e));
  }
  return out;
}

bool IsObjectName(std::string_view s) {
  if (s.empty() || s.size() > 64 || !isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

size_t Utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xc0) != 0x80) return 0;
  }
  unsigned char c1 = at(i + 1);
  if (c == 0xe0 && c1 < 0xa0) return 0;  // overlong
  if (c == 0xed && c1 >= 0xa0) return 0;  // surrogate
  if (c == 0xf0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xf4 && c1 >= 0x90) return 0;  // past U+10FFFF
  return n;
}

bool IsUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : Utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string OneLine(std::string_view s) {
  std::string out;
  auto blank = [&] {
    if (!out.empty() && out.back() != ' ') out += ' ';
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c <= 0x20 || c == 0x7f) {
      blank();
      ++i;
    } else if (c >= 0x80) {
      size_t n = Utf8Length(s, i);
      out += n == 0 ? std::string_view("\xef\xbf\xbd") : s.substr(i, n);
      i += n == 0 ? 1 : n;
    } else {
      out += static_cast<char>(c);
      ++i;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace brig::util
