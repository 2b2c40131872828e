// sys/library: a shared library opened at its first use (libnftables, libssl).
#include "sys/library.h"

#include <gtest/gtest.h>

#include <cstring>

namespace brig::sys {
namespace {

TEST(Library, FindsEachFunctionByNameWithItsOwnType) {
  Library libc("libc.so.6");
  decltype(&::strlen) len = nullptr;
  libc.Find(len, "strlen");
  ASSERT_EQ(libc.error(), "");
  ASSERT_NE(len, nullptr);
  EXPECT_EQ(len("brig"), 4u);
}

TEST(Library, TheFirstMissingNameIsTheErrorAndNothingIsLookedUpAfterIt) {
  Library libc("libc.so.6");
  decltype(&::strlen) missing = &::strlen, after = &::strlen;
  libc.Find(missing, "brig_no_such_function");
  libc.Find(after, "strlen");
  EXPECT_EQ(libc.error(), "has no brig_no_such_function");
  EXPECT_EQ(missing, nullptr);
  EXPECT_EQ(after, nullptr) << "a lookup after a failure must not succeed";
}

TEST(Library, ALibraryThatCannotBeOpenedSaysWhyAndFindsNothing) {
  Library none("libbrig-no-such-library.so.0");
  decltype(&::strlen) len = &::strlen;
  none.Find(len, "strlen");
  EXPECT_NE(none.error().find("libbrig-no-such-library.so.0"), std::string::npos) << none.error();
  EXPECT_EQ(len, nullptr);
}

}  // namespace
}  // namespace brig::sys
