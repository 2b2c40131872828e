// libFuzzer target: profiles. ParseProfile reads protobuf text format and validates it;
// an accepted profile must have every default filled in by FillDefaults, with limits that
// brig run's own parsers accept. Errors name the file, or a field of it, in one line.
// Each accepted hidden path is a pattern that matches paths (fs/hidden.h): its own text,
// where it has no wildcard, and a deep path made of its components, in bounded time.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/profile.h"
#include "fs/hidden.h"
#include "fuzz_common.h"
#include "util/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto p = brig::config::ParseProfile(text, "fuzz.textproto");
  if (!p) {
    const brig::Error& e = p.error();
    FUZZ_CHECK(e.kind == brig::ErrorKind::kBadInput);
    FUZZ_CHECK(e.op.rfind("fuzz.textproto", 0) == 0);
    brig::fuzz::CheckRendersOneLine(e);
    return 0;
  }
  brig::v1::Profile profile = *p;
  brig::config::FillDefaults(profile);
  FUZZ_CHECK(profile.isolation() == brig::v1::ISOLATION_SANDBOX ||
             profile.isolation() == brig::v1::ISOLATION_NONE);
  FUZZ_CHECK(brig::util::ParseDuration(profile.limits().timeout()).has_value());
  FUZZ_CHECK(brig::util::ParseDuration(profile.limits().grace()).has_value());
  if (profile.isolation() == brig::v1::ISOLATION_SANDBOX) {
    FUZZ_CHECK(brig::util::ParseSize(profile.limits().tmp_size()).has_value());
    FUZZ_CHECK(!profile.security().seccomp_policy().empty());
    FUZZ_CHECK(profile.limits().disk().empty() ||
               (profile.filesystem().workspace() == brig::v1::WORKSPACE_COPY &&
                brig::util::ParseDiskSize(profile.limits().disk()).has_value()));
    FUZZ_CHECK(profile.filesystem().workspace() != brig::v1::WORKSPACE_ACCESS_UNSPECIFIED);
    for (const auto& path : profile.filesystem().protected_paths()) {
      FUZZ_CHECK(!path.empty() && path[0] != '/');
    }
    for (const auto& entry : profile.filesystem().hidden_paths()) {
      auto pattern = brig::fs::ParseHiddenPattern(entry);
      FUZZ_CHECK(pattern.has_value());
      std::vector<std::string_view> own(pattern->parts.begin(), pattern->parts.end());
      bool plain = entry.find_first_of("*?[\\") == std::string::npos;
      FUZZ_CHECK(!plain || pattern->Matches(own, true));
      std::vector<std::string_view> deep;
      for (int i = 0; i < 64; ++i) deep.insert(deep.end(), own.begin(), own.end());
      (void)pattern->Matches(deep, false);
      own.insert(own.begin(), "prefix");
      FUZZ_CHECK(!plain || !pattern->anywhere || pattern->Matches(own, true));
    }
  }
  return 0;
}
