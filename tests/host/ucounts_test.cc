// A sandbox cannot exhaust the host's per-user kernel counts (issue 14, item 7), nor can
// many sandboxes together (issue 27, item 4): what a sandbox holds (inotify instances and
// watches, message-queue bytes, pending signals, namespaces) was charged to host root, the
// owner of every sandbox's user namespace, until each sandbox's namespace was its own host
// uid's. Each test exhausts counts inside sandboxes of the default profile, holds them, and
// checks that the test process (host root) can still get one while the sandboxes hold
// theirs; a sandbox says when it holds them and waits for the test's word.
#include <fcntl.h>
#include <signal.h>
#include <mqueue.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
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

// Inside each of the concurrent sandboxes: an inotify watch on /workspace to wait on first,
// then as many inotify instances, inotify watches, message-queue bytes (queues of 10 KiB)
// and user namespaces (a child each) as it can get; prints
// "held INSTANCES ERR WATCHES ERR QUEUES ERR USERNS ERR" and keeps them until the test
// makes /workspace/go.
constexpr char kHoldAll[] = R"(import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
go = libc.inotify_init1(0)
if go >= 0:
    libc.inotify_add_watch(go, b"/workspace", 0x100)  # IN_CREATE
held, out = [], []
n, e = 0, "-"
while n < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        e = err()
        break
    held.append(fd)
    n += 1
out += [n, e]
wds, e = set(), "-"
if held:
    done = False
    for root, dirs, files in os.walk("/usr"):
        for f in files:
            wd = libc.inotify_add_watch(held[0], os.path.join(root, f).encode(), 2)
            if wd < 0:
                if ctypes.get_errno() not in (errno.EACCES, errno.ENOENT):
                    e, done = err(), True
                    break
            else:
                wds.add(wd)  # a second link to a watched file is the same watch
        if done:
            break
out += [len(wds), e]
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long),
                ("pad", ctypes.c_long * 4)]
n, e = 0, "-"
while n < 10000:
    a = Attr(0, 10, 1024, 0)
    if libc.mq_open(("/q%d" % n).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a)) < 0:
        e = err()
        break
    n += 1
out += [n, e]
n, e, kids = 0, "-", []
release_r, release_w = os.pipe()
while n < 1000:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(release_w)
        ok = libc.unshare(0x10000000) == 0
        os.write(w, b"1" if ok else err().encode())
        os.read(release_r, 1)
        os._exit(0)
    kids.append(pid)
    os.close(w)
    said = os.read(r, 64).decode()
    os.close(r)
    if said != "1":
        e = said
        break
    n += 1
out += [n, e]
print("held", *out, flush=True)
if go >= 0:
    while b"go\0" not in os.read(go, 4096):
        pass
else:
    while not os.path.exists("/workspace/go"):
        time.sleep(0.02)
os.close(release_w)
for pid in kids:
    os.waitpid(pid, 0)
)";

// A brig run whose stdout is a pipe the test reads.
struct Holder {
  pid_t brig = -1;
  sys::UniqueFd out;
};

Holder SpawnHolding(const std::string& ws, const std::string& err_dir) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return {};
  std::string bin = BrigBinary();
  std::vector<std::string> args = {bin, "run", "--workspace", ws, "--", "python3",
                                   "/workspace/hold.py"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    int e = open((err_dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(devnull, 0);
    dup2(p[1], 1);
    dup2(e, 2);
    execv(argv[0], argv.data());
    _exit(99);
  }
  close(p[1]);
  return {pid, sys::UniqueFd(p[0])};
}

// Its first line, once written (or what it wrote before it ended without one).
std::string FirstLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

// Whether host root can make a user namespace: a child of the test tries.
bool HostRootCanMakeAUserNamespace() {
  pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Issue 27, item 4: every sandbox's user namespace was host root's, so the counts of all of
// them were charged to root together. Eight default sandboxes at once each take all they
// may of inotify instances, inotify watches, message-queue bytes and user namespaces; each
// gets its whole share (the kernel charges it to the sandbox's own host uid), and while they
// hold it all, host root still gets one of each.
TEST_F(UserCounts, EightSandboxesEachGetTheirShareAndHostRootStillGetsOneOfEach) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  constexpr int kSandboxes = 8;
  ws_.Write("hold.py", kHoldAll);
  std::vector<std::unique_ptr<ScratchDir>> errs;
  std::vector<Holder> boxes;
  for (int i = 0; i < kSandboxes; ++i) {
    errs.push_back(std::make_unique<ScratchDir>());
    boxes.push_back(SpawnHolding(ws_.path(), errs.back()->path()));
    ASSERT_GT(boxes.back().brig, 0);
  }
  std::vector<std::string> lines;
  for (int i = 0; i < kSandboxes; ++i) {
    lines.push_back(FirstLine(boxes[i].out.get()));
    EXPECT_EQ(lines.back().rfind("held ", 0), 0u)
        << "sandbox " << i << ": " << lines.back() << ReadFileOrEmpty(errs[i]->path() + "/stderr");
  }
  // While all eight hold everything: host root's own.
  int fd = inotify_init1(IN_CLOEXEC);
  int e = errno;
  EXPECT_GE(fd, 0) << "host root got no inotify instance: " << strerror(e);
  int wd = fd < 0 ? -1 : inotify_add_watch(fd, "/proc/self/exe", IN_MODIFY);
  e = errno;
  EXPECT_GE(wd, 0) << "host root could not add an inotify watch: " << strerror(e);
  if (fd >= 0) close(fd);
  std::string name = "/brig-test-" + std::to_string(getpid());
  mq_attr attr{};
  attr.mq_maxmsg = 10;
  attr.mq_msgsize = 8192;
  mqd_t q = mq_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &attr);
  e = errno;
  EXPECT_NE(q, static_cast<mqd_t>(-1)) << "host root could not open a message queue: "
                                       << strerror(e);
  if (q != static_cast<mqd_t>(-1)) {
    mq_close(q);
    mq_unlink(name.c_str());
  }
  EXPECT_TRUE(HostRootCanMakeAUserNamespace());
  ws_.Write("go", "");
  for (int i = 0; i < kSandboxes; ++i) {
    EXPECT_EQ(WaitExit(boxes[i].brig), 0) << ReadFileOrEmpty(errs[i]->path() + "/stderr");
  }
  // Each got its whole share, and no more: 32 instances (the one it waits on among them),
  // 4096 watches, 6 queues of 10 KiB in 64 KiB; the default seccomp policy denies unshare.
  for (int i = 0; i < kSandboxes; ++i) {
    std::istringstream in(lines[i]);
    std::string word, instances_err, watches_err, queues_err, userns_err;
    long instances = -1, watches = -1, queues = -1, userns = -1;
    in >> word >> instances >> instances_err >> watches >> watches_err >> queues >> queues_err >>
        userns >> userns_err;
    SCOPED_TRACE("sandbox " + std::to_string(i) + ": " + lines[i]);
    EXPECT_EQ(instances, 31);
    EXPECT_EQ(instances_err, "EMFILE");
    EXPECT_EQ(watches, 4095);
    EXPECT_EQ(watches_err, "ENOSPC");
    EXPECT_GE(queues, 1);
    EXPECT_EQ(queues_err, "EMFILE");
    EXPECT_EQ(userns, 0);
    EXPECT_EQ(userns_err, "EPERM");
  }
}

}  // namespace
}  // namespace brig::testing
