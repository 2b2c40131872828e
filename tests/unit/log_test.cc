// The log's line shapes (runc's text and json), its escaping, the global options that
// set it up, and the files it refuses to write to.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/global.h"
#include "log/log.h"

namespace brig::log {
namespace {

constexpr char kTime[] = "2026-11-25T01:02:03.000000004Z";

TEST(Log, JsonLineHasRuncsKeysInOrder) {
  EXPECT_EQ(FormatLine(Format::kJson, Level::kDebug, "clone: pid 7", kTime),
            "{\"level\":\"debug\",\"msg\":\"clone: pid 7\",\"time\":\"" + std::string(kTime) +
                "\"}\n");
  std::string warn = FormatLine(Format::kJson, Level::kWarn, "x", kTime);
  EXPECT_EQ(warn.rfind("{\"level\":\"warning\",", 0), 0u) << warn;
}

TEST(Log, TextLineIsLogrusShaped) {
  EXPECT_EQ(FormatLine(Format::kText, Level::kError, "say \"no\"", kTime),
            "time=\"" + std::string(kTime) + "\" level=error msg=\"say \\\"no\\\"\"\n");
}

TEST(Log, JsonEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscape("l1\nl2\tx\r"), "l1\\nl2\\tx\\u000d");
  EXPECT_EQ(JsonEscape(std::string("\0\x1b[2J\x7f", 6)), "\\u0000\\u001b[2J\\u007f");
}

TEST(Log, JsonKeepsUtf8AndReplacesWhatIsNot) {
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(JsonEscape("\xff"), "\\ufffd");
  EXPECT_EQ(JsonEscape("\xc3"), "\\ufffd");                  // cut short
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\\ufffd\\ufffd");       // overlong '/'
  EXPECT_EQ(JsonEscape("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // a surrogate
  EXPECT_EQ(JsonEscape("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");  // > U+10FFFF
}

TEST(Log, TimestampIsRfc3339WithNanosecondsInUtc) {
  std::string t = Timestamp(Now());
  ASSERT_EQ(t.size(), 30u) << t;
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t[19], '.');
  EXPECT_EQ(t.back(), 'Z');
}

TEST(Log, LinesAreBuiltInAFixedBufferAndCut) {
  Line l;
  l.Add("pid ");
  l.Add(42);
  l.Add(std::string(" of "));
  l.Add(-1L);
  EXPECT_EQ(l.view(), "pid 42 of -1");
  Line big;
  big.Add(std::string(Line::kMax + 10, 'x'));
  big.Add("more");
  EXPECT_EQ(big.view().size(), Line::kMax);
}

class LogFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brig-log-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    (void)Configure(false, "", Format::kText);
    for (const char* n : {"/log", "/fifo", "/link"}) unlink((dir_ + n).c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(LogFile, AFifoOrASymlinkIsRefused) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  auto fifo = Configure(true, dir_ + "/fifo", Format::kJson);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().Render(), "--log '" + dir_ + "/fifo': not a regular file");
  ASSERT_EQ(symlink("log", (dir_ + "/link").c_str()), 0);
  auto link = Configure(true, dir_ + "/link", Format::kJson);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().Render(), "--log '" + dir_ + "/link': a symlink");
  struct stat st;
  EXPECT_NE(lstat((dir_ + "/log").c_str(), &st), 0) << "nothing made through the link";
  EXPECT_FALSE(Configure(true, "/dev/null", Format::kJson));
}

}  // namespace
}  // namespace brig::log

namespace brig::cli {
namespace {

TEST(GlobalFlags, RuncsSpellingBeforeTheVerb) {
  GlobalFlags g;
  std::vector<std::string> args = {"--debug", "--log", "/tmp/l", "--log-format=json", "run",
                                   "--debug"};
  auto at = ParseGlobalFlags(args, g);
  ASSERT_TRUE(at) << at.error().Render();
  EXPECT_EQ(*at, 4u);
  EXPECT_TRUE(g.debug);
  EXPECT_EQ(g.log_path, "/tmp/l");
  EXPECT_EQ(g.log_format, log::Format::kJson);
  GlobalFlags none;
  EXPECT_EQ(*ParseGlobalFlags({"run", "--", "true"}, none), 0u);
  EXPECT_FALSE(none.debug);
}

TEST(GlobalFlags, BadValuesAreNamed) {
  GlobalFlags g;
  auto fmt = ParseGlobalFlags({"--log-format", "xml", "run"}, g);
  ASSERT_FALSE(fmt);
  EXPECT_EQ(fmt.error().Render(), "--log-format 'xml': not text or json");
  auto missing = ParseGlobalFlags({"--log"}, g);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().Render(), "--log: needs a value");
  EXPECT_FALSE(ParseGlobalFlags({"--debug=yes", "run"}, g));
}

}  // namespace
}  // namespace brig::cli
