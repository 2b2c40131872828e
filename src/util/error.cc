// Rendering of brig::Error as the single line a user sees.
#include <cstring>

#include "brig/result.h"

namespace brig {

std::string Error::Render() const {
  std::string out = context;
  if (!out.empty()) out += ": ";
  out += op;
  if (!subject.empty()) out += " '" + subject + "'";
  if (!detail.empty()) out += ": " + detail;
  if (err != 0) {
    out += ": ";
    out += strerror(err);
  }
  // Subjects and details carry user and sandbox bytes: keep the line one line, and keep
  // control characters (newline, escape sequences) out of the terminal, as \xNN.
  std::string line;
  for (char c : out) {
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
