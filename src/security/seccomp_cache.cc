// The seccomp filter cache (see seccomp_cache.h), a util::TrustedCache.
#include "security/seccomp_cache.h"

#include <seccomp.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "util/files.h"
#include "util/trusted_cache.h"

namespace brig::security {
namespace {

// The program for `text` from `cache_dir`, or compile()'s, stored for the next time.
// `kind` keeps a policy file's text and a serialized policy message apart; libseccomp's
// version shapes the program too.
Result<SeccompProgram> Cached(std::string_view kind, const std::string& text,
                              const std::string& cache_dir,
                              const std::function<Result<SeccompProgram>()>& compile) {
  util::TrustedCache cache(cache_dir, std::string(kind) + "/libseccomp " + LibseccompVersion());
  // The value: u32 flags | sock_filter[...], native byte order.
  std::optional<std::string> hit = cache.Get(text);
  if (hit && hit->size() > sizeof(uint32_t)) {
    size_t n = hit->size() - sizeof(uint32_t);
    if (n % sizeof(sock_filter) == 0) {
      SeccompProgram p;
      memcpy(&p.flags, hit->data(), sizeof(uint32_t));
      p.insns.resize(n / sizeof(sock_filter));
      memcpy(p.insns.data(), hit->data() + sizeof(uint32_t), n);
      return p;
    }
  }
  SeccompProgram p = BRIG_TRY(compile());
  uint32_t flags = p.flags;
  std::string value(reinterpret_cast<const char*>(&flags), sizeof flags);
  value.append(reinterpret_cast<const char*>(p.insns.data()), p.insns.size() * sizeof(sock_filter));
  cache.Put(text, value);
  return p;
}

}  // namespace

Result<SeccompProgram> CompileSeccompFile(const std::string& policy_path,
                                          const std::string& cache_dir) {
  std::string text = BRIG_TRY_CTX(util::ReadUserFile(policy_path), "seccomp policy");
  SeccompProgram p = BRIG_TRY(Cached("file", text, cache_dir, [&]() -> Result<SeccompProgram> {
    auto policy = BRIG_TRY(ParseSeccompPolicy(text, policy_path));
    return BRIG_TRY_CTX(CompileSeccomp(policy), "seccomp policy " + policy_path);
  }));
  p.text = std::move(text);
  return p;
}

Result<SeccompProgram> CompileSeccompCached(
    const v1::SeccompPolicy& policy, const std::string& cache_dir, std::string_view kind,
    const std::function<Result<SeccompProgram>(const v1::SeccompPolicy&)>& compile) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    if (!policy.SerializeToCodedStream(&coded)) {
      return Fail("seccomp policy", "", "cannot be serialized");
    }
  }
  return Cached("message " + std::string(kind), bytes, cache_dir, [&] { return compile(policy); });
}

}  // namespace brig::security
