// libFuzzer target: seccomp policies. ParseSeccompPolicy reads protobuf text format; a
// policy that parses is compiled with CompileSeccomp (libseccomp, export to BPF; nothing is
// loaded). Neither may crash, and a compiled program must be a well-formed BPF program.
#include <linux/filter.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "security/seccomp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // policies are small; big ones only cost time
  std::string text(reinterpret_cast<const char*>(data), size);
  auto policy = brig::security::ParseSeccompPolicy(text, "fuzz.textproto");
  if (!policy) {
    const brig::Error& e = policy.error();
    FUZZ_CHECK(e.kind == brig::ErrorKind::kBadInput);
    FUZZ_CHECK(e.op.rfind("fuzz.textproto", 0) == 0);  // errors name the file
    return 0;
  }
  auto prog = brig::security::CompileSeccomp(*policy);
  if (!prog) {
    (void)prog.error().Render();
    return 0;
  }
  // What LoadSeccomp hands the kernel: 1..BPF_MAXINSNS instructions (its length is
  // stored in an unsigned short), the last one a return.
  FUZZ_CHECK(!prog->insns.empty());
  FUZZ_CHECK(prog->insns.size() <= BPF_MAXINSNS);
  FUZZ_CHECK(BPF_CLASS(prog->insns.back().code) == BPF_RET);
  for (const sock_filter& f : prog->insns) {
    // Jumps stay inside the program.
    size_t at = static_cast<size_t>(&f - prog->insns.data());
    if (BPF_CLASS(f.code) == BPF_JMP && BPF_OP(f.code) == BPF_JA) {
      FUZZ_CHECK(at + 1 + f.k < prog->insns.size());
    } else if (BPF_CLASS(f.code) == BPF_JMP) {
      FUZZ_CHECK(at + 1 + f.jt < prog->insns.size());
      FUZZ_CHECK(at + 1 + f.jf < prog->insns.size());
    }
  }
  return 0;
}
