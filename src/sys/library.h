// A shared library that brig opens at its first use instead of linking it (libnftables,
// libssl): what every process of brig would otherwise pay to load it is paid only by the
// runs that use it. dlopen(RTLD_NOW | RTLD_LOCAL), never closed; each function looked up by
// name into a pointer of its own type.
#pragma once

#include <string>

namespace brig::sys {

class Library {
 public:
  explicit Library(const char* soname);
  // Looks `name` up into `f` (decltype(&function)); null once anything has failed.
  template <typename F>
  void Find(F& f, const char* name) {
    f = reinterpret_cast<F>(Symbol(name));
  }
  // Empty when the library opened and every name was found; otherwise the first failure:
  // dlerror's text, or "has no NAME".
  const std::string& error() const { return error_; }

 private:
  void* Symbol(const char* name);
  void* handle_;
  std::string error_;
};

}  // namespace brig::sys
