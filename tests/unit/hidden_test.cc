// Hidden path patterns: what each form of entry matches, and what is refused.
#include <gtest/gtest.h>

#include "fs/hidden.h"
#include "util/parse.h"

namespace brig::fs {
namespace {

bool Hides(const std::string& entry, const std::string& path, bool is_dir = false) {
  auto p = ParseHiddenPattern(entry);
  EXPECT_TRUE(p) << entry;
  std::vector<std::string_view> parts = util::Split(path, '/');
  return p && p->Matches(parts, is_dir);
}

TEST(HiddenPaths, AGlobMatchesAtTheTopAndAPlainNameAtAnyDepth) {
  EXPECT_TRUE(Hides(".env*", ".env"));
  EXPECT_TRUE(Hides(".env*", ".env.local"));
  EXPECT_FALSE(Hides(".env*", "app/.env")) << "a glob is for the top only";
  EXPECT_TRUE(Hides("*.pem", "server.pem"));
  EXPECT_TRUE(Hides("*.pem", ".hidden.pem")) << "no FNM_PERIOD: * matches a leading dot";
  EXPECT_FALSE(Hides("*.pem", "certs/server.pem"));
  EXPECT_TRUE(Hides(".npmrc", ".npmrc"));
  EXPECT_TRUE(Hides(".npmrc", "packages/a/.npmrc")) << "a plain name, any depth";
  EXPECT_FALSE(Hides(".npmrc", "packages/a/.npmrc.bak"));
  EXPECT_TRUE(Hides("config/*.key", "config/tls.key"));
  EXPECT_FALSE(Hides("config/*.key", "tls.key"));
  EXPECT_FALSE(Hides("config/*.key", "a/config/tls.key")) << "a path is from the top";
}

TEST(HiddenPaths, ATrailingSlashMeansDirectoriesOnly) {
  EXPECT_TRUE(Hides(".ssh/", ".ssh", true));
  EXPECT_FALSE(Hides(".ssh/", ".ssh", false));
  EXPECT_TRUE(Hides(".ssh/", "home/.ssh", true)) << "a plain name, any depth";
  EXPECT_TRUE(Hides(".ssh", ".ssh", false));
}

TEST(HiddenPaths, EntriesThatLeaveOrNameNothingAreRefused) {
  for (const char* bad : {"", "/", "/etc/shadow", "../secrets", "a/../b", "a//b", "./.env",
                          "a/./b", "/.ssh/"}) {
    auto p = ParseHiddenPattern(bad);
    ASSERT_FALSE(p) << bad;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(p.error().Render().rfind("hidden path", 0), 0u) << p.error().Render();
  }
}

}  // namespace
}  // namespace brig::fs
