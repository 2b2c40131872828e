// libFuzzer target: ParseRunArgs, the `brig run` argv parser. The input is split on '\0'
// into argv strings (as the kernel hands them to main: no string holds a '\0').
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "fuzz_common.h"
#include "util/parse.h"

namespace {

using brig::ErrorKind;

bool SameRequest(const brig::cli::RunRequest& a, const brig::cli::RunRequest& b) {
  return a.help == b.help && a.pass_env == b.pass_env && a.set_env == b.set_env &&
         a.policy_dir == b.policy_dir && a.profile == b.profile && a.argv == b.argv &&
         a.rootfs == b.rootfs && a.workspace == b.workspace &&
         a.workspace_mode == b.workspace_mode && a.tmp_size == b.tmp_size &&
         a.disk_size == b.disk_size &&
         a.timeout == b.timeout && a.grace == b.grace && a.rlimit_nofile == b.rlimit_nofile &&
         a.rlimit_nproc == b.rlimit_nproc && a.rlimit_core == b.rlimit_core &&
         a.result_path == b.result_path && a.name == b.name && a.chdir == b.chdir &&
         a.mounts == b.mounts && a.env_files == b.env_files;
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
  if (req.help) return 0;  // --help stops parsing; there need be no command
  FUZZ_CHECK(!req.argv.empty());
  FUZZ_CHECK(!req.argv[0].empty());
  FUZZ_CHECK(!req.profile.empty());
  // The command is a suffix of the arguments, unchanged.
  FUZZ_CHECK(req.argv.size() <= args.size());
  for (size_t i = 0; i < req.argv.size(); ++i) {
    FUZZ_CHECK(req.argv[i] == args[args.size() - req.argv.size() + i]);
  }
  FUZZ_CHECK(!req.timeout || req.timeout->count() >= 1);
  FUZZ_CHECK(!req.grace || req.grace->count() >= 1);
  FUZZ_CHECK(!req.tmp_size || *req.tmp_size >= 1);
  FUZZ_CHECK(!req.disk_size || *req.disk_size >= brig::util::kMinDiskSize);
  for (const auto& kv : req.set_env) {
    size_t eq = kv.find('=');
    FUZZ_CHECK(eq != std::string::npos && eq > 0);
  }
  for (const auto& k : req.pass_env) FUZZ_CHECK(!k.empty() && k.find('=') == std::string::npos);
  // --name and --mount names are container names; --chdir stays in the workspace.
  FUZZ_CHECK(req.name.empty() || brig::util::IsObjectName(req.name));
  for (const auto& [name, path] : req.mounts) {
    FUZZ_CHECK(brig::util::IsObjectName(name) && !path.empty());
  }
  if (req.chdir && !req.chdir->empty()) {
    for (std::string_view part : brig::util::Split(*req.chdir, '/')) {
      FUZZ_CHECK(!part.empty() && part != "." && part != "..");
    }
  }
  return 0;
}
