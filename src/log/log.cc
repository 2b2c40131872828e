// The log's state (threshold, sink, format, forwarder) and its two line shapes.
#include "log/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/parse.h"

namespace brig::log {
namespace {

// One process, one log: main configures it before anything else runs. brig init is a
// clone of the supervisor, not an exec, so it starts with the same threshold and only
// has to swap the sink for a forwarder.
Level g_threshold = Level::kWarn;
Format g_format = Format::kText;
int g_fd = STDERR_FILENO;
Forwarder g_forwarder = nullptr;

void WriteAll(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to say that the log failed
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string_view LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warning";
    case Level::kError: return "error";
  }
  return "error";
}

Status Configure(bool debug, const std::string& path, Format format) {
  g_threshold = debug ? Level::kDebug : Level::kWarn;
  g_format = format;
  if (g_fd != STDERR_FILENO) close(g_fd);
  g_fd = STDERR_FILENO;
  if (path.empty()) return {};
  // Not following a final symlink and not blocking: a FIFO with no reader fails here
  // (ENXIO) instead of holding brig in open(2); one with a reader is refused below.
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                0600);
  if (fd < 0 && errno == ELOOP) return BadInput("--log", path, "a symlink");
  if (fd < 0 && errno == ENXIO) return BadInput("--log", path, "not a regular file");
  if (fd < 0) return BadInput("--log", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return BadInput("--log", path, "not a regular file");
  }
  g_fd = fd;
  return {};
}

bool Enabled(Level l) { return l >= g_threshold; }

std::string JsonEscape(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else if (c >= 0x80) {
      size_t n = util::Utf8Length(s, i);
      out += n == 0 ? std::string_view("\\ufffd") : s.substr(i, n);
      i += n == 0 ? 1 : n;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

struct timespec Now() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

std::string Timestamp(const struct timespec& ts) {
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char buf[48];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%09ldZ", ts.tv_nsec);
  return buf;
}

// The shapes of runc's logrus lines, keys in the same order.
std::string FormatLine(Format f, Level l, std::string_view msg, std::string_view time) {
  std::string m = JsonEscape(msg);
  std::string level(LevelName(l));
  if (f == Format::kJson) {
    return "{\"level\":\"" + level + "\",\"msg\":\"" + m + "\",\"time\":\"" + std::string(time) +
           "\"}\n";
  }
  return "time=\"" + std::string(time) + "\" level=" + level + " msg=\"" + m + "\"\n";
}

void Write(Level l, std::string_view msg) {
  if (!Enabled(l)) return;
  if (g_forwarder) return g_forwarder(l, msg);
  WriteAt(l, msg, Now());
}

void WriteAt(Level l, std::string_view msg, const struct timespec& when) {
  if (!Enabled(l)) return;
  // One write(2) per line: with O_APPEND, lines of processes sharing the file stay whole.
  WriteAll(g_fd, FormatLine(g_format, l, msg, Timestamp(when)));
}

void Mirror(Level l, std::string_view msg) {
  if (g_fd != STDERR_FILENO) Write(l, msg);
}

void ForwardTo(Forwarder f) { g_forwarder = f; }

void Line::Add(std::string_view s) {
  size_t n = std::min(s.size(), kMax - n_);
  memcpy(buf_ + n_, s.data(), n);
  n_ += n;
}

}  // namespace brig::log
