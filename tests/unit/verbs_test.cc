// The table of verbs main looks a verb up in (cli/verbs.cc): every call of a name reaches
// one row, and `run` and `list` reach the OCI verb's row exactly when runc's command line
// says so.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace brig::cli {
namespace {

bool IsOci(const Verb* verb) { return verb && verb->act; }

TEST(Verbs, EveryNameHasOneRowForTheCallsNoOtherRowChooses) {
  std::map<std::string, int> unchosen;
  for (const Verb& verb : Verbs()) {
    unchosen[verb.name] += verb.chosen ? 0 : 1;
    EXPECT_NE(!verb.main, !verb.act) << verb.name << ": brig's own verb or an OCI verb";
  }
  for (const auto& [name, rows] : unchosen) EXPECT_EQ(rows, 1) << name;
}

// A row without a reason to need root runs for anyone: only these, which read files, write
// a document, are brig's own run, check (which says what a user can have) and list (the
// caller's own sandboxes), or are the
// OCI verbs (a rootless container, as runc's: brig-oci(1) WITHOUT ROOT), may be such rows.
// Those that keep state choose the user's directories (util::ChooseDirs) first.
TEST(Verbs, OnlyPolicyCheckListBrigsOwnRunAndTheOciVerbsRunWithoutRoot) {
  std::set<std::string> without_root, rootless, oci_keeping_state;
  for (const Verb& verb : Verbs()) {
    if (!verb.why_root) without_root.insert(verb.name);
    if (verb.rootless) rootless.insert(verb.name);
    EXPECT_FALSE(verb.rootless && verb.why_root) << verb.name;
    std::string_view name = verb.name;
    if (IsOci(&verb) && name != "spec" && name != "features") {
      oci_keeping_state.insert(verb.name);
      EXPECT_TRUE(verb.rootless) << verb.name;
    }
  }
  std::set<std::string> expected = {"check", "features", "list", "policy", "run", "spec"};
  expected.insert(oci_keeping_state.begin(), oci_keeping_state.end());
  EXPECT_EQ(without_root, expected);
  expected = {"check", "list", "run"};
  expected.insert(oci_keeping_state.begin(), oci_keeping_state.end());
  EXPECT_EQ(rootless, expected);
  GlobalFlags global;
  const Verb* run = FindVerb("run", global, {"--", "true"});
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->rootless);
}

TEST(Verbs, RunIsTheOciVerbWhenItNamesABundleBeforeDashDash) {
  GlobalFlags global;
  for (std::vector<std::string> args : {std::vector<std::string>{"--bundle", "b", "id"},
                                        {"-b", "b", "id"},
                                        {"-bundle", "b", "id"},
                                        {"--bundle=b", "id"},
                                        {"--detach", "--bundle", "b", "id"}}) {
    const Verb* verb = FindVerb("run", global, args);
    ASSERT_TRUE(IsOci(verb)) << args[0];
    EXPECT_FALSE(verb->holds_signals) << "only brig's own run reads signals from a signalfd";
  }
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--", "--bundle", "b"}, {"true"}, {"--bundles", "b"}, {}}) {
    const Verb* verb = FindVerb("run", global, args);
    ASSERT_NE(verb, nullptr);
    EXPECT_FALSE(IsOci(verb));
    EXPECT_TRUE(verb->holds_signals);
  }
}

TEST(Verbs, ListIsTheOciVerbUnderRoot) {
  GlobalFlags global;
  const Verb* own = FindVerb("list", global, {});
  ASSERT_NE(own, nullptr);
  EXPECT_FALSE(IsOci(own));
  global.root = "/run/containerd/runc/k8s.io";
  EXPECT_TRUE(IsOci(FindVerb("list", global, {})));
}

// `brig exec` is brig's own when it asks for --help without an id, or names something no
// OCI container under the default root is (brig's own then refuses it, with its own words
// and 125), and never under the global --root; the OCI verb's flags are skipped with their
// values, not taken for the id. Without an id at all, it is the OCI verb's to refuse.
TEST(Verbs, ExecIsBrigsOwnUnlessItNamesAnOciContainerOrRunsUnderRoot) {
  GlobalFlags global;
  const Verb* help = FindVerb("exec", global, {"--help"});
  ASSERT_NE(help, nullptr);
  EXPECT_FALSE(IsOci(help));
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--process", "brig-no-such-sandbox-0", "id"},
        {"-e", "A=1", "--cwd=/x", "brig-no-such-sandbox-0", "true"},
        {"brig-no-such-sandbox-0", "--", "true"}}) {
    EXPECT_FALSE(IsOci(FindVerb("exec", global, args))) << args[0];
  }
  EXPECT_TRUE(IsOci(FindVerb("exec", global, {})));
  global.root = "/run/containerd/runc/k8s.io";
  EXPECT_TRUE(IsOci(FindVerb("exec", global, {"--help"})));
  EXPECT_TRUE(IsOci(FindVerb("exec", global, {"brig-no-such-sandbox-0", "true"})));
}

TEST(Verbs, AnUnknownNameHasNoRow) {
  EXPECT_EQ(FindVerb("nosuch", GlobalFlags{}, {}), nullptr);
  EXPECT_EQ(FindVerb("", GlobalFlags{}, {}), nullptr);
}

}  // namespace
}  // namespace brig::cli
