// Value parsers and error rendering.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "brig/result.h"
#include "util/parse.h"

namespace brig::util {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsUnitsAndSequences) {
  EXPECT_EQ(*ParseDuration("30m"), milliseconds(30 * 60 * 1000));
  EXPECT_EQ(*ParseDuration("2s"), milliseconds(2000));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("1h30m"), milliseconds(90 * 60 * 1000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("45"), milliseconds(45000));
}

TEST(ParseDuration, RejectsGarbage) {
  for (const char* bad : {"", "0", "0s", "5x", "s", "-1s", "1h30", "1.s", "abc", "10 s"}) {
    auto r = ParseDuration(bad);
    EXPECT_FALSE(r) << "accepted '" << bad << "'";
    if (!r) {
      EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    }
  }
  EXPECT_NE(ParseDuration("5x").error().detail.find("unknown unit 'x'"), std::string::npos);
}

TEST(UnescapeMountinfo, UndoesOctalEscapesOnly) {
  EXPECT_EQ(util::UnescapeMountinfo("/a\\040b\\011c\\012d\\134e"), "/a b\tc\nd\\e");
  EXPECT_EQ(util::UnescapeMountinfo("/plain"), "/plain");
  EXPECT_EQ(util::UnescapeMountinfo("/cut\\04"), "/cut\\04");
}

TEST(ParseSize, AcceptsBinaryUnits) {
  EXPECT_EQ(*ParseSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseSize("512K"), 512u * 1024);
  EXPECT_EQ(*ParseSize("256M"), 256u << 20);
  EXPECT_EQ(*ParseSize("1G"), 1ull << 30);
  EXPECT_EQ(*ParseSize("2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseSize("64mb"), 64u << 20);
  EXPECT_EQ(*ParseSize("1.5G"), 3ull << 29);
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* bad : {"", "0", "G", "12Q", "-5M", "1e9", "99999999999T"}) {
    EXPECT_FALSE(ParseSize(bad)) << "accepted '" << bad << "'";
  }
}

TEST(ParseLimit, NumbersAndUnlimited) {
  EXPECT_EQ(*ParseLimit("1024"), 1024u);
  EXPECT_EQ(*ParseLimit("unlimited"), uint64_t{RLIM_INFINITY});
  EXPECT_FALSE(ParseLimit("-1"));
  EXPECT_FALSE(ParseLimit("12k"));
  EXPECT_FALSE(ParseLimit("99999999999999999999"));
}

TEST(IsEnvName, ValidatesNames) {
  EXPECT_TRUE(IsEnvName("PATH"));
  EXPECT_TRUE(IsEnvName("_x1"));
  EXPECT_FALSE(IsEnvName(""));
  EXPECT_FALSE(IsEnvName("1A"));
  EXPECT_FALSE(IsEnvName("A-B"));
  EXPECT_FALSE(IsEnvName("A=B"));
}

TEST(OneLine, BlanksControlsAndReplacesWhatIsNotUtf8) {
  EXPECT_EQ(OneLine("  a\tb\r\n\x1b[2Kc  "), "a b [2Kc");
  EXPECT_EQ(OneLine("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(OneLine("\xc0\xaf\xff"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(OneLine("\x7f"), "");
}

TEST(Error, RendersOneLine) {
  errno = EPERM;
  Error e = SysError("mount", "/proc");
  EXPECT_EQ(e.Render(), "mount '/proc': Operation not permitted");
  Error w = std::move(e).Wrap("filesystem").Wrap("container init");
  EXPECT_EQ(w.Render(), "container init: filesystem: mount '/proc': Operation not permitted");
  EXPECT_EQ(BadInput("--timeout", "5x", "unknown unit 'x'").Render(),
            "--timeout '5x': unknown unit 'x'");
}

TEST(EnvFile, ReadsLinesAsDockerDoes) {
  auto e = ParseEnvFile("# a comment\n\nA=1\n  B=two words = x\r\nC\nD=\n\t# indented comment\n");
  ASSERT_TRUE(e) << e.error().Render();
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[0].key, "A");
  EXPECT_EQ((*e)[0].value, "1");
  EXPECT_EQ((*e)[1].key, "B");
  EXPECT_EQ((*e)[1].value, "two words = x");
  EXPECT_EQ((*e)[2].key, "C");
  EXPECT_FALSE((*e)[2].value);  // passes the caller's value
  EXPECT_EQ((*e)[3].value, "");
}

TEST(EnvFile, RefusesAnInvalidNameWithItsLine) {
  auto e = ParseEnvFile("A=1\n\nA-B=2\n");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().Render(), "line 3: 'A-B' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(e.error().kind, ErrorKind::kBadInput);
  EXPECT_FALSE(ParseEnvFile("=x\n"));
  EXPECT_FALSE(ParseEnvFile("1A=x\n"));
  EXPECT_FALSE(ParseEnvFile(std::string("A\0B=1\n", 6)));
}

TEST(ObjectName, IsAContainerName) {
  EXPECT_TRUE(IsObjectName("task-7"));
  EXPECT_TRUE(IsObjectName("A.b_c-1"));
  EXPECT_TRUE(IsObjectName(std::string(64, 'a')));
  EXPECT_FALSE(IsObjectName(std::string(65, 'a')));
  EXPECT_FALSE(IsObjectName(""));
  EXPECT_FALSE(IsObjectName("-x"));
  EXPECT_FALSE(IsObjectName(".x"));
  EXPECT_FALSE(IsObjectName("a/b"));
  EXPECT_FALSE(IsObjectName("a b"));
}

}  // namespace
}  // namespace brig::util
