// libFuzzer target: ParseRunArgs, the `brig run` argv parser. The input is split on '\0'
// into argv strings (as the kernel hands them to main: no string holds a '\0').
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "fuzz_common.h"

namespace {

using brig::ErrorKind;

bool SameRequest(const brig::cli::RunRequest& a, const brig::cli::RunRequest& b) {
  const auto &x = a.sandbox, &y = b.sandbox;
  return a.help == b.help && a.pass_env == b.pass_env && a.set_env == b.set_env &&
         a.policy_dir == b.policy_dir && x.argv == y.argv && x.rootfs == y.rootfs &&
         x.workspace == y.workspace && x.workspace_mode == y.workspace_mode &&
         x.tmp_size == y.tmp_size && x.timeout == y.timeout && x.grace == y.grace &&
         x.rlimits.nofile == y.rlimits.nofile && x.rlimits.nproc == y.rlimits.nproc &&
         x.rlimits.core == y.rlimits.core && x.result_path == y.result_path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return -1;
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      args.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (size > 0) args.push_back(std::move(cur));

  auto r = brig::cli::ParseRunArgs(args);
  auto again = brig::cli::ParseRunArgs(args);  // pure: the same answer twice
  FUZZ_CHECK(r.has_value() == again.has_value());

  if (!r) {
    const brig::Error& e = r.error();
    FUZZ_CHECK(e.kind == ErrorKind::kBadInput);  // every argv mistake exits 125 as bad input
    FUZZ_CHECK(e.err == 0);                      // pure: no errno can be involved
    FUZZ_CHECK(e.Render() == again.error().Render());
    brig::fuzz::CheckRendersOneLine(e);
    return 0;
  }

  FUZZ_CHECK(SameRequest(*r, *again));
  const auto& req = *r;
  const auto& sb = req.sandbox;
  if (req.help) return 0;  // --help stops parsing; there need be no command
  FUZZ_CHECK(!sb.argv.empty());
  FUZZ_CHECK(!sb.argv[0].empty());
  // The command is a suffix of the arguments, unchanged.
  FUZZ_CHECK(sb.argv.size() <= args.size());
  for (size_t i = 0; i < sb.argv.size(); ++i) {
    FUZZ_CHECK(sb.argv[i] == args[args.size() - sb.argv.size() + i]);
  }
  FUZZ_CHECK(sb.timeout.count() >= 1);
  FUZZ_CHECK(sb.grace.count() >= 1);
  FUZZ_CHECK(sb.tmp_size >= 1);
  for (const auto& kv : req.set_env) {
    size_t eq = kv.find('=');
    FUZZ_CHECK(eq != std::string::npos && eq > 0);
  }
  for (const auto& k : req.pass_env) FUZZ_CHECK(!k.empty() && k.find('=') == std::string::npos);
  return 0;
}
