// Error and Result<T>: the one error model of brig (style.md 2.3). No exceptions in src/.
// An Error renders as one line: "context: op 'subject': strerror". Library code returns it;
// the verb that ran prints it once (cli/cli.h), or brig init sends it to brig (sync.h).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace brig {

// What kind of failure this is, for the exit code and the result's error_code.
enum class ErrorKind {
  kSetup,          // brig failed or refused: exit 125, error_code setup_failed
  kBadInput,       // the caller's input is wrong: exit 125, error_code setup_failed
  kPolicy,         // a policy refused the run: exit 125, error_code policy_denied
  kNotFound,       // the command was not found: exit 127
  kNotExecutable,  // the command was found but cannot be executed: exit 126
  kInternal,       // a bug or an impossible state: exit 125, error_code internal
};

struct Error {
  int err = 0;          // errno, 0 when there is none
  std::string op;       // what was attempted: "mount", "open", "parse"
  std::string subject;  // what it was attempted on: a path, a flag, a field
  std::string detail;   // why, when there is no errno: "unknown unit 'x'"
  std::string context;  // outer layers, "container init: mount /proc"
  ErrorKind kind = ErrorKind::kSetup;

  // One line, no trailing newline.
  std::string Render() const;
  // Prepends one layer of context.
  Error Wrap(std::string_view layer) &&;
  Error WithKind(ErrorKind k) && {
    kind = k;
    return std::move(*this);
  }
};

// An error from a failed system call: captures errno at construction.
Error SysError(std::string op, std::string subject = {});
// An error with no errno: Fail("--timeout", "5x", "unknown unit 'x'") renders as
// "--timeout '5x': unknown unit 'x'".
Error Fail(std::string op, std::string subject, std::string detail,
           ErrorKind kind = ErrorKind::kSetup);
inline Error BadInput(std::string op, std::string subject, std::string detail) {
  return Fail(std::move(op), std::move(subject), std::move(detail), ErrorKind::kBadInput);
}

// The std::expected shape, until brig moves to C++23.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const {}
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace brig

// Evaluates a Result; on error returns it from the enclosing function, otherwise yields the
// value. A GNU statement expression, as nsjail's TEMP_FAILURE_RETRY.
#define BRIG_TRY(expr)                                   \
  ({                                                     \
    auto brig_try_r_ = (expr);                           \
    if (!brig_try_r_) return std::move(brig_try_r_).error(); \
    std::move(brig_try_r_).value();                      \
  })

// The same, adding one layer of context to the error.
#define BRIG_TRY_CTX(expr, layer)                                          \
  ({                                                                       \
    auto brig_try_r_ = (expr);                                             \
    if (!brig_try_r_) return std::move(brig_try_r_).error().Wrap(layer);   \
    std::move(brig_try_r_).value();                                        \
  })
