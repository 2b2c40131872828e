// Hostile workspace content (issue 7, "Hostile content is neutralised"): what a workspace
// may hold to reach past the sandbox, tried from inside in every workspace mode. Symlinks
// and planted links at protected or hidden paths, device nodes and set-id programs have
// their own tests (workspace_test.cc, hidden_test.cc); these are hard links to host
// files and FIFOs.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Hostile : public HostTest {
 protected:
  std::vector<std::string> Mode(const std::string& mode, const std::string& ws) {
    if (mode == "ro") return {"--workspace", ws};
    if (mode == "rw") return {"--profile", RwProfile(), "--workspace", ws};
    return {"--profile", RwProfile(), "--workspace", ws, "--workspace-mode", "copy"};
  }
};

// A hard link in the workspace to a file of the host's that only root may read: the link
// is that file, with its owner and mode, and the sandbox's user is never root on the host.
TEST_F(Hostile, AHardLinkToAHostSecretStaysUnreadableAndUnchanged) {
  ScratchDir secret_dir, ws;
  std::string secret = secret_dir.Write("secret", "host-only-secret\n", 0600);
  std::string hard = ws.path() + "/secret-link";
  if (link(secret.c_str(), hard.c_str()) != 0) {
    GTEST_SKIP() << "cannot hard-link across these directories: " << strerror(errno);
  }
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  for (const std::string mode : {"ro", "rw", "copy"}) {
    auto r = Sh("cd /workspace; cat secret-link; echo overwritten > secret-link; "
                "chmod 666 secret-link; cat secret-link; true",
                Mode(mode, ws.path()));
    EXPECT_EQ(r.exit_code, 0) << mode << r.err;
    EXPECT_EQ(r.out.find("host-only-secret"), std::string::npos) << mode << ": " << r.out;
    EXPECT_EQ(ReadFileOrEmpty(secret), "host-only-secret\n") << mode;
    struct stat st;
    ASSERT_EQ(stat(secret.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << mode;
  }
}

// FIFOs in the workspace, at a hidden path and elsewhere: brig never opens them on the host
// (finding hidden paths, exporting), so a FIFO with no writer cannot stall it, and the
// sandbox reads a hidden one as nothing.
TEST_F(Hostile, FifosNeitherStallBrigNorLeak) {
  ScratchDir ws, out;
  ASSERT_EQ(mkfifo((ws.path() + "/.env").c_str(), 0666), 0);
  ASSERT_EQ(mkfifo((ws.path() + "/pipe").c_str(), 0666), 0);
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  auto ro = Sh("cd /workspace; timeout 5 cat .env; echo read:$?; ls -A",
               {"--workspace", ws.path(), "--timeout", "20s"});
  EXPECT_EQ(ro.exit_code, 0) << ro.err;
  EXPECT_EQ(ro.out, "read:0\n.env\npipe\n") << "the hidden FIFO reads as /dev/null";
  std::string exported = out.path() + "/changes";
  auto copy = Sh("cd /workspace; ls -A; mkfifo made", {"--profile", RwProfile(), "--workspace",
                                                      ws.path(), "--workspace-mode", "copy",
                                                      "--export-changes", exported,
                                                      "--timeout", "20s"});
  EXPECT_EQ(copy.exit_code, 0) << copy.err;
  EXPECT_EQ(copy.out, ".env\npipe\n") << "this profile hides nothing";
  EXPECT_EQ(RunCommand({"find", exported + "/files", "-mindepth", "1"}).out, "")
      << "a FIFO carries no content to export";
}

}  // namespace
}  // namespace brig::testing
