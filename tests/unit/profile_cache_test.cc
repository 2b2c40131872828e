// brig run's profile cache (config/profile.h, util/trusted_cache.h): a profile's parse is
// reused only for the exact text it came from, only from an entry only root could have
// written, and what it yields is validated as a fresh parse is.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "config/profile.h"
#include "testlib/testlib.h"
#include "util/files.h"
#include "util/trusted_cache.h"

namespace brig::config {
namespace {

using brig::testing::PathsIn;
using brig::testing::ScratchDir;

const std::string kPolicyDir = BRIG_SOURCE_POLICY_DIR;

// A valid sandbox profile described as `description`.
std::string Text(const std::string& description) {
  return "description: \"" + description +
         "\"\nisolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RO }\n"
         "network { posture: POSTURE_NONE }\n"
         "security { seccomp_policy: \"default\" }\n";
}

class ProfileCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "cache entries are trusted only when owned by root";
  }
  void WriteProfile(const std::string& text) {
    ASSERT_TRUE(util::WriteFileAtomic(profile_, text));
  }
  std::vector<std::string> Entries() { return PathsIn(cache_); }
  Result<LoadedProfile> Load() { return LoadProfileFile(kPolicyDir, profile_, cache_); }
  ScratchDir dir_;
  std::string cache_ = dir_.path() + "/cache", profile_ = dir_.path() + "/p.textproto";
};

bool Same(const v1::Profile& a, const v1::Profile& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST_F(ProfileCache, TheSecondLoadComesFromTheCacheAndMatchesAFreshParse) {
  std::string text = util::ReadFile(kPolicyDir + "/profiles/untrusted-code-read.textproto").value();
  WriteProfile(text);
  auto first = Load();
  ASSERT_TRUE(first) << first.error().Render();
  ASSERT_EQ(Entries().size(), 1u);
  struct stat st;
  ASSERT_EQ(stat(Entries().at(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The entry is what the second load uses: change its message (same text) and see it.
  util::TrustedCache cache(cache_, "profile");
  v1::Profile marked = first->profile;
  marked.set_description("from the cache");
  cache.Put(text, marked.SerializeAsString());
  auto second = Load();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->profile.description(), "from the cache");
  auto fresh = LoadProfileFile(kPolicyDir, profile_);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(Same(first->profile, fresh->profile));
}

TEST_F(ProfileCache, AnEntryIsUsedOnlyForTheExactText) {
  WriteProfile(Text("one"));
  auto one = Load();
  ASSERT_TRUE(one) << one.error().Render();
  std::string entry = Entries().at(0);
  // The other text's entry name, holding the first text's entry: refused on its text.
  WriteProfile(Text("two"));
  ASSERT_TRUE(Load());
  for (const auto& e : Entries()) {
    if (e != entry) {
      ASSERT_EQ(rename(entry.c_str(), e.c_str()), 0);
    }
  }
  auto two = Load();
  ASSERT_TRUE(two);
  EXPECT_EQ(two->profile.description(), "two");
}

TEST_F(ProfileCache, EntriesOthersCouldWriteAreIgnored) {
  std::string text = Text("real");
  WriteProfile(text);
  ASSERT_TRUE(Load());
  util::TrustedCache cache(cache_, "profile");
  v1::Profile forged;
  forged.set_description("forged");
  forged.set_isolation(v1::ISOLATION_SANDBOX);
  forged.mutable_filesystem()->set_workspace(v1::WORKSPACE_RO);
  forged.mutable_network()->set_posture(v1::POSTURE_NONE);
  forged.mutable_security()->set_seccomp_policy("default");
  cache.Put(text, forged.SerializeAsString());
  ASSERT_EQ(chmod(Entries().at(0).c_str(), 0666), 0);
  auto got = Load();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->profile.description(), "real");
  // A cache directory others can write is not used at all.
  ASSERT_EQ(chmod(Entries().at(0).c_str(), 0600), 0);
  ASSERT_EQ(chmod(cache_.c_str(), 0777), 0);
  got = Load();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->profile.description(), "real");
}

TEST_F(ProfileCache, AnEntryThatDoesNotValidateIsParsedAgain) {
  std::string text = Text("real");
  WriteProfile(text);
  ASSERT_TRUE(Load());
  // An entry (root's, for this text) whose profile Validate refuses, a sandbox without a
  // seccomp policy, is never taken from it.
  v1::Profile bad;
  bad.set_isolation(v1::ISOLATION_SANDBOX);
  bad.set_description("no seccomp policy");
  util::TrustedCache(cache_, "profile").Put(text, bad.SerializeAsString());
  auto got = Load();
  ASSERT_TRUE(got) << got.error().Render();
  EXPECT_EQ(got->profile.description(), "real");
}

TEST_F(ProfileCache, ABadProfileIsNotCachedAndKeepsItsErrorPosition) {
  WriteProfile("isolation: ISOLATION_SANDBOX\nno_such_field: 1\n");
  auto got = Load();
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().Render().find(":2:"), std::string::npos) << got.error().Render();
  EXPECT_TRUE(Entries().empty());
}

// The cache under both: an entry holds what it was keyed by besides the text (its kind,
// brig's build), so one kind's entry put under another kind's name for the same text is
// refused, not taken on the name alone.
TEST_F(ProfileCache, AnotherKindsEntryIsNeverUsed) {
  util::TrustedCache a(cache_, "a"), b(cache_, "b");
  a.Put("same text", "a's value");
  std::string a_entry = Entries().at(0);
  b.Put("same text", "b's value");
  ASSERT_EQ(Entries().size(), 2u);
  for (const auto& e : Entries()) {
    if (e != a_entry) {
      ASSERT_EQ(rename(a_entry.c_str(), e.c_str()), 0);
    }
  }
  EXPECT_EQ(b.Get("same text"), std::nullopt);
  EXPECT_EQ(a.Get("same text"), std::nullopt) << "a's entry is no longer at a's name";
}

}  // namespace
}  // namespace brig::config
