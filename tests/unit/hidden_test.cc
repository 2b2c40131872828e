// Hidden path patterns: what each form of entry matches (gitignore's rule for where, a
// glob per component), what is refused; and the workspace walk's hard-link count.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/hidden.h"
#include "testlib/testlib.h"
#include "util/parse.h"

namespace brig::fs {
namespace {

bool Hides(const std::string& entry, const std::string& path, bool is_dir = false) {
  auto p = ParseHiddenPattern(entry);
  EXPECT_TRUE(p) << entry;
  std::vector<std::string_view> parts = util::Split(path, '/');
  return p && p->Matches(parts, is_dir);
}

TEST(HiddenPaths, AnEntryWithoutASlashMatchesAtAnyDepth) {
  EXPECT_TRUE(Hides(".env*", ".env"));
  EXPECT_TRUE(Hides(".env*", ".env.local"));
  EXPECT_TRUE(Hides(".env*", "packages/api/.env"));
  EXPECT_TRUE(Hides(".env*", "packages/api/.env.production"));
  EXPECT_FALSE(Hides(".env*", "packages/api/env"));
  EXPECT_TRUE(Hides("*.pem", "server.pem"));
  EXPECT_TRUE(Hides("*.pem", ".hidden.pem")) << "no FNM_PERIOD: * matches a leading dot";
  EXPECT_TRUE(Hides("*.pem", "deploy/id_rsa.pem"));
  EXPECT_TRUE(Hides("*.key", "a/b/c/d/tls.key"));
  EXPECT_FALSE(Hides("*.key", "a/tls.key/readme")) << "the last component is matched";
  EXPECT_TRUE(Hides(".npmrc", ".npmrc"));
  EXPECT_TRUE(Hides(".npmrc", "packages/a/.npmrc"));
  EXPECT_FALSE(Hides(".npmrc", "packages/a/.npmrc.bak"));
  EXPECT_FALSE(Hides("*.pem", "PEM")) << "case-sensitive";
  EXPECT_FALSE(Hides("*.pem", "x.PEM")) << "case-sensitive";
}

TEST(HiddenPaths, AnEntryWithASlashInsideIsAnchoredAtTheTop) {
  EXPECT_TRUE(Hides("config/*.key", "config/tls.key"));
  EXPECT_FALSE(Hides("config/*.key", "tls.key"));
  EXPECT_FALSE(Hides("config/*.key", "a/config/tls.key"));
  EXPECT_FALSE(Hides("config/*.key", "config/sub/tls.key")) << "* stays in one component";
  EXPECT_TRUE(Hides("c*/*", "certs/x"));
  EXPECT_FALSE(Hides("c*/*", "certs"));
}

TEST(HiddenPaths, ADoubleStarComponentMatchesAnyNumberOfDirectories) {
  EXPECT_TRUE(Hides("**/secrets/*.json", "secrets/a.json"));
  EXPECT_TRUE(Hides("**/secrets/*.json", "x/y/secrets/a.json"));
  EXPECT_FALSE(Hides("**/secrets/*.json", "x/secrets/y/a.json"));
  EXPECT_TRUE(Hides("deploy/**/*.key", "deploy/a.key"));
  EXPECT_TRUE(Hides("deploy/**/*.key", "deploy/x/y/a.key"));
  EXPECT_FALSE(Hides("deploy/**/*.key", "other/deploy/a.key"));
  EXPECT_TRUE(Hides("build/**", "build/out", true));
  EXPECT_TRUE(Hides("build/**", "build/a/b"));
  EXPECT_FALSE(Hides("build/**", "build", true)) << "everything inside, not the directory";
}

TEST(HiddenPaths, ATrailingSlashMeansDirectoriesOnly) {
  EXPECT_TRUE(Hides(".ssh/", ".ssh", true));
  EXPECT_FALSE(Hides(".ssh/", ".ssh", false));
  EXPECT_TRUE(Hides(".ssh/", "home/.ssh", true)) << "no slash but the trailing one: any depth";
  EXPECT_TRUE(Hides(".ssh", ".ssh", false));
  EXPECT_TRUE(Hides("a/b/", "a/b", true));
  EXPECT_FALSE(Hides("a/b/", "a/b", false));
  EXPECT_FALSE(Hides("a/b/", "x/a/b", true)) << "a slash inside anchors it";
}

TEST(HiddenPaths, EntriesThatLeaveOrNameNothingAreRefused) {
  for (const char* bad : {"", "/", "/etc/shadow", "../secrets", "a/../b", "a//b", "./.env",
                          "a/./b", "/.ssh/", "//"}) {
    auto p = ParseHiddenPattern(bad);
    ASSERT_FALSE(p) << bad;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(p.error().Render().rfind("hidden path", 0), 0u) << p.error().Render();
  }
}

// The walk: hidden paths, and the names of files that have a name outside the tree.
class Scan : public ::testing::Test {
 protected:
  void Make(const std::string& rel, const std::string& data = "x") {
    std::string path = ws_.path() + "/" + rel;
    for (size_t i = ws_.path().size() + 1; (i = path.find('/', i)) != std::string::npos; ++i) {
      mkdir(path.substr(0, i).c_str(), 0755);
    }
    ws_.Write(rel, data);
  }
  WorkspaceScan Run(const std::vector<std::string>& entries, bool find_links) {
    std::vector<HiddenPattern> patterns;
    for (const auto& e : entries) patterns.push_back(*ParseHiddenPattern(e));
    int dir = open(ws_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    auto scan = ScanWorkspace(dir, patterns, find_links);
    close(dir);
    EXPECT_TRUE(scan) << scan.error().Render();
    return scan ? *scan : WorkspaceScan();
  }
  testing::ScratchDir ws_, outside_;
};

TEST_F(Scan, HiddenPathsAtAnyDepthAndNothingInsideOne) {
  Make("packages/api/.env");
  Make("packages/api/index.js");
  Make(".ssh/id_rsa.pem");
  Make("certs/ca.pem");
  auto scan = Run({".env*", ".ssh/", "*.pem"}, false);
  std::sort(scan.hidden.begin(), scan.hidden.end());
  EXPECT_EQ(scan.hidden, (std::vector<std::string>{".ssh", "certs/ca.pem", "packages/api/.env"}));
  EXPECT_TRUE(scan.linked_out.empty());
}

TEST_F(Scan, OnlyLinksWithANameOutsideAreFound) {
  Make("a/inside-1");
  Make("b/plain");
  outside_.Write("bashrc", "x");
  ASSERT_EQ(link((ws_.path() + "/a/inside-1").c_str(), (ws_.path() + "/b/inside-2").c_str()), 0);
  ASSERT_EQ(link((outside_.path() + "/bashrc").c_str(), (ws_.path() + "/a/out").c_str()), 0);
  ASSERT_EQ(link((outside_.path() + "/bashrc").c_str(), (ws_.path() + "/b/out-too").c_str()), 0);
  // A name under a hidden path is not counted: the file is held, as if that name were
  // outside.
  Make("c/.env");
  ASSERT_EQ(link((ws_.path() + "/c/.env").c_str(), (ws_.path() + "/c/copy").c_str()), 0);
  auto scan = Run({".env*"}, true);
  std::sort(scan.linked_out.begin(), scan.linked_out.end());
  EXPECT_EQ(scan.linked_out, (std::vector<std::string>{"a/out", "b/out-too", "c/copy"}));
  EXPECT_TRUE(Run({".env*"}, false).linked_out.empty()) << "not looked for unless asked";
}

}  // namespace
}  // namespace brig::fs
