// A sandbox cannot exhaust the host's per-user kernel counts (issue 14, item 7). brig makes
// the sandbox's user namespace as root, so what the sandbox holds is charged to host root
// too: inotify instances and watches, message-queue bytes, pending signals, namespaces.
// Each test exhausts one count inside a sandbox of the default profile, holds it, and
// checks that the test process (host root) can still get one while the sandbox holds its
// own; the sandbox says when it holds them and waits for the test's word.
#include <fcntl.h>
#include <signal.h>
#include <mqueue.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <thread>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

// Inside the sandbox: takes as many of one count as it can get, prints "holding N ERRNO",
// and keeps them until /workspace/go exists.
constexpr char kExhaust[] = R"(import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
kind = sys.argv[1]
held, n, err = [], 0, 0
if kind == "inotify_instances":
    while n < 1000000:
        fd = libc.inotify_init1(0)
        if fd < 0:
            err = ctypes.get_errno()
            break
        held.append(fd)
        n += 1
elif kind == "inotify_watches":
    # Every file under /usr, in up to 8 instances: more watches than any host allows root.
    fds = [libc.inotify_init1(0) for _ in range(8)]
    done = False
    for fd in fds:
        for root, dirs, files in os.walk("/usr"):
            for f in files:
                if libc.inotify_add_watch(fd, os.path.join(root, f).encode(), 2) < 0:
                    err = ctypes.get_errno()
                    done = err != errno.EACCES and err != errno.ENOENT
                    if done:
                        break
                else:
                    n += 1
            if done:
                break
        if done:
            break
elif kind == "mqueue":
    class Attr(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                    ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long),
                    ("pad", ctypes.c_long * 4)]
    libc.mq_open.restype = ctypes.c_int
    while n < 10000:
        a = Attr(0, 10, 8192, 0)
        q = libc.mq_open(("/brig-q%d" % n).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
        if q < 0:
            err = ctypes.get_errno()
            break
        held.append(q)
        n += 1
elif kind == "signals":
    import signal
    sig = signal.SIGRTMIN + 1
    signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
    libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    while n < 1000000:
        if libc.sigqueue(os.getpid(), sig, None) < 0:
            err = ctypes.get_errno()
            break
        n += 1
print("holding", n, errno.errorcode.get(err, str(err)), flush=True)
while not os.path.exists("/workspace/go"):
    time.sleep(0.02)
)";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool HavePython() { return access("/usr/bin/python3", X_OK) == 0; }

class UserCounts : public HostTest {
 protected:
  // Starts the exhausting sandbox and waits until it holds what it could get; returns
  // brig's pid and the sandbox's "holding" line.
  std::pair<pid_t, std::string> Exhaust(const std::string& kind) {
    ws_.Write("exhaust.py", kExhaust);
    pid_t brig = SpawnBrig({"run", "--workspace", ws_.path(), "--", "python3",
                            "/workspace/exhaust.py", kind},
                           out_.path());
    std::string line;
    auto end = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < end) {
      std::string out = ReadFileOrEmpty(out_.path() + "/stdout");
      if (Contains(out, "\n")) {
        line = out.substr(0, out.find('\n'));
        break;
      }
      int status;
      if (waitpid(brig, &status, WNOHANG) == brig) {
        brig = -1;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return {brig, line};
  }
  // Lets the sandbox go and checks it ended well.
  void Release(pid_t brig) {
    ws_.Write("go", "");
    if (brig > 0) {
      EXPECT_EQ(WaitExit(brig), 0) << ReadFileOrEmpty(out_.path() + "/stderr");
    }
  }
  // The count the sandbox got: N of "holding N ERRNO".
  static long Held(const std::string& line) {
    std::istringstream in(line);
    std::string word;
    long n = -1;
    in >> word >> n;
    return n;
  }

  ScratchDir ws_, out_;
};

TEST_F(UserCounts, InotifyInstancesLeaveHostRootSome) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  auto [brig, line] = Exhaust("inotify_instances");
  ASSERT_TRUE(Contains(line, "holding ")) << line << ReadFileOrEmpty(out_.path() + "/stderr");
  int fd = inotify_init1(IN_CLOEXEC);
  int e = errno;
  EXPECT_GE(fd, 0) << "host root got no inotify instance while the sandbox held " << line
                   << ": " << strerror(e);
  if (fd >= 0) close(fd);
  EXPECT_TRUE(Contains(line, " EMFILE")) << line;
  EXPECT_LE(Held(line), 32) << line;
  Release(brig);
}

