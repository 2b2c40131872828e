// Outputs checked before anything runs (issue 15, item 6): --result, --audit-log,
// --export-changes and --copy-dir whose directory is missing, not a directory, a kernel
// file system or read-only, or whose path holds a FIFO, symlink or device, stop brig with
// one line and exit 125 before the workload starts.
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Outputs : public HostTest {
 protected:
  // A refusal: exit 125, one line naming `flag`, and the workload never ran.
  void ExpectRefused(const RunOutput& r, const std::string& flag, const std::string& what) {
    EXPECT_EQ(r.exit_code, 125) << what << ": " << r.err;
    EXPECT_EQ(r.out, "") << what << ": the workload ran";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("brig: " + flag + " '", 0), 0u) << what << ": " << r.err;
  }
};

TEST_F(Outputs, AResultOrAuditLogThatCannotBeWrittenStopsTheRunBeforeItStarts) {
  for (const char* flag : {"--result", "--audit-log"}) {
    for (const std::string path : {"/etc/passwd/r.json", "/proc/r.json", "/sys/r.json",
                                   "/no/such/dir/r.json"}) {
      ExpectRefused(Sh("echo RAN", {flag, path}), flag, std::string(flag) + " " + path);
    }
  }
  EXPECT_NE(access("/etc/passwd/r.json", F_OK), 0);
}

TEST_F(Outputs, ARefusedResultInTheWorkspaceIsNotWrittenThere) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string result = ws.path() + "/r.json";
  auto r = Sh("echo RAN", {"--profile", RwProfile(), "--workspace", ws.path(), "--result", result});
  ExpectRefused(r, "--result", result);
  EXPECT_NE(r.err.find("inside the workspace"), std::string::npos) << r.err;
  EXPECT_NE(access(result.c_str(), F_OK), 0) << "the refusal was written where it was refused";
}

// What is at the result's or audit log's path must be a regular file: brig never writes
// through, or renames over, a FIFO, a symlink or a device node (as root, `--result
// /dev/null` would replace the host's /dev/null). The device here is the test's own.
TEST_F(Outputs, AResultOrAuditLogAtAFifoSymlinkOrDeviceIsRefused) {
  ScratchDir dir;
  std::string victim = dir.Write("victim", "precious\n");
  std::string fifo = dir.path() + "/fifo", link = dir.path() + "/link", dev = dir.path() + "/null";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
  for (const char* flag : {"--result", "--audit-log"}) {
    for (const std::string& path : {fifo, link, dev}) {
      auto r = Sh("echo RAN", {flag, path, "--timeout", "20s"});
      ExpectRefused(r, flag, path);
      EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
    }
  }
  struct stat st;
  ASSERT_EQ(lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) << "the device was replaced";
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(ReadFileOrEmpty(victim), "precious\n");
}

// A read-only file system, where even root cannot write: every output is refused before
// the run, --copy-dir and --export-changes included.
TEST_F(Outputs, OutputsOnAReadOnlyFileSystemAreRefusedBeforeTheRun) {
  ScratchDir ws, mnt;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ASSERT_EQ(mount("tmpfs", mnt.path().c_str(), "tmpfs", MS_RDONLY, "size=1M"), 0) << strerror(errno);
  std::vector<std::string> copy = {"--profile", RwProfile(), "--workspace", ws.path(),
                                   "--workspace-mode", "copy"};
  struct Case {
    std::string flag, value;
  };
  const Case cases[] = {{"--result", mnt.path() + "/r.json"},
                        {"--audit-log", mnt.path() + "/audit"},
                        {"--export-changes", mnt.path() + "/changes"},
                        {"--copy-dir", mnt.path()},
                        {"--export-changes", "/proc/changes"},
                        {"--copy-dir", "/proc"}};
  std::vector<RunOutput> runs;
  for (const auto& c : cases) {
    std::vector<std::string> args = copy;
    args.insert(args.end(), {c.flag, c.value});
    runs.push_back(Sh("echo RAN", args));
  }
  EXPECT_EQ(umount2(mnt.path().c_str(), 0), 0) << strerror(errno);
  for (size_t i = 0; i < runs.size(); ++i) {
    ExpectRefused(runs[i], cases[i].flag, cases[i].flag + " " + cases[i].value);
  }
}

}  // namespace
}  // namespace brig::testing
