// oci/state: container ids, the container directory and its lock as verbs in other
// processes see them, the record's round trip, and a container's status read from real
// child processes of the test (live, exited, a zombie, a pid naming another process).
#include "oci/state.h"

#include <fcntl.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <sstream>

#include "sys/child.h"
#include "sys/syscalls.h"
#include "testlib/testlib.h"
#include "util/files.h"

namespace brig::oci {
namespace {

using brig::testing::ScratchDir;

struct Pipe {
  Pipe() {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
    r.Reset(p[0]);
    w.Reset(p[1]);
  }
  sys::UniqueFd r, w;
};

// Runs `fn` in a forked child of the test, which exits with what it returns.
pid_t Fork(const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  return pid;
}

int Reap(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Everything written to `fd` until its writers close it.
std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// A child of the test that lives until Release(), then exits 0.
class Sleeper {
 public:
  Sleeper() {
    Pipe p;
    int r = p.r.get();
    pid_ = Fork([r] {
      // Its own copies of the test's other pipes would keep them open.
      if (!sys::CloseAllExcept({0, 1, 2, r})) return 1;
      char c;
      return read(r, &c, 1) == 0 ? 0 : 1;
    });
    release_ = std::move(p.w);
  }
  ~Sleeper() {
    Release();
    if (pid_ > 0) (void)Reap(pid_);
  }
  pid_t pid() const { return pid_; }
  void Release() { release_.Reset(); }
  // Waits until it has exited, leaving it unreaped: a zombie.
  void WaitZombie() {
    Release();
    siginfo_t info;
    ASSERT_EQ(waitid(P_PID, pid_, &info, WEXITED | WNOWAIT), 0);
  }
  int ReapNow() { return Reap(std::exchange(pid_, 0)); }

 private:
  pid_t pid_ = 0;
  sys::UniqueFd release_;
};

// A container's directory as a create that succeeded leaves it: made, then kept.
Result<ContainerDir> Made(const std::string& root, const std::string& id) {
  auto d = ContainerDir::Create(root, id);
  if (d) d->Keep();
  return d;
}

Container RecordOf(pid_t pid, bool started) {
  Container c;
  c.set_id("c1");
  c.set_pid(pid);
  c.set_start_time(sys::StartTimeOf(pid).value_or(0));
  c.set_started(started);
  return c;
}

// Whether `pid` waits for a flock (a "->" line of /proc/locks).
bool WaitsForFlock(pid_t pid) {
  std::istringstream locks(testing::ReadFileOrEmpty("/proc/locks"));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream words(line);
    bool waiting = false, flock = false, it = false;
    for (std::string w; words >> w;) {
      waiting |= w == "->";
      flock |= w == "FLOCK";
      it |= w == std::to_string(pid);
    }
    if (waiting && flock && it) return true;
  }
  return false;
}

TEST(OciStateCheckId, TakesRuncsIds) {
  for (std::string id : {"a", "web-1", "A.b_c+d-e", ".hidden", "...", "0"}) {
    EXPECT_TRUE(CheckId(id)) << id;
  }
  EXPECT_TRUE(CheckId(std::string(1024, 'x')));
  struct Case {
    std::string id, error;
  } cases[] = {
      {"", "container id: is empty"},
      {".", "container id '.': not a name"},
      {"..", "container id '..': not a name"},
      {"a/b", "container id 'a/b': only letters, digits and _ + - . are allowed"},
      {"../x", "container id '../x': only letters, digits and _ + - . are allowed"},
      {"a b", "container id 'a b': only letters, digits and _ + - . are allowed"},
      {"caf\xc3\xa9", "container id 'caf\xc3\xa9': only letters, digits and _ + - . are allowed"},
      {"a\nb", "container id 'a\\x0ab': only letters, digits and _ + - . are allowed"},
      {"~new.abc", "container id '~new.abc': only letters, digits and _ + - . are allowed"},
  };
  for (const auto& c : cases) {
    Status s = CheckId(c.id);
    ASSERT_FALSE(s) << c.id;
    EXPECT_EQ(s.error().Render(), c.error);
    EXPECT_EQ(s.error().kind, ErrorKind::kBadInput);
  }
  Status long_id = CheckId(std::string(1025, 'x'));
  ASSERT_FALSE(long_id);
  EXPECT_EQ(long_id.error().detail, "longer than 1024 bytes");
}

TEST(OciState, CreateMakesTheRootAndRefusesAnExistingId) {
  ScratchDir scratch;
  std::string root = scratch.path() + "/run/oci";
  mode_t old = umask(022);
  auto made = Made(root, "c1");
  umask(old);
  ASSERT_TRUE(made) << made.error().Render();
  EXPECT_EQ(made->path(), root + "/c1");
  struct stat st;
  ASSERT_EQ(stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(stat((root + "/c1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  // Found at its name, it is already locked.
  sys::UniqueFd found(open((root + "/c1").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_EQ(flock(found.get(), LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);

  auto again = Made(root, "c1");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().Render(), "container 'c1' already exists");
  EXPECT_EQ(again.error().kind, ErrorKind::kBadInput);
  made = Error{};  // unlocked: still there, still refused
  again = Made(root, "c1");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().Render(), "container 'c1' already exists");
  // Nothing but the container is left: the refused attempts removed their temporaries.
  sys::UniqueFd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_EQ(util::ListDir(dir.get()), std::vector<std::string>{"c1"});

  EXPECT_EQ(Made(root, "a/b").error().Render(),
            "container id 'a/b': only letters, digits and _ + - . are allowed");
}

TEST(OciState, ADirectoryACreateDidNotKeepGoesWithIt) {
  ScratchDir scratch;
  std::string root = scratch.path() + "/oci";
  {
    auto failed = ContainerDir::Create(root, "c1");
    ASSERT_TRUE(failed) << failed.error().Render();
    ASSERT_TRUE(failed->Write(RecordOf(0, false)));
    ASSERT_EQ(mkfifo(failed->Path("exec.fifo").c_str(), 0600), 0);
    ContainerDir moved = std::move(*failed);
    EXPECT_EQ(access((root + "/c1/state.pb").c_str(), F_OK), 0);
  }
  EXPECT_EQ(*ListIds(root), std::vector<std::string>{}) << "a create that failed left its directory";
  auto kept = ContainerDir::Create(root, "c2");
  ASSERT_TRUE(kept);
  kept->Keep();
  kept = Error{};
  EXPECT_EQ(*ListIds(root), std::vector<std::string>{"c2"});
}

TEST(OciState, OpenRefusesAMissingContainer) {
  ScratchDir scratch;
  auto missing_root = ContainerDir::Open(scratch.path() + "/none", "c1");
  ASSERT_FALSE(missing_root);
  EXPECT_EQ(missing_root.error().Render(), "container 'c1' does not exist");
  EXPECT_EQ(missing_root.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(ContainerDir::Open(scratch.path(), "c1").error().Render(),
            "container 'c1' does not exist");
  EXPECT_EQ(ContainerDir::Open(scratch.path(), "..").error().Render(),
            "container id '..': not a name");
  ASSERT_TRUE(Made(scratch.path(), "c1"));
  auto opened = ContainerDir::Open(scratch.path(), "c1");
  ASSERT_TRUE(opened) << opened.error().Render();
  EXPECT_EQ(opened->Path("exec.fifo"), scratch.path() + "/c1/exec.fifo");
}

TEST(OciState, TheRecordRoundTrips) {
  ScratchDir scratch;
  auto dir = Made(scratch.path(), "c1");
  ASSERT_TRUE(dir) << dir.error().Render();
  Container c;
  c.set_id("c1");
  c.set_bundle("/srv/bundles/c 1");
  c.set_rootfs("/srv/bundles/c 1/rootfs");
  c.set_pid(4242);
  c.set_start_time(1234567890123ull);
  c.set_created("2024-05-06T07:08:09.123456789Z");
  c.set_started(true);
  c.mutable_config()->set_oci_version("1.1.0");
  c.mutable_config()->mutable_process()->add_args("sh");
  c.mutable_config()->mutable_process()->set_oom_score_adj(0);
  (*c.mutable_config()->mutable_annotations())["org.example/k"] = "v \"quoted\"";
  c.add_cgroups("/sys/fs/cgroup/pids/brig/c1");
  c.add_joined_cgroups("/sys/fs/cgroup/unified/shared");
  ASSERT_TRUE(dir->Write(c));

  struct stat st;
  ASSERT_EQ(stat(dir->Path("state.pb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto read = dir->Read();
  ASSERT_TRUE(read) << read.error().Render();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, c)) << read->DebugString();
  // An optional field set to its default stays set.
  EXPECT_TRUE(read->config().process().has_oom_score_adj());

  c.set_started(false);
  ASSERT_TRUE(dir->Write(c));
  dir = Error{};
  auto reopened = ContainerDir::Open(scratch.path(), "c1");
  ASSERT_TRUE(reopened) << reopened.error().Render();
  ASSERT_TRUE(reopened->Read());
  EXPECT_FALSE(reopened->Read()->started());
  EXPECT_EQ(util::ListDir(reopened->fd()), std::vector<std::string>{"state.pb"});
}

TEST(OciState, ARecordThatDoesNotParseIsAnErrorNamingIt) {
  ScratchDir scratch;
  auto dir = Made(scratch.path(), "c1");
  ASSERT_TRUE(dir);
  std::string path = dir->Path("state.pb");
  EXPECT_EQ(dir->Read().error().Render(), "open '" + path + "': No such file or directory");
  ASSERT_TRUE(util::WriteFileAtomic(path, "{\"pid\": \"many\"", 0600));
  auto read = dir->Read();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().Render(), "read '" + path + "': not a container record");
}

TEST(OciState, APathThatIsNotUtf8IsNotWrittenDamaged) {
  ScratchDir scratch;
  auto dir = Made(scratch.path(), "c1");
  ASSERT_TRUE(dir);
  Container c;
  c.set_bundle("/srv/\xff");
  Status s = dir->Write(c);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().Render(),
            "bundle '/srv/\xff': not UTF-8, which the container's record cannot hold");
  EXPECT_NE(access(dir->Path("state.pb").c_str(), F_OK), 0);
}

TEST(OciState, RemoveTakesEverythingAndListIdsShowsTheRest) {
  ScratchDir scratch;
  std::string root = scratch.path() + "/oci";
  EXPECT_EQ(*ListIds(root), std::vector<std::string>{});
  for (const char* id : {"b", "a", ".x", "gone"}) ASSERT_TRUE(Made(root, id));
  // What a create killed before its rename leaves, and a name that is no id.
  ASSERT_EQ(mkdir((root + "/~new.Ab12Cd").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root + "/not an id").c_str(), 0700), 0);

  auto gone = ContainerDir::Open(root, "gone");
  ASSERT_TRUE(gone);
  ASSERT_TRUE(gone->Write(RecordOf(0, false)));
  ASSERT_EQ(mkfifo(gone->Path("exec.fifo").c_str(), 0600), 0);
  ASSERT_EQ(mkdir(gone->Path("sub").c_str(), 0700), 0);
  ASSERT_TRUE(gone->Remove());
  EXPECT_EQ(gone->path(), "");
  EXPECT_EQ(gone->fd(), -1);
  EXPECT_NE(access((root + "/gone").c_str(), F_OK), 0);
  EXPECT_TRUE(gone->Remove()) << "removing an empty object does nothing";

  EXPECT_EQ(*ListIds(root), (std::vector<std::string>{".x", "a", "b"}));
}

TEST(OciState, AnOpenContainerIsLockedAgainstOtherProcesses) {
  ScratchDir scratch;
  ASSERT_TRUE(Made(scratch.path(), "c1"));
  Pipe opened, done;
  std::string root = scratch.path();
  pid_t child = Fork([&] {
    done.w.Reset();
    auto held = ContainerDir::Open(root, "c1");
    if (!held) return 1;
    opened.w.Reset();  // the last write end: the parent's read ends
    char c;
    return read(done.r.get(), &c, 1) == 0 ? 0 : 1;
  });
  ASSERT_GT(child, 0);
  opened.w.Reset();
  done.r.Reset();
  // EOF once the child has the container open (or died).
  EXPECT_EQ(ReadAll(opened.r.get()), "");
  sys::UniqueFd dir(open((root + "/c1").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  EXPECT_EQ(flock(dir.get(), LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  done.w.Reset();
  EXPECT_EQ(Reap(child), 0) << "the child could not open the container";
  EXPECT_EQ(flock(dir.get(), LOCK_EX | LOCK_NB), 0) << "the lock outlived its holder";
}

TEST(OciState, AVerbWaitingOnTheLockOfARemovedContainerFindsItMissing) {
  ScratchDir scratch;
  std::string root = scratch.path();
  auto held = Made(root, "c1");
  ASSERT_TRUE(held);
  ASSERT_TRUE(held->Write(RecordOf(0, false)));
  Pipe starting, result;
  pid_t child = Fork([&] {
    // Not the parent's descriptors: its copy of `held` would keep the lock after Remove.
    if (!sys::CloseAllExcept({0, 1, 2, starting.w.get(), result.w.get()})) return 1;
    starting.w.Reset();
    auto d = ContainerDir::Open(root, "c1");
    std::string out = d ? "opened" : d.error().Render();
    return write(result.w.get(), out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0
                                                                                             : 1;
  });
  ASSERT_GT(child, 0);
  starting.w.Reset();
  result.w.Reset();
  EXPECT_EQ(ReadAll(starting.r.get()), "");
  // The child is about to Open; once the kernel shows it waiting for the lock, the
  // directory goes away under it.
  ASSERT_TRUE(testing::Eventually([&] { return WaitsForFlock(child); }))
      << testing::ReadFileOrEmpty("/proc/locks");
  ASSERT_TRUE(held->Remove());
  EXPECT_EQ(ReadAll(result.r.get()), "container 'c1' does not exist");
  EXPECT_EQ(Reap(child), 0);
}

TEST(OciState, ALockGrantedOnADirectoryNoLongerAtItsPathIsNotTheContainer) {
  ScratchDir scratch;
  std::string root = scratch.path();
  Container first, second;
  first.set_bundle("/first");
  second.set_bundle("/second");
  auto old_dir = Made(root, "c1");
  ASSERT_TRUE(old_dir);
  ASSERT_TRUE(old_dir->Write(first));
  auto new_dir = Made(root, "c2");
  ASSERT_TRUE(new_dir);
  ASSERT_TRUE(new_dir->Write(second));
  Pipe starting, result;
  pid_t child = Fork([&] {
    if (!sys::CloseAllExcept({0, 1, 2, starting.w.get(), result.w.get()})) return 1;
    starting.w.Reset();
    auto d = ContainerDir::Open(root, "c1");
    auto c = d ? d->Read() : Result<Container>(std::move(d).error());
    std::string out = c ? c->bundle() : c.error().Render();
    return write(result.w.get(), out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0
                                                                                             : 1;
  });
  ASSERT_GT(child, 0);
  starting.w.Reset();
  result.w.Reset();
  EXPECT_EQ(ReadAll(starting.r.get()), "");
  ASSERT_TRUE(testing::Eventually([&] { return WaitsForFlock(child); }))
      << testing::ReadFileOrEmpty("/proc/locks");
  // While the child waits on the directory it opened as c1, another takes that name; the
  // lock it is then granted is on a directory that is not c1 any more.
  ASSERT_EQ(renameat2(AT_FDCWD, (root + "/c1").c_str(), AT_FDCWD, (root + "/c2").c_str(),
                      RENAME_EXCHANGE),
            0);
  old_dir = Error{};
  new_dir = Error{};
  EXPECT_EQ(ReadAll(result.r.get()), "/second");
  EXPECT_EQ(Reap(child), 0);
}

TEST(OciState, ParseStartTimeTakesTheFieldsAfterTheLastParenthesis) {
  auto stat = [](const std::string& comm, const std::string& start) {
    return "4242 (" + comm + ") S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 " + start +
           " 5439488 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  };
  for (std::string comm : {"sh", "a b", ")", "((", ") R 1 2 3", "x) S 1 2 3 4 5 6 7 8 9 10 11",
                           "a\nb", "", "(sd-pam)"}) {
    EXPECT_EQ(sys::ParseStartTime(stat(comm, "987654321")), 987654321u) << comm;
  }
  EXPECT_EQ(sys::ParseStartTime(stat("sh", "18446744073709551615")), UINT64_MAX);
  EXPECT_EQ(sys::ParseStartTime(stat("sh", "-1")), std::nullopt);
  EXPECT_EQ(sys::ParseStartTime(stat("sh", "12x")), std::nullopt);
  EXPECT_EQ(sys::ParseStartTime(stat("sh", "18446744073709551616")), std::nullopt);
  EXPECT_EQ(sys::ParseStartTime(""), std::nullopt);
  EXPECT_EQ(sys::ParseStartTime("4242 sh S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"),
            std::nullopt);
  EXPECT_EQ(sys::ParseStartTime("4242 (sh) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0"),
            std::nullopt);
  EXPECT_EQ(sys::ParseStartTime("4242 (sh) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77"),
            77u);

  auto self = util::ReadFile("/proc/self/stat");
  ASSERT_TRUE(self);
  EXPECT_EQ(sys::StartTimeOf(getpid()), sys::ParseStartTime(*self));
  EXPECT_NE(sys::StartTimeOf(getpid()), std::nullopt);
  EXPECT_EQ(sys::StartTimeOf(0), std::nullopt);
  EXPECT_EQ(sys::StartTimeOf(-1), std::nullopt);
}

TEST(OciState, StatusOfALiveProcess) {
  EXPECT_EQ(StatusOf(RecordOf(0, false), false), ContainerStatus::kCreating);
  Sleeper s;
  ASSERT_GT(s.pid(), 0);
  EXPECT_EQ(StatusOf(RecordOf(s.pid(), false), false), ContainerStatus::kCreated);
  EXPECT_EQ(StatusOf(RecordOf(s.pid(), true), false), ContainerStatus::kRunning);
  EXPECT_EQ(StatusOf(RecordOf(s.pid(), true), true), ContainerStatus::kPaused);

  auto pidfd = OpenProcess(RecordOf(s.pid(), true));
  ASSERT_TRUE(pidfd);
  std::string info = testing::ReadFileOrEmpty("/proc/self/fdinfo/" + std::to_string(pidfd->get()));
  EXPECT_NE(info.find("Pid:\t" + std::to_string(s.pid()) + "\n"), std::string::npos) << info;
  EXPECT_FALSE(OpenProcess(RecordOf(0, true)));
}

TEST(OciState, APidNamingAnotherProcessIsStopped) {
  Sleeper s;
  Container c = RecordOf(s.pid(), true);
  c.set_start_time(c.start_time() + 1);
  EXPECT_EQ(StatusOf(c, false), ContainerStatus::kStopped);
  EXPECT_FALSE(OpenProcess(c));
}

TEST(OciState, AZombieIsStopped) {
  Sleeper s;
  Container c = RecordOf(s.pid(), true);
  s.WaitZombie();
  std::string stat = testing::ReadFileOrEmpty("/proc/" + std::to_string(s.pid()) + "/stat");
  ASSERT_NE(stat.find(") Z "), std::string::npos) << stat;
  EXPECT_EQ(StatusOf(c, false), ContainerStatus::kStopped);
  EXPECT_EQ(StatusOf(c, true), ContainerStatus::kStopped);
  // Still the process the record names (its pid is not free until it is reaped).
  EXPECT_TRUE(OpenProcess(c));
}

TEST(OciState, AReapedProcessIsStopped) {
  Sleeper s;
  Container c = RecordOf(s.pid(), true);
  s.Release();
  EXPECT_EQ(s.ReapNow(), 0);
  EXPECT_EQ(StatusOf(c, false), ContainerStatus::kStopped);
  EXPECT_FALSE(OpenProcess(c));
}

TEST(OciState, StateJsonIsRuncsState) {
  Container c;
  c.set_id("c1");
  c.set_pid(4242);
  c.set_bundle("/srv/b");
  c.set_rootfs("/srv/b/rootfs");
  c.set_created("2024-05-06T07:08:09Z");
  (*c.mutable_config()->mutable_annotations())["k"] = "v";
  EXPECT_EQ(StateJson(c, ContainerStatus::kRunning),
            "{\n"
            "  \"ociVersion\": \"1.0.2\",\n"
            "  \"id\": \"c1\",\n"
            "  \"status\": \"running\",\n"
            "  \"pid\": 4242,\n"
            "  \"bundle\": \"/srv/b\",\n"
            "  \"rootfs\": \"/srv/b/rootfs\",\n"
            "  \"created\": \"2024-05-06T07:08:09Z\",\n"
            "  \"owner\": \"\",\n"
            "  \"annotations\": {\n"
            "    \"k\": \"v\"\n"
            "  }\n"
            "}\n");
  c.mutable_config()->set_oci_version("1.1.0");
  c.mutable_config()->clear_annotations();
  c.set_bundle("/srv/ b \"x\"");
  std::string stopped = StateJson(c, ContainerStatus::kStopped);
  EXPECT_NE(stopped.find("\n  \"ociVersion\": \"1.1.0\",\n"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("\n  \"status\": \"stopped\",\n"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("\n  \"pid\": 0,\n"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("\n  \"bundle\": \"/srv/ b \\\"x\\\"\",\n"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("\n  \"annotations\": {}\n"), std::string::npos) << stopped;
}

TEST(OciState, StatusNames) {
  EXPECT_EQ(StatusName(ContainerStatus::kCreating), "creating");
  EXPECT_EQ(StatusName(ContainerStatus::kCreated), "created");
  EXPECT_EQ(StatusName(ContainerStatus::kRunning), "running");
  EXPECT_EQ(StatusName(ContainerStatus::kPaused), "paused");
  EXPECT_EQ(StatusName(ContainerStatus::kStopped), "stopped");
}

}  // namespace
}  // namespace brig::oci
