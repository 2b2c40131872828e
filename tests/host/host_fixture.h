// Fixture for the host tier: skips without root and namespaces, and fails a test that
// leaves anything behind on the host (mounts, brig-init processes, cgroups, records; only
// what the test itself could have made: see Residue in testlib.h).
#pragma once

#include <gtest/gtest.h>

#include "testlib/testlib.h"

namespace brig::testing {

// The host tests' own profile with a read-write workspace (tests/host/profiles/).
inline std::string RwProfile() {
  return SourceRoot() + "/tests/host/profiles/workspace-rw.textproto";
}

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = NeedUserns(); !why.empty()) GTEST_SKIP() << why;
    before_ = TakeResidue();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_EQ(DiffResidue(before_, TakeResidue()), "") << "the run left residue on the host";
  }

  // Runs the probe inside a sandbox with the probe's directory as the (ro) workspace.
  RunOutput Probe(const std::vector<std::string>& probe_args,
                  std::vector<std::string> brig_args = {}) {
    std::vector<std::string> args = {"run", "--workspace", ProbeDir()};
    args.insert(args.end(), brig_args.begin(), brig_args.end());
    args.push_back("--");
    args.push_back("/workspace/brig-probe");
    args.insert(args.end(), probe_args.begin(), probe_args.end());
    return RunBrig(args);
  }

  RunOutput Sh(const std::string& script, std::vector<std::string> brig_args = {}) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), brig_args.begin(), brig_args.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunBrig(args);
  }

 private:
  Residue before_;
};

}  // namespace brig::testing
