#include "sys/library.h"

#include <dlfcn.h>

namespace brig::sys {

Library::Library(const char* soname) : handle_(dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
  if (!handle_) {
    const char* why = dlerror();
    error_ = why ? why : "cannot be loaded";
  }
}

void* Library::Symbol(const char* name) {
  if (!error_.empty()) return nullptr;
  void* f = dlsym(handle_, name);
  if (!f) error_ = std::string("has no ") + name;
  return f;
}

}  // namespace brig::sys
