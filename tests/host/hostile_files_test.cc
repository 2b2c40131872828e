// Files brig is handed are hostile (issue 15, item 7): a profile, seccomp policy or audit
// log that is a FIFO, a device or too large; a result path that turns into a device or a
// symlink while the sandbox runs; an export cut short by a SIGKILL; a path too long to
// repeat; a lone "-" for a command. Each fails in one line, leaves nothing behind, and
// never blocks brig.
#include <fcntl.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class HostileFiles : public HostTest {
 protected:
  // Runs brig; a brig still running after kSettleLimit is blocked: it is killed and the
  // test fails.
  RunOutput RunBounded(const std::vector<std::string>& args) {
    ScratchDir io;
    pid_t pid = SpawnBrig(args, io.path());
    int status = 0;
    bool ended = Eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; });
    if (!ended) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "brig blocked";
    }
    RunOutput r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFileOrEmpty(io.path() + "/stdout");
    r.err = ReadFileOrEmpty(io.path() + "/stderr");
    return r;
  }

  void ExpectOneLine(const RunOutput& r, const std::string& why, const std::string& what,
                     int code = 125) {
    EXPECT_EQ(r.exit_code, code) << what << ": " << r.err;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << what << ": " << r.err;
  }
};

TEST_F(HostileFiles, AProfileThatIsNotARegularFileFailsInOneLineWithoutBlocking) {
  ScratchDir dir;
  std::string fifo = dir.path() + "/fifo.textproto", link = dir.path() + "/link.textproto";
  std::string big = dir.path() + "/big.textproto";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(RwProfile().c_str(), link.c_str()), 0);
  ASSERT_EQ(truncate(dir.Write("big.textproto", "").c_str(), 5 << 20), 0);
  const std::pair<std::string, std::string> cases[] = {{"/dev/zero", "not a regular file"},
                                                       {fifo, "not a regular file"},
                                                       {link, "a symlink"},
                                                       {big, "larger than"}};
  for (const auto& [profile, why] : cases) {
    ExpectOneLine(RunBounded({"run", "--profile", profile, "--", "echo", "RAN"}), why, profile);
    ExpectOneLine(RunBounded({"policy", "check", "--kind", "profile", profile}), why,
                  "policy check " + profile, 1);
  }
}

TEST_F(HostileFiles, ASeccompPolicyThatIsNotARegularFileFailsInOneLineWithoutBlocking) {
  ScratchDir dir;
  std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& policy : {std::string("/dev/zero"), fifo}) {
    std::string profile = dir.Write("p.textproto",
                                    "isolation: ISOLATION_SANDBOX\n"
                                    "filesystem { workspace: WORKSPACE_RO }\n"
                                    "network { posture: POSTURE_NONE }\n"
                                    "security { seccomp_policy: \"" + policy + "\" }\n");
    ExpectOneLine(RunBounded({"run", "--profile", profile, "--", "echo", "RAN"}),
                  "not a regular file", policy);
  }
}

// The result's path turns into a device node (the test's own, in its own directory) or a
// symlink while the sandbox runs: brig's rename would replace it, so brig refuses, and
// leaves neither the node nor its temporary file changed or behind.
TEST_F(HostileFiles, AResultPathThatBecameADeviceOrSymlinkIsNotReplaced) {
  for (const std::string kind : {"device", "symlink"}) {
    ScratchDir ws, out, io;
    ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
    std::string victim = out.Write("victim", "precious\n");
    std::string result = out.path() + "/r.json";
    // The workload says it runs (past every check of the result's path), then waits for
    // the test to say go.
    pid_t brig = SpawnBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(),
                            "--result", result, "--timeout", "60s", "--", "/bin/sh", "-c",
                            "touch /workspace/running; "
                            "while [ ! -e /workspace/go ]; do sleep 0.02; done"},
                           io.path());
    ASSERT_TRUE(Eventually([&] { return access((ws.path() + "/running").c_str(), F_OK) == 0; }))
        << ReadFileOrEmpty(io.path() + "/stderr");
    if (kind == "device") {
      ASSERT_EQ(mknod(result.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
    } else {
      ASSERT_EQ(symlink(victim.c_str(), result.c_str()), 0);
    }
    ws.Write("go", "");
    EXPECT_EQ(WaitExit(brig), 125) << kind;
    std::string err = ReadFileOrEmpty(io.path() + "/stderr");
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << kind << ": " << err;
    struct stat st;
    ASSERT_EQ(lstat(result.c_str(), &st), 0);
    if (kind == "device") {
      EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) << "the device was replaced";
    } else {
      EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink was replaced";
    }
    EXPECT_EQ(ReadFileOrEmpty(victim), "precious\n");
    EXPECT_EQ(RunCommand({"ls", out.path()}).out, "r.json\nvictim\n") << kind;
  }
}

