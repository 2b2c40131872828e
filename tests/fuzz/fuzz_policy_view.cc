// libFuzzer target: the parsers behind `brig policy` that read user-supplied files. The
// input is tried as OCI/Docker seccomp JSON and as a text-format policy with rationales;
// whatever parses is explained and exported, and an exported policy must parse back as
// OCI JSON. Errors name the file in one line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "security/policy_view.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = brig::security::ParseOciSeccompJson(text, "fuzz.json");
  auto proto = brig::security::ParsePolicyWithRationale(text, "fuzz.textproto");
  for (auto* r : {&json, &proto}) {
    if (!*r) {
      brig::fuzz::CheckRendersOneLine(r->error());
      continue;
    }
    (void)brig::security::FormatExplain(r->value());
    auto exported = brig::security::ExportOciJson(r->value());
    if (!exported) continue;
    auto back = brig::security::ParseOciSeccompJson(*exported, "exported.json");
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(back->syscalls_size() <= r->value().syscalls_size());
  }
  return 0;
}
