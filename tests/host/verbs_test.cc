// Every row of cli's table of verbs as a caller who is not root meets it: the one line of
// a verb that acts as root, before anything is created, and none for one that does not.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/global.h"
#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Verbs : public HostTest {};

// The first of brig's calls `brig NAME`, `brig NAME --bundle DIR ID`, `brig --root DIR
// NAME` and `brig NAME --help` that reaches `verb`'s row, or none.
std::vector<std::string> CallOf(const cli::Verb& verb, const std::string& dir) {
  for (std::vector<std::string> call : {std::vector<std::string>{verb.name},
                                        {verb.name, "--bundle", dir, "id"},
                                        {"--root", dir, verb.name},
                                        {verb.name, "--help"}}) {
    cli::GlobalFlags global;
    auto at = cli::ParseGlobalFlags(call, global);
    if (!at) continue;
    std::vector<std::string> args(call.begin() + static_cast<long>(*at) + 1, call.end());
    if (cli::FindVerb(call[*at], global, args) == &verb) return call;
  }
  return {};
}

// Each verb that acts as root, an OCI verb too (`run --bundle` and `list --root`
// included), gives its own reason in one line, exit 125 (an OCI verb: runc's 1, exec's
// 255); policy, spec and features get
// past that check, and a verb reached only by its --help prints it.
TEST_F(Verbs, WithoutRootEachVerbThatActsAsRootSaysItsOwnWhy) {
  ScratchDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  for (const cli::Verb& verb : cli::Verbs()) {
    std::vector<std::string> call = CallOf(verb, dir.path());
    ASSERT_FALSE(call.empty()) << verb.name << ": no call reaches its row";
    std::vector<std::string> cmd = {"setpriv",  "--reuid",        "65534", "--regid",
                                    "65534",    "--clear-groups", "env",   "--chdir",
                                    dir.path(), BrigBinary()};
    cmd.insert(cmd.end(), call.begin(), call.end());
    auto r = RunCommand(cmd);
    // brig's own exec is reached without root by its --help alone (a caller who is not
    // root cannot read the records that would choose it), which is printed to anyone.
    if (call.back() == "--help") {
      EXPECT_EQ(r.exit_code, 0) << verb.name << ": " << r.err;
      EXPECT_EQ(r.err, "") << verb.name;
      continue;
    }
    if (!verb.why_root) {
      EXPECT_EQ(r.err.find("needs root"), std::string::npos) << verb.name << ": " << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, verb.RefusedStatus()) << verb.name << ": " << r.err;
    EXPECT_EQ(r.out, "") << verb.name;
    EXPECT_EQ(r.err, "brig " + std::string(verb.name) + ": brig needs root (" + verb.why_root +
                         "; run it with sudo)\n");
  }
}

}  // namespace
}  // namespace brig::testing
