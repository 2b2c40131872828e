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

}  // namespace
}  // namespace brig::util
