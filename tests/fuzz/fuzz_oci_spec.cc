// libFuzzer target: an OCI bundle's config.json and an exec's process.json (oci/spec.h),
// bytes from whoever wrote the bundle. Besides "no crash, no UB": an error renders as one
// line; a config that is accepted holds what the launcher relies on (a 1.x version, a root,
// args, an absolute cwd, known namespaces each once, absolute mount destinations, known
// capabilities and a seccomp action brig can apply); and stored in protobuf's binary
// encoding, as brig's container record (state.pb) holds it, it reads back the same.
#include <google/protobuf/util/message_differencer.h>
#include <linux/mount.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "oci/spec.h"

namespace {

void CheckSpec(const brig::oci::Spec& spec) {
  FUZZ_CHECK(spec.oci_version().rfind("1.", 0) == 0);
  FUZZ_CHECK(!spec.root().path().empty());
  FUZZ_CHECK(spec.has_process() && !spec.process().args().empty());
  FUZZ_CHECK(spec.process().cwd()[0] == '/');
  FUZZ_CHECK(brig::oci::CapabilitySets(spec.process()).has_value());
  int seen = 0;
  for (const auto& ns : spec.linux().namespaces()) {
    auto flag = brig::oci::NamespaceFlag(ns.type());
    FUZZ_CHECK(flag && !(seen & *flag) && !brig::oci::NamespaceProcName(*flag).empty());
    seen |= *flag;
  }
  for (const auto& m : spec.mounts()) {
    FUZZ_CHECK(!m.destination().empty() && m.destination()[0] == '/');
    auto o = brig::oci::ParseMountOptions({m.options().begin(), m.options().end()});
    FUZZ_CHECK((o.flags & o.clear) == 0);
    FUZZ_CHECK((o.attr_set & o.attr_clr & ~uint64_t{MOUNT_ATTR__ATIME}) == 0);
    FUZZ_CHECK(!o.recursive || o.bind);
    (void)brig::oci::IsBind(m);
  }
  FUZZ_CHECK(brig::oci::RootfsPropagation(spec.linux().rootfs_propagation()).has_value());
  if (spec.linux().has_personality()) {
    FUZZ_CHECK(brig::oci::PersonalityValue(spec.linux().personality()).has_value());
  }
  if (spec.linux().has_seccomp()) {
    auto a = spec.linux().seccomp().default_action();
    FUZZ_CHECK(a != brig::v1::SECCOMP_ACTION_UNSPECIFIED && a != brig::v1::SCMP_ACT_NOTIFY &&
               brig::v1::SeccompAction_IsValid(a));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto sig = brig::oci::ParseSignal(text)) {
    FUZZ_CHECK(*sig >= 1 && *sig <= 64);
  } else {
    brig::fuzz::CheckRendersOneLine(sig.error());
  }
  auto process = brig::oci::ParseProcess(text, "process.json");
  if (!process) {
    brig::fuzz::CheckRendersOneLine(process.error());
  } else {
    FUZZ_CHECK(!process->args().empty() && process->cwd()[0] == '/');
  }
  auto spec = brig::oci::ParseSpec(text);
  if (!spec) {
    brig::fuzz::CheckRendersOneLine(spec.error());
    return 0;
  }
  CheckSpec(*spec);
  std::string stored;
  FUZZ_CHECK(spec->SerializeToString(&stored));
  brig::oci::Spec back;
  FUZZ_CHECK(back.ParseFromString(stored));
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(*spec, back));
  return 0;
}
