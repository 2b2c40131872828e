// brig's debugging log: levels, one sink (stderr or a file), runc's text or json line
// shape. It is extra to the one-line errors users see, which it never replaces. Library
// code logs at debug level only (style.md 2.3). Inside brig init, lines are handed to a
// forwarder that sends them to the supervisor (container/sync.h, kLog): a line is built in
// a fixed buffer, so logging allocates nothing until it reaches the supervisor's sink.
#pragma once

#include <time.h>

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "brig/result.h"

namespace brig::log {

enum class Level : uint8_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kText, kJson };

std::string_view LevelName(Level l);

// Where the log goes and what it keeps: debug and info only with `debug`; an empty `path`
// is stderr. A file is opened for appending, without following a final symlink and
// without blocking, and must be a regular file (a FIFO or a device is refused).
Status Configure(bool debug, const std::string& path, Format format);

bool Enabled(Level l);

// One line for the sink, ending in '\n'. `time` is RFC 3339 with nanoseconds, UTC.
// text: time="..." level=debug msg="..."     json: {"level":"debug","msg":"...","time":"..."}
std::string FormatLine(Format f, Level l, std::string_view msg, std::string_view time);
// `s` as the inside of a JSON string: quotes, backslashes and control characters escaped,
// bytes that are not UTF-8 replaced by U+FFFD, so every line parses.
std::string JsonEscape(std::string_view s);
std::string Timestamp(const struct timespec& when);
struct timespec Now();

// Writes one line at `l` (if enabled): to the forwarder when one is set, else to the sink,
// stamped `when` (a line brig init sent keeps the time it was made).
void Write(Level l, std::string_view msg);
void WriteAt(Level l, std::string_view msg, const struct timespec& when);

// A line that was also printed on stderr (the one-line error of a run): written only when
// the log has a file of its own, so a caller reading that file (as containerd reads runc's
// log for its error) finds it, and stderr never holds it twice.
void Mirror(Level l, std::string_view msg);

// Inside brig init: every line goes to `f` instead of the sink (which is the supervisor's
// file). nullptr: back to the sink.
using Forwarder = void (*)(Level, std::string_view);
void ForwardTo(Forwarder f);

// A line assembled from pieces in a fixed buffer (long lines are cut): no allocation.
class Line {
 public:
  static constexpr size_t kMax = 2048;
  void Add(std::string_view s);
  template <std::integral T>
  void Add(T v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (ec == std::errc()) Add(std::string_view(buf, static_cast<size_t>(end - buf)));
  }
  std::string_view view() const { return {buf_, n_}; }

 private:
  char buf_[kMax];
  size_t n_ = 0;
};

template <typename... Args>
void At(Level l, const Args&... parts) {
  if (!Enabled(l)) return;
  Line line;
  (line.Add(parts), ...);
  Write(l, line.view());
}

template <typename... Args>
void Debug(const Args&... parts) {
  At(Level::kDebug, parts...);
}
template <typename... Args>
void Info(const Args&... parts) {
  At(Level::kInfo, parts...);
}
template <typename... Args>
void Warn(const Args&... parts) {
  At(Level::kWarn, parts...);
}
template <typename... Args>
void Error(const Args&... parts) {
  At(Level::kError, parts...);
}

}  // namespace brig::log
