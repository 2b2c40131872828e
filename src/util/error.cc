// Rendering of brig::Error as the single line a user sees.
#include <cstring>

#include "brig/result.h"

namespace brig {
namespace {

// A path or value is shown whole up to this many bytes, a line up to kMaxLine: a
// 100,000-byte path the user passed is not worth repeating, and a terminal or a result
// file should not have to hold it.
constexpr size_t kMaxSubject = 256;
constexpr size_t kMaxLine = 2048;

// `s` whole if it fits in `max` bytes, else its start and end around "...", never cutting
// a UTF-8 sequence.
std::string Shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80; };
  size_t head = (max - 3) / 2, tail = s.size() - (max - 3 - head);
  while (head > 0 && continuation(head)) --head;
  while (tail < s.size() && continuation(tail)) ++tail;
  return s.substr(0, head) + "..." + s.substr(tail);
}

}  // namespace

std::string Error::Render() const {
  std::string out = context;
  if (!out.empty()) out += ": ";
  out += op;
  if (!subject.empty()) out += " '" + Shorten(subject, kMaxSubject) + "'";
  if (!detail.empty()) out += ": " + detail;
  if (err != 0) {
    out += ": ";
    out += strerror(err);
  }
  // Subjects and details carry user and sandbox bytes: keep the line one line, and keep
  // control characters (newline, escape sequences) out of the terminal, as \xNN.
  std::string line;
  for (char c : Shorten(out, kMaxLine)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      line += "\\x";
      line += kHex[(c >> 4) & 15];
      line += kHex[c & 15];
    } else {
      line += c;
    }
  }
  return line;
}

Error Error::Wrap(std::string_view layer) && {
  if (context.empty()) {
    context = layer;
  } else {
    context = std::string(layer) + ": " + context;
  }
  return std::move(*this);
}

Error SysError(std::string op, std::string subject) {
  Error e;
  e.err = errno;
  e.op = std::move(op);
  e.subject = std::move(subject);
  return e;
}

Error Fail(std::string op, std::string subject, std::string detail, ErrorKind kind) {
  Error e;
  e.op = std::move(op);
  e.subject = std::move(subject);
  e.detail = std::move(detail);
  e.kind = kind;
  return e;
}

}  // namespace brig
