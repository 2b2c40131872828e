// --disk-size (issue 14, item 8): a copy workspace's changes on disk under --copy-dir are
// capped by the kernel. The sandbox writes far past the cap and is refused (ENOSPC) while
// the host's directory holds no more than the cap; afterwards nothing of the run is left:
// no directory, no image, no loop device. Each test makes the file system it runs on (an
// ext4 image on a loop device of its own) and removes it.
#include <dirent.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find('\n', at);
    if (end == std::string::npos) end = s.size();
    lines.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// A file system of the test's own: an ext4 image of `size` on a loop device, mounted at
// mnt(). Unmounted, detached and removed with the object. why() says why it could not be
// made (for GTEST_SKIP), empty if it was.
class TestFs {
 public:
  explicit TestFs(const std::string& size) {
    image_ = scratch_.path() + "/fs.img";
    mnt_ = scratch_.path() + "/mnt";
    if (mkdir(mnt_.c_str(), 0755) < 0) abort();
    if (access("/dev/loop-control", F_OK) != 0) {
      why_ = "needs loop devices (/dev/loop-control)";
      return;
    }
    if (RunCommand({"truncate", "-s", size, image_}).exit_code != 0 ||
        RunCommand({"mkfs.ext4", "-q", image_}).exit_code != 0) {
      why_ = "needs mkfs.ext4 (e2fsprogs) to make a file system to test on";
      return;
    }
    auto l = RunCommand({"losetup", "--find", "--show", image_});
    if (l.exit_code != 0) {
      why_ = "needs losetup (util-linux) and a free loop device: " + Trim(l.err);
      return;
    }
    loop_ = Trim(l.out);
    if (mount(loop_.c_str(), mnt_.c_str(), "ext4", 0, nullptr) < 0) {
      why_ = "cannot mount an ext4 image: " + std::string(strerror(errno));
      return;
    }
    mounted_ = true;
  }
  ~TestFs() {
    if (mounted_ && umount2(mnt_.c_str(), 0) < 0) {
      ADD_FAILURE() << "the test's file system is still busy: " << strerror(errno);
      umount2(mnt_.c_str(), MNT_DETACH);
    }
    if (!loop_.empty()) RunCommand({"losetup", "-d", loop_});
  }
  const std::string& why() const { return why_; }
  const std::string& mnt() const { return mnt_; }
  // Bytes in use on the file system now.
  uint64_t Used() const {
    struct statvfs v;
    if (statvfs(mnt_.c_str(), &v) < 0) return UINT64_MAX;
    return (v.f_blocks - v.f_bfree) * v.f_frsize;
  }
  // What is in its top directory, a name a line (lost+found left out).
  std::string List() const {
    std::string out;
    for (const auto& line : Lines(RunCommand({"ls", "-A", mnt_}).out)) {
      if (line != "lost+found") out += line + "\n";
    }
    return out;
  }
  // The loop devices whose backing file is on this file system, other than its own.
  std::string LoopsBackedHere() const {
    std::string found;
    if (DIR* d = opendir("/sys/block")) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.rfind("loop", 0) != 0) continue;
        std::string file = Trim(ReadFileOrEmpty("/sys/block/" + name + "/loop/backing_file"));
        if (file.rfind(mnt_ + "/", 0) == 0) found += name + " " + file + "\n";
      }
      closedir(d);
    }
    return found;
  }

 private:
  ScratchDir scratch_;
  std::string image_, mnt_, loop_;
  bool mounted_ = false;
  std::string why_;
};

