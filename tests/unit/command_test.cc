// Command lookup (container/command.h) as execvp(3) would do it from a working directory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "container/command.h"
#include "testlib/testlib.h"

namespace brig::container {
namespace {

class Command : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("run.sh", "#!/bin/sh\n", 0755);
    dir_.Write("plain", "x\n", 0644);
    ASSERT_EQ(mkdir((dir_.path() + "/bin").c_str(), 0755), 0);
    dir_.Write("bin/tool", "#!/bin/sh\n", 0755);
  }
  Result<std::string> Find(const std::string& cmd, const std::string& path = "/usr/bin:/bin") {
    return ResolveCommand(cmd, {"PATH=" + path}, dir_.path());
  }
  testing::ScratchDir dir_;
};

TEST_F(Command, RelativePathsAreFromTheWorkingDirectory) {
  auto r = Find("./run.sh");
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(*r, "./run.sh") << "the path as written, for an execve made from there";
  EXPECT_EQ(*Find("bin/tool"), "bin/tool");
  EXPECT_EQ(*Find("tool", "bin:/usr/bin"), "bin/tool");
  EXPECT_EQ(*Find("run.sh", ":/usr/bin"), "./run.sh");  // an empty entry is the cwd
  EXPECT_EQ(*Find("sh"), "/usr/bin/sh");
}

TEST_F(Command, NotFoundIs127AndNotExecutableIs126AsExecvpGivesThem) {
  EXPECT_EQ(Find("./missing").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(Find("./missing").error().Render(), "command './missing': no such file or directory");
  EXPECT_EQ(Find("plain/x").error().kind, ErrorKind::kNotFound);  // ENOTDIR
  EXPECT_EQ(Find("run.sh").error().kind, ErrorKind::kNotFound);   // cwd not on PATH
  // In runc's words, which engines match to give 127 and 126.
  EXPECT_EQ(Find("run.sh").error().Render(),
            "command 'run.sh': executable file not found in $PATH");
  EXPECT_EQ(Find("./plain").error().Render(), "command './plain': permission denied");
  EXPECT_EQ(Find("./plain").error().kind, ErrorKind::kNotExecutable);
  EXPECT_EQ(Find("./bin").error().kind, ErrorKind::kNotExecutable);
  // A candidate that cannot run is remembered while the search goes on.
  auto later = Find("plain", ".:/nonexistent");
  EXPECT_EQ(later.error().kind, ErrorKind::kNotExecutable);
  EXPECT_EQ(later.error().subject, "plain");
}

TEST(ScriptArgv, RunsTheFileWithShAsExecvpDoes) {
  EXPECT_EQ(ScriptArgv("./s", {"./s", "a", "b"}),
            (std::vector<std::string>{"/bin/sh", "./s", "a", "b"}));
}

}  // namespace
}  // namespace brig::container
