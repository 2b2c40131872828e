// What --export-changes reads of a copy's repository to find its commits (fs/export_git.h):
// the sandbox wrote those files, so only a plain ref under refs/ or an object name passes.
#include <gtest/gtest.h>

#include "fs/export_git.h"

namespace brig::fs {
namespace {

constexpr char kSha1[] = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad";

TEST(GitHead, ARefOrADetachedCommitAndNothingElse) {
  auto ref = ParseHead("ref: refs/heads/agent/work-1\n");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->ref, "refs/heads/agent/work-1");
  EXPECT_EQ(ref->hash, "");
  auto detached = ParseHead(std::string(kSha1) + "\n");
  ASSERT_TRUE(detached);
  EXPECT_EQ(detached->hash, kSha1);
  for (const char* bad : {"ref: refs/../../etc/passwd", "ref: /etc/passwd", "ref: refs/heads/",
                          "ref: refs/heads/a b", "ref: HEAD", "3B18E512DBA79E4C8300DD08AEB37F8E728B8DAD",
                          "3b18e512", ""}) {
    EXPECT_FALSE(ParseHead(bad)) << bad;
  }
}

TEST(GitHead, APackedRefIsFoundByItsWholeName) {
  std::string packed = std::string("# pack-refs with: peeled\n") + kSha1 +
                       " refs/heads/main\n^0000000000000000000000000000000000000000\nxyz "
                       "refs/heads/bad\n";
  EXPECT_EQ(PackedRef(packed, "refs/heads/main"), kSha1);
  EXPECT_FALSE(PackedRef(packed, "refs/heads/mai"));
  EXPECT_FALSE(PackedRef(packed, "refs/heads/bad"));
}

}  // namespace
}  // namespace brig::fs
