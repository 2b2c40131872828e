// tools/test-summary, the closing line of tools/test, run on reports made here: a tier that
// did not run (no report, a report that does not parse, a log with no test) is a failure
// that names the tier, never a tier left out of the count (issue 27, item 8).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "testlib/testlib.h"

namespace brig::testing {
namespace {

// A gtest report of `passed` passing and `failed` failing cases.
std::string Report(int passed, int failed = 0) {
  std::string xml = "<?xml version=\"1.0\"?>\n<testsuites><testsuite name=\"S\">";
  for (int i = 0; i < passed; ++i) {
    xml += "<testcase name=\"p" + std::to_string(i) + "\" status=\"run\" result=\"completed\"/>";
  }
  for (int i = 0; i < failed; ++i) {
    xml += "<testcase name=\"f" + std::to_string(i) +
           "\" status=\"run\" result=\"completed\"><failure message=\"x\"/></testcase>";
  }
  return xml + "</testsuite></testsuites>\n";
}

constexpr char kFuzzLog[] = "{\"name\": \"fuzz_dns\", \"result\": \"OK\"}\n";
// The tiers with a report of their own in the build directory.
constexpr const char* kTiers[] = {"unit",   "host", "vm",      "vm-systemd", "vm-systemd-engine",
                                  "engine", "k8s",  "k8s-pods"};

class TestSummary : public ::testing::Test {
 protected:
  // Every tier tools/test runs, each with a passing report.
  void SetUp() override {
    for (const char* tier : kTiers) dir_.Write(std::string(tier) + ".xml", Report(2));
    log_ = dir_.Write("testlog.json", kFuzzLog);
  }
  RunOutput Summary() {
    return RunCommand({"python3", SourceRoot() + "/tools/test-summary", dir_.path(), log_});
  }
  // The summary's last line.
  static std::string Total(const RunOutput& r) {
    std::string out = r.out;
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out.substr(out.rfind('\n') + 1);
  }

  ScratchDir dir_;
  std::string log_;
};

TEST_F(TestSummary, EveryTierRanAndPassed) {
  auto r = Summary();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Total(r), "17 passed, 0 failed, 0 skipped") << r.out;
}

TEST_F(TestSummary, ATierWithNoReportIsAFailureNamingIt) {
  for (const char* tier : kTiers) {
    SCOPED_TRACE(tier);
    std::string report = dir_.path() + "/" + tier + ".xml";
    ASSERT_EQ(unlink(report.c_str()), 0);
    auto r = Summary();
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(std::string("  ") + tier + ": did not run (no " + report + ")"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(Total(r), "15 passed, 1 failed, 0 skipped") << r.out;
    dir_.Write(std::string(tier) + ".xml", Report(2));
  }
}

TEST_F(TestSummary, AReportThatDoesNotParseOrHoldsNoTestIsATierThatDidNotRun) {
  dir_.Write("vm.xml", "<testsuites><testsuite name=\"S\"><testcase");  // a VM killed mid-write
  dir_.Write("engine.xml", "<testsuites/>");
  auto r = Summary();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  vm: did not run (" + dir_.path() + "/vm.xml does not parse"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  engine: did not run (no test in " + dir_.path() + "/engine.xml)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Total(r), "13 passed, 2 failed, 0 skipped") << r.out;
}

TEST_F(TestSummary, AFuzzTierWithNoLogOrAnEmptyOneDidNotRun) {
  std::string log = log_;
  log_ = dir_.path() + "/no-such-testlog.json";
  auto r = Summary();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  fuzz: did not run ("), std::string::npos) << r.out;
  EXPECT_EQ(Total(r), "16 passed, 1 failed, 0 skipped") << r.out;

  log_ = dir_.Write("testlog.json", "");
  r = Summary();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  fuzz: did not run (no test in its log)"), std::string::npos) << r.out;
}

TEST_F(TestSummary, AFailedTestFailsTheSummary) {
  dir_.Write("host.xml", Report(1, 1));
  auto r = Summary();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  host: 1 passed, 1 failed, 0 skipped"), std::string::npos) << r.out;
  EXPECT_EQ(Total(r), "16 passed, 1 failed, 0 skipped") << r.out;
}

// The k8s tier needs the k8s-kit, which is not part of brig: where it is absent, its report
// says the tier was skipped and why, which is named and not a failure; no other tier may
// say so.
TEST_F(TestSummary, OnlyTheK8sTierMaySayItWasSkipped) {
  const std::string skipped = "<testsuites name=\"k8s\" skipped=\"no k8s-kit at /x\"/>";
  dir_.Write("k8s.xml", skipped);
  auto r = Summary();
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  k8s: skipped: no k8s-kit at /x"), std::string::npos) << r.out;
  EXPECT_EQ(Total(r), "15 passed, 0 failed, 0 skipped") << r.out;
  dir_.Write("engine.xml", skipped);
  r = Summary();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  engine: did not run (no test in "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace brig::testing