// Watches `dir` for brig (`pid`) opening `path` (fanotify holds the open still until it is
// answered) and SIGKILLs brig there. Empty once brig is killed and reaped, else why not.
std::string KillAtOpen(pid_t pid, const std::string& dir, const std::string& path) {
  int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
  if (fan < 0) return std::string("fanotify_init: ") + strerror(errno);
  if (fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_EVENT_ON_CHILD | FAN_ONDIR, AT_FDCWD,
                    dir.c_str()) < 0) {
    close(fan);
    return std::string("fanotify_mark: ") + strerror(errno);
  }
  bool killed = false, ended = false;
  while (!killed && !ended) {
    pollfd p = {fan, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      alignas(fanotify_event_metadata) char buf[4096];
      ssize_t n = read(fan, buf, sizeof buf);
      for (auto* m = reinterpret_cast<fanotify_event_metadata*>(buf); n > 0 && FAN_EVENT_OK(m, n);
           m = FAN_EVENT_NEXT(m, n)) {
        char link[64], opened[4096] = {};
        snprintf(link, sizeof link, "/proc/self/fd/%d", m->fd);
        (void)!readlink(link, opened, sizeof opened - 1);
        if (!killed && path == opened) killed = kill(pid, SIGKILL) == 0 && WaitExit(pid) == 137;
        fanotify_response resp = {m->fd, FAN_ALLOW};
        (void)!write(fan, &resp, sizeof resp);
        close(m->fd);
      }
    }
    int status;
    ended = !killed && waitpid(pid, &status, WNOHANG) == pid;
  }
  close(fan);
  return killed ? "" : "brig ended before it opened " + path;
}

// brig is SIGKILLed while its export is half written (held at the opening of its partial
// directory): brig gc removes DIR.partial-PID.
TEST_F(HostileFiles, AnExportCutShortBySigkillIsRemovedByGc) {
  ScratchDir ws, out, io;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string dest = out.path() + "/changes";
  pid_t brig = SpawnBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(),
                          "--workspace-mode", "copy", "--export-changes", dest, "--", "/bin/sh",
                          "-c", "echo new > /workspace/a.txt"},
                         io.path());
  std::string partial = dest + ".partial-" + std::to_string(brig);
  std::string why = KillAtOpen(brig, out.path(), partial);
  ASSERT_EQ(why, "") << ReadFileOrEmpty(io.path() + "/stderr");
  struct stat st;
  ASSERT_EQ(lstat(partial.c_str(), &st), 0) << "no partial export to collect";
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed partial " + partial), std::string::npos) << gc.out;
  EXPECT_NE(lstat(partial.c_str(), &st), 0) << "the partial export is left";
  EXPECT_NE(lstat(dest.c_str(), &st), 0);
}

// The same while the result file is written (held at the opening of FILE.tmpPID).
TEST_F(HostileFiles, AResultWriteCutShortBySigkillIsRemovedByGc) {
  ScratchDir out, io;
  std::string result = out.path() + "/r.json";
  pid_t brig = SpawnBrig({"run", "--result", result, "--", "true"}, io.path());
  std::string temp = result + ".tmp" + std::to_string(brig);
  std::string why = KillAtOpen(brig, out.path(), temp);
  ASSERT_EQ(why, "") << ReadFileOrEmpty(io.path() + "/stderr");
  struct stat st;
  ASSERT_EQ(lstat(temp.c_str(), &st), 0) << "no temporary file to collect";
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed temp " + temp), std::string::npos) << gc.out;
  EXPECT_NE(lstat(temp.c_str(), &st), 0) << "the temporary file is left";
  EXPECT_NE(lstat(result.c_str(), &st), 0);
}

TEST_F(HostileFiles, AVeryLongPathIsNotRepeatedWhole) {
  std::string path = "/tmp/" + std::string(100000, 'a') + "/r.json";
  for (const char* flag : {"--result", "--audit-log", "--profile"}) {
    auto r = RunBrig({"run", flag, path, "--", "echo", "RAN"});
    EXPECT_EQ(r.exit_code, 125) << flag;
    EXPECT_EQ(r.out, "") << flag;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flag;
    EXPECT_LT(r.err.size(), 4096u) << flag << ": " << r.err.substr(0, 200);
    EXPECT_NE(r.err.find("..."), std::string::npos) << flag << ": " << r.err.substr(0, 200);
  }
}

TEST_F(HostileFiles, ALoneDashIsNotACommand) {
  auto r = RunBrig({"run", "-"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err, "brig: brig run '-': not a command or an option\n");
}

}  // namespace
}  // namespace brig::testing
