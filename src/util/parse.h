// Parsers for user-supplied values: durations, sizes, K=V pairs. Pure; unit-tested and
// fuzzed. Errors say what was wrong with the value, the caller adds which flag it was.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"

namespace brig::util {

// "30m", "2s", "500ms", "1h30m", "1.5s"; a bare number is seconds. Must be > 0.
Result<std::chrono::milliseconds> ParseDuration(std::string_view s);
// "1048576", "512K", "256M", "1G", "2GiB", "64MB" (binary units). Must be > 0.
Result<uint64_t> ParseSize(std::string_view s);
// A memory limit: a size of at least kMinMemory.
inline constexpr uint64_t kMinMemory = 6ull << 20;
Result<uint64_t> ParseMemory(std::string_view s);
// A cap on a copy workspace's changes (--disk-size): a size of at least kMinDiskSize, below
// which the file system that holds them has next to no room of its own.
inline constexpr uint64_t kMinDiskSize = 1ull << 20;
Result<uint64_t> ParseDiskSize(std::string_view s);
// "0", a size as ParseSize reads it, or "unlimited" (UINT64_MAX).
Result<uint64_t> ParseSizeLimit(std::string_view s);
// A CPU count, "0.5", "2", "1.25", in thousandths: at least 0.01, at most 1024.
Result<uint64_t> ParseCpus(std::string_view s);
// "123" or "unlimited".
Result<uint64_t> ParseLimit(std::string_view s);
// A /proc/PID/mountinfo field with its escapes undone (space, tab, newline and backslash
// are written as \ooo).
std::string UnescapeMountinfo(std::string_view f);
// The pieces of `s` between separators (an empty piece where two meet, or at an end).
std::vector<std::string_view> Split(std::string_view s, char sep);
// A valid environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvName(std::string_view s);
// One line of an env file (--env-file, as Docker reads one): "KEY=VALUE" sets KEY to
// everything after the first '=', as written (no quotes removed, no trimming); "KEY" alone
// passes the caller's value of KEY (`value` unset).
struct EnvFileEntry {
  std::string key;
  std::optional<std::string> value;
};
// The entries of an env file's text, in order: blank lines and lines whose first non-blank
// character is '#' are skipped; leading blanks and a trailing "\r" are dropped. An invalid
// name, or a NUL, is refused naming the line ("line 3: 'A-B' is not a variable name ...").
Result<std::vector<EnvFileEntry>> ParseEnvFile(std::string_view text);
// A name a harness gives a sandbox (--name) or a profile gives a mount: as a container's,
// [A-Za-z0-9][A-Za-z0-9_.-]{0,63}.
bool IsObjectName(std::string_view s);
// The value of `key` in an environ array (the last "key=value" entry), if it is set.
std::optional<std::string_view> EnvLookup(char** environ, std::string_view key);
// The length of the UTF-8 sequence at s[i], or 0 if it is not a well-formed one (overlong
// forms, surrogates and code points past U+10FFFF are not; neither is a lone ASCII byte,
// which is 1 byte long but not a sequence: callers test c < 0x80 first).
size_t Utf8Length(std::string_view s, size_t i);
// Whether all of `s` is well-formed UTF-8.
bool IsUtf8(std::string_view s);
// `s` as one line of text for a terminal or a JSON string, from bytes someone else wrote
// (a rationale, a description): control characters and runs of blanks become one space,
// bytes that are not UTF-8 become U+FFFD, and the ends are trimmed. Escape sequences
// cannot move the cursor or hide the text around them.
std::string OneLine(std::string_view s);

}  // namespace brig::util
