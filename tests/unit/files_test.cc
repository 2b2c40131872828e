// util/files: reading a file the user hands brig, and replacing a user's output whole.
#include "util/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib/testlib.h"

namespace brig::util {
namespace {

using brig::testing::ScratchDir;

TEST(ReadUserFile, RefusesWhatIsNotARegularFileWithoutBlocking) {
  ScratchDir dir;
  std::string fifo = dir.path() + "/fifo", link = dir.path() + "/link";
  std::string file = dir.Write("file", "0123456789");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(file.c_str(), link.c_str()), 0);
  EXPECT_EQ(ReadUserFile(fifo).error().Render(), "open '" + fifo + "': not a regular file");
  EXPECT_EQ(ReadUserFile("/dev/zero").error().Render(), "open '/dev/zero': not a regular file");
  EXPECT_EQ(ReadUserFile(link).error().Render(),
            "open '" + link + "': a symlink, which brig does not follow to a file it is handed");
  EXPECT_EQ(*ReadUserFile(link, kMaxUserFile, FinalLink::kFollow), "0123456789");
  EXPECT_EQ(*ReadUserFile(file, 10), "0123456789");
  EXPECT_EQ(ReadUserFile(file, 9).error().Render(), "read '" + file + "': larger than 9 bytes");
}

TEST(WriteUserFileAtomic, NotesItsTempBeforeMakingIt) {
  ScratchDir dir;
  std::string path = dir.path() + "/r.json";
  std::string noted;
  auto note = [&](const std::string& temp) -> Status {
    noted = temp;
    EXPECT_NE(access(temp.c_str(), F_OK), 0) << "made before it was noted";
    return {};
  };
  ASSERT_TRUE(WriteUserFileAtomic(path, "{}\n", note));
  EXPECT_EQ(noted, path + ".tmp" + std::to_string(getpid()));
  EXPECT_EQ(brig::testing::ReadFileOrEmpty(path), "{}\n");
  EXPECT_NE(access(noted.c_str(), F_OK), 0);
  // A temp that cannot be noted is not made.
  auto refuse = [](const std::string&) -> Status { return Fail("note", "", "full"); };
  EXPECT_FALSE(WriteUserFileAtomic(path, "{\"x\":1}\n", refuse));
  EXPECT_EQ(brig::testing::ReadFileOrEmpty(path), "{}\n");
  EXPECT_NE(access(noted.c_str(), F_OK), 0);
}

TEST(WriteUserFileAtomic, NeverReplacesAFifoOrSymlinkNorWritesThroughATemp) {
  ScratchDir dir;
  std::string victim = dir.Write("victim", "precious\n");
  std::string fifo = dir.path() + "/fifo", link = dir.path() + "/link";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  for (const std::string& path : {fifo, link}) {
    auto s = WriteUserFileAtomic(path, "{}\n", nullptr);
    ASSERT_FALSE(s) << path;
    EXPECT_EQ(s.error().Render(), "write '" + path + "': not a regular file, which brig does not "
                                  "replace");
  }
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  // A link planted at the temp's own name is not written through.
  std::string out = dir.path() + "/out.json";
  std::string temp = out + ".tmp" + std::to_string(getpid());
  ASSERT_EQ(symlink(victim.c_str(), temp.c_str()), 0);
  EXPECT_FALSE(WriteUserFileAtomic(out, "{}\n", nullptr));
  EXPECT_EQ(brig::testing::ReadFileOrEmpty(victim), "precious\n");
  EXPECT_NE(access(out.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace brig::util