TEST_F(UserCounts, InotifyWatchesLeaveHostRootSome) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  auto [brig, line] = Exhaust("inotify_watches");
  ASSERT_TRUE(Contains(line, "holding ")) << line << ReadFileOrEmpty(out_.path() + "/stderr");
  int fd = inotify_init1(IN_CLOEXEC);
  int wd = fd < 0 ? -1 : inotify_add_watch(fd, "/proc/self/exe", IN_MODIFY);
  int e = errno;
  EXPECT_GE(wd, 0) << "host root could not add an inotify watch while the sandbox held "
                   << line << ": " << strerror(e);
  if (fd >= 0) close(fd);
  EXPECT_TRUE(Contains(line, " ENOSPC")) << line;
  EXPECT_LE(Held(line), 8192) << line;
  Release(brig);
}

TEST_F(UserCounts, MessageQueueBytesLeaveHostRootSome) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  auto [brig, line] = Exhaust("mqueue");
  ASSERT_TRUE(Contains(line, "holding ")) << line << ReadFileOrEmpty(out_.path() + "/stderr");
  std::string name = "/brig-test-" + std::to_string(getpid());
  mq_attr attr{};
  attr.mq_maxmsg = 10;
  attr.mq_msgsize = 8192;
  mqd_t q = mq_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &attr);
  int e = errno;
  EXPECT_NE(q, static_cast<mqd_t>(-1))
      << "host root could not open a message queue while the sandbox held " << line << ": "
      << strerror(e);
  if (q != static_cast<mqd_t>(-1)) {
    mq_close(q);
    mq_unlink(name.c_str());
  }
  EXPECT_TRUE(Contains(line, " EMFILE")) << line;
  Release(brig);
}

// Whether host root can queue a real-time signal: a child of the test blocks one and queues
// it to itself.
bool HostRootCanQueueASignal() {
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    union sigval v{};
    _exit(sigqueue(getpid(), SIGRTMIN + 1, v) == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(UserCounts, PendingSignalsLeaveHostRootSome) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  auto [brig, line] = Exhaust("signals");
  ASSERT_TRUE(Contains(line, "holding ")) << line << ReadFileOrEmpty(out_.path() + "/stderr");
  EXPECT_TRUE(HostRootCanQueueASignal())
      << "host root could not queue a signal while the sandbox held " << line;
  EXPECT_TRUE(Contains(line, " EAGAIN")) << line;
  EXPECT_LE(Held(line), 1024) << line;
  Release(brig);
}

// Every count of /proc/sys/user is capped inside, and the per-user rlimits that the kernel
// also charges up the user namespace chain.
TEST_F(UserCounts, EveryCountIsCappedInside) {
  auto r = Sh("cd /proc/sys/user && for f in max_*; do echo \"$f $(cat $f)\"; done; "
              "grep -E 'Max (msgqueue|pending)' /proc/self/limits");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  int counts = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("max_", 0) != 0) continue;
    ++counts;
    std::string name = line.substr(0, line.find(' '));
    long v = std::stol(line.substr(line.find(' ') + 1));
    std::string host = ReadFileOrEmpty("/proc/sys/user/" + name);
    EXPECT_LT(v, std::stol(host)) << name << " inside is " << v << ", the host's " << host;
    EXPECT_LE(v, 16384) << line;
  }
  EXPECT_GE(counts, 10) << r.out;
  EXPECT_TRUE(Contains(r.out, "Max msgqueue size         65536")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Max pending signals       1024")) << r.out;
}

// A profile sets its own caps.
TEST_F(UserCounts, AProfileSetsItsOwn) {
  ScratchDir dir;
  std::string profile = dir.Write("counts.textproto",
                                  "isolation: ISOLATION_SANDBOX\n"
                                  "filesystem { workspace: WORKSPACE_RO }\n"
                                  "network { posture: POSTURE_NONE }\n"
                                  "security { seccomp_policy: \"default\" }\n"
                                  "limits { user_counts { inotify_instances: 3 "
                                  "inotify_watches: 100 namespaces: 2 msgqueue_bytes: 4096 "
                                  "pending_signals: 10 } }\n");
  auto r = RunBrig({"run", "--profile", profile, "--", "sh", "-c",
                    "cat /proc/sys/user/max_inotify_instances "
                    "/proc/sys/user/max_inotify_watches /proc/sys/user/max_user_namespaces; "
                    "grep -E 'Max (msgqueue|pending)' /proc/self/limits"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "3\n100\n2\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Max pending signals       10")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Max msgqueue size         4096")) << r.out;
}

}  // namespace
}  // namespace brig::testing
