// gtest main for brig's suites: a suite in which every test that ran was skipped fails,
// so a host without root or namespaces cannot pass the host tier by skipping it.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
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
