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
  return out;
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
