// gtest main for brig's suites: a suite in which every test that ran was skipped fails,
// so a host without root or namespaces cannot pass the host tier by skipping it.
// The process is a child subreaper: a sandbox whose brig was killed is adopted here rather
// than by the host's init, so the residue check can tell it is this test's (testlib.h).
#include <gtest/gtest.h>
#include <sys/prctl.h>

int main(int argc, char** argv) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    perror("prctl(PR_SET_CHILD_SUBREAPER)");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->test_to_run_count() > 0 &&
      unit->skipped_test_count() == unit->test_to_run_count()) {
    fprintf(stderr, "FAILED: every test in this suite was skipped\n");
    return 1;
  }
  return rc;
}