class Disk : public HostTest {
 protected:
  // brig run with a copy workspace: the read-write test profile narrowed to a copy.
  std::vector<std::string> CopyArgs(const std::string& ws, std::vector<std::string> more) {
    std::vector<std::string> args = {"run", "--profile", RwProfile(), "--workspace", ws,
                                     "--workspace-mode", "copy"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
};

constexpr uint64_t kMiB = 1 << 20;

// The attack: 64M written into a copy capped at 8M. dd is refused with ENOSPC inside; while
// the sandbox still runs, the file system under --copy-dir holds at most the cap more than
// before; after the run it holds nothing more, its directory is empty and no loop device
// is left on it.
TEST_F(Disk, WritingPastTheCapIsRefusedAndNothingIsLeft) {
  TestFs fs("256M");
  if (!fs.why().empty()) GTEST_SKIP() << fs.why();
  ScratchDir ws, logs;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  uint64_t before = fs.Used();
  std::string marker = "sleep 7" + std::to_string(getpid() % 1000);
  auto args = CopyArgs(ws.path(), {"--copy-dir", fs.mnt(), "--disk-size", "8M", "--", "sh", "-c",
                                   "dd if=/dev/zero of=big bs=1M count=64 2>/tmp/err; echo dd=$?; "
                                   "grep -o 'No space left on device' /tmp/err; "
                                   "stat -c %s big; exec " + marker});
  pid_t pid = SpawnBrig(args, logs.path());
  // Until the workload sleeps and brig's relay has written stat's line: the relay may
  // still hold it when the sleep starts.
  auto said = [&] {
    std::string o = ReadFileOrEmpty(logs.path() + "/stdout");
    size_t at = o.rfind("device\n");
    return at != std::string::npos && o.find('\n', at + 7) != std::string::npos;
  };
  for (int i = 0; i < 1500 && (FindProcesses(marker).empty() || !said()); ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string out = ReadFileOrEmpty(logs.path() + "/stdout");
  std::string err = ReadFileOrEmpty(logs.path() + "/stderr");
  uint64_t during = fs.Used();
  if (pid > 0) {
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitExit(pid), 128 + SIGTERM) << err;
  }
  ASSERT_EQ(out.rfind("dd=1\nNo space left on device\n", 0), 0u) << out << err;
  uint64_t written = std::stoull(out.substr(out.rfind("device\n") + 7));
  EXPECT_LT(written, 8 * kMiB);
  EXPECT_GT(written, 4 * kMiB) << "the cap is far below --disk-size";
  EXPECT_LE(during - before, 9 * kMiB) << "the host held more than the cap";
  EXPECT_EQ(fs.List(), "") << "the scratch directory outlived the run";
  EXPECT_EQ(fs.LoopsBackedHere(), "") << "a loop device outlived the run";
  EXPECT_LE(fs.Used(), before + 64 * 1024) << "the image outlived the run";
}

// A SIGKILL of brig leaves no image and no loop device: the sandbox dies with brig, the
// device clears itself once the overlay is gone, and the unnamed image goes with it. The
// empty directory is left for brig gc, which removes it (scratch directories: see
// WorkspaceCopy.ACopyDirIsRootsAloneAndBrigGcRemovesIt).
TEST_F(Disk, AKilledBrigLeavesNoImageAndNoLoopDevice) {
  TestFs fs("64M");
  if (!fs.why().empty()) GTEST_SKIP() << fs.why();
  ScratchDir ws, logs;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  uint64_t before = fs.Used();
  std::string marker = "sleep 8" + std::to_string(getpid() % 1000);
  pid_t pid = SpawnBrig(CopyArgs(ws.path(), {"--copy-dir", fs.mnt(), "--disk-size", "16M", "--",
                                             "sh", "-c", "head -c 4000000 /dev/zero > big; exec " +
                                                             marker}),
                        logs.path());
  Eventually([&] { return !FindProcesses(marker).empty(); });
  ASSERT_FALSE(FindProcesses(marker).empty()) << ReadFileOrEmpty(logs.path() + "/stderr");
  EXPECT_NE(fs.LoopsBackedHere(), "") << "the image is on a loop device while the run lasts";
  kill(pid, SIGKILL);
  WaitExit(pid);
  SettleUntilGone(marker);
  // The kernel drops the last reference (the loop device's, then the unnamed image's
  // blocks) after the sandbox's last process, in its own time: seconds under TCG.
  EXPECT_TRUE(Eventually([&] { return fs.LoopsBackedHere().empty(); }))
      << "a loop device outlived brig: " << fs.LoopsBackedHere();
  EXPECT_TRUE(Eventually([&] { return fs.Used() <= before + 64 * 1024; }))
      << "the image outlived brig: " << fs.Used() << " bytes used, " << before << " before";
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(fs.List(), "");
}

// Within the cap, a copy on disk is a copy as any other: the sandbox sees its changes, the
// source stays as it was, --export-changes writes them out, and nothing is left.
TEST_F(Disk, ACappedCopyOnDiskIsACopyAsAnyOther) {
  TestFs fs("64M");
  if (!fs.why().empty()) GTEST_SKIP() << fs.why();
  ScratchDir ws, out;
  ws.Write("a.txt", "hello\n");
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ASSERT_EQ(chown((ws.path() + "/a.txt").c_str(), 1234, 1234), 0);
  std::string exported = out.path() + "/changes";
  auto r = RunBrig(CopyArgs(ws.path(), {"--copy-dir", fs.mnt(), "--disk-size", "4M",
                                        "--export-changes", exported, "--", "sh", "-c",
                                        "set -e; echo more >> a.txt; head -c 1000000 /dev/zero "
                                        "> big; cat a.txt; stat -c %s big"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\nmore\n1000000\n");
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/a.txt"), "hello\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/a.txt"), "hello\nmore\n");
  struct stat st;
  ASSERT_EQ(stat((exported + "/files/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1000000);
  EXPECT_EQ(fs.List(), "");
  EXPECT_EQ(fs.LoopsBackedHere(), "");
}

// Without --copy-dir the copy is a tmpfs, and --disk-size is its size (not --tmp-size's).
TEST_F(Disk, WithoutACopyDirTheCapIsTheTmpfsSize) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  auto r = RunBrig(CopyArgs(ws.path(), {"--disk-size", "8M", "--tmp-size", "1G", "--", "sh", "-c",
                                        "dd if=/dev/zero of=big bs=1M count=64 2>/tmp/err; "
                                        "echo dd=$?; grep -o 'No space left on device' /tmp/err; "
                                        "stat -c %s big"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.rfind("dd=1\nNo space left on device\n", 0), 0u) << r.out;
  EXPECT_LE(std::stoull(r.out.substr(r.out.rfind("device\n") + 7)), 8 * kMiB);
}

// A cap brig cannot enforce is refused before anything runs (exit 125, one line), and
// nothing is left: --disk-size without a copy workspace, and --copy-dir on a file system
// that cannot hold the disk image (bpffs has no O_TMPFILE).
TEST_F(Disk, ACapThatCannotBeEnforcedIsRefused) {
  ScratchDir ws, other;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  const std::string script = "touch ran; echo RAN";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--profile", RwProfile(), "--workspace", ws.path(), "--disk-size", "8M"},
           {"--workspace", ws.path(), "--disk-size", "8M"},
           {"--disk-size", "8M"}}) {
    auto r = Sh(script, args);
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("brig: --disk-size: needs a copy workspace", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0);
  std::string bpf = other.path() + "/bpf";
  ASSERT_EQ(mkdir(bpf.c_str(), 0755), 0);
  if (mount("bpf", bpf.c_str(), "bpf", 0, nullptr) < 0) {
    GTEST_SKIP() << "cannot mount a bpf file system to test on: " << strerror(errno);
  }
  std::string before = RunCommand({"ls", "-A", bpf}).out;  // the kernel's own, if any
  auto r = RunBrig(CopyArgs(ws.path(), {"--copy-dir", bpf, "--disk-size", "8M", "--", "sh", "-c",
                                        script}));
  std::string after = RunCommand({"ls", "-A", bpf}).out;
  EXPECT_EQ(umount2(bpf.c_str(), 0), 0) << strerror(errno);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("brig: --copy-dir '" + bpf + "': its file system cannot hold", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("O_TMPFILE"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace brig::testing
