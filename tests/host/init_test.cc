// brig init as an attacker inside sees it (issue 14, item 4): pid 1 holds nothing that
// names a host object and runs under a filter of its own (the shape of runc
// CVE-2024-21626 is a host fd in a process the workload can reach), setgroups is denied,
// and only signals from outside the sandbox are relayed to the workload. And when init
// fails, brig reports init's own error, never the broken pipe it left (item 12).
#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "container/sync.h"
#include "host/host_fixture.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// brig's child named brig-init (brig has no other children while a sandbox runs, but
// the name makes sure), or 0.
pid_t InitOf(pid_t brig) {
  std::istringstream children(ReadFileOrEmpty("/proc/" + std::to_string(brig) + "/task/" +
                                              std::to_string(brig) + "/children"));
  pid_t child;
  while (children >> child) {
    if (ReadFileOrEmpty("/proc/" + std::to_string(child) + "/comm") == "brig-init\n") {
      return child;
    }
  }
  return 0;
}

// What each of `pid`'s descriptors is, as readlink(/proc/PID/fd/N) says, one a line.
std::string FdsOf(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::string out;
  DIR* d = opendir(dir.c_str());
  if (!d) return "cannot list " + dir;
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] == '.') continue;
    char target[4096];
    ssize_t n = readlink((dir + "/" + de->d_name).c_str(), target, sizeof target);
    out += std::string(de->d_name) + " -> " + (n < 0 ? "?" : std::string(target, n)) + "\n";
  }
  closedir(d);
  return out;
}

class BrigInit : public HostTest {};

// While the workload runs, init's descriptors are its sync socket, its signalfd and the
// like: nothing with a path (the caller's files, the cgroup, the record directory, the
// mount plan's trees of /usr, /etc, /dev and the workspace). And it runs filtered.
TEST_F(BrigInit, HoldsNoHostObjectAndRunsUnderAFilterOfItsOwn) {
  ScratchDir dir, ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string marker = "sleep " + std::to_string(50000 + getpid() % 10000);
  pid_t brig = SpawnBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(), "--",
                          "/bin/sh", "-c", "exec " + marker},
                         dir.path());
  ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }))
      << ReadFileOrEmpty(dir.path() + "/stderr");
  pid_t init = InitOf(brig);
  ASSERT_NE(init, 0);
  std::string status = ReadFileOrEmpty("/proc/" + std::to_string(init) + "/status");
  EXPECT_TRUE(Contains(status, "\nSeccomp:\t2\n")) << "init runs unfiltered:\n" << status;
  std::string fds = FdsOf(init);
  std::istringstream lines(fds);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    std::string target = line.substr(line.find(" -> ") + 4);
    EXPECT_TRUE(target.rfind("pipe:[", 0) == 0 || target.rfind("socket:[", 0) == 0 ||
                target.rfind("anon_inode:", 0) == 0)
        << "init holds " << line;
  }
  EXPECT_GT(count, 0) << fds;
  kill(brig, SIGTERM);
  EXPECT_EQ(WaitExit(brig), 128 + SIGTERM) << ReadFileOrEmpty(dir.path() + "/stderr");
}

// brig init is brig's binary for as long as the sandbox runs, as the same user as the
// workload: it must never be dumpable, or the workload could trace it or open brig through
// /proc/1/exe (runc CVE-2019-5736). The kernel shows it by the owner of the files in
// /proc/PID (not of the directory, always the euid's): the root of the user namespace its
// memory was made in (the host's, 0) while not dumpable, its uid when dumpable, as the
// workload's own process is. Whatever fs.suid_dumpable says
// (SuidDumpableSettings), as for an OCI container's process
// (OciDoors.ACreatedContainersProcessIsNotDumpableUntilItsCommandRuns).
TEST_F(BrigInit, IsNeverDumpableAsTheWorkloadsUser) {
  for (const std::string& setting : SuidDumpableSettings()) {
    SCOPED_TRACE("fs.suid_dumpable " + (setting.empty() ? "as the kernel has it" : setting));
    ScopedSuidDumpable knob(setting);
    ASSERT_TRUE(knob.ok());
    ScratchDir dir;
    std::string marker = "sleep " + std::to_string(40000 + getpid() % 10000);
    pid_t brig = SpawnBrig({"run", "--", "/bin/sh", "-c", "exec " + marker}, dir.path());
    ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }))
        << ReadFileOrEmpty(dir.path() + "/stderr");
    pid_t init = InitOf(brig);
    ASSERT_NE(init, 0);
    pid_t workload = FindProcesses(marker).front();
    auto owner = [](pid_t pid) {
      struct stat st;
      return stat(("/proc/" + std::to_string(pid) + "/status").c_str(), &st) == 0 ? st.st_uid : 0u;
    };
    std::string uids = ReadFileOrEmpty("/proc/" + std::to_string(init) + "/status");
    uid_t sandbox_uid = owner(workload);
    EXPECT_NE(sandbox_uid, 0u) << "the workload's /proc is its own user's";
    EXPECT_TRUE(Contains(uids, "\nUid:\t" + std::to_string(sandbox_uid) + "\t"))
        << "init is not the workload's user:\n"
        << uids;
    EXPECT_EQ(owner(init), 0u) << "brig init is dumpable";
    kill(brig, SIGTERM);
    EXPECT_EQ(WaitExit(brig), 128 + SIGTERM) << ReadFileOrEmpty(dir.path() + "/stderr");
  }
}

// An init that dies of a signal (here one the host sends; its own filter's SIGSYS in the
// case that matters) is reported by that signal, not as an init that said nothing.
TEST_F(BrigInit, AnInitKilledByASignalIsReportedByIt) {
  ScratchDir dir;
  std::string marker = "sleep " + std::to_string(60000 + getpid() % 10000);
  std::string result = dir.path() + "/result.json";
  pid_t brig = SpawnBrig({"run", "--result", result, "--", "/bin/sh", "-c", "exec " + marker},
                         dir.path());
  ASSERT_TRUE(Eventually([&] { return !FindProcesses(marker).empty(); }))
      << ReadFileOrEmpty(dir.path() + "/stderr");
  pid_t init = InitOf(brig);
  ASSERT_NE(init, 0);
  ASSERT_EQ(kill(init, SIGKILL), 0);
  EXPECT_EQ(WaitExit(brig), 125);
  std::string err = ReadFileOrEmpty(dir.path() + "/stderr");
  EXPECT_TRUE(Contains(err, "brig init was killed by signal 9 (Killed)")) << err;
  EXPECT_TRUE(Contains(ReadFileOrEmpty(result), "killed by signal 9")) << ReadFileOrEmpty(result);
}

// setgroups is denied in the sandbox's user namespace, and the caller's supplementary
// groups (host root's gid 0 among them) do not follow into it: the workload's groups are
// the sandbox user's own, as before.
TEST_F(BrigInit, SetgroupsIsDeniedAndTheCallersGroupsStayOutside) {
  std::vector<std::string> cmd = {"setpriv", "--groups", "0,4,27", BrigBinary(), "run", "--",
                                  "/bin/sh", "-c",
                                  "cat /proc/self/setgroups; grep ^Groups: /proc/self/status; "
                                  "id -u; id -G"};
  auto r = RunCommand(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "deny\nGroups:\t \n1000\n1000\n");
}

// A process inside the sandbox that signals pid 1 is not the operator: init relays it to
// nobody, whether it used kill(2) or forged a sender of pid 0 with rt_sigqueueinfo(2).
// A signal from the host (sender in an ancestor pid namespace, which the kernel reports
// as pid 0 with SI_USER) is relayed. Init handles its signals in order and the lower
// numbers first, so by the time it relays the host's SIGUSR2 it has judged the others.
TEST_F(BrigInit, OnlySignalsFromOutsideAreRelayedToTheWorkload) {
  ScratchDir dir;
  std::string script =
      "trap 'echo RELAYED-HUP' HUP; trap 'echo RELAYED-USR1' USR1; "
      "trap 'echo host-usr2; exit 0' USR2; "
      "kill -USR1 1; /workspace/brig-probe sigqueue 1 1; echo sent; "
      "while :; do sleep 0.1; done";
  pid_t brig = SpawnBrig({"run", "--workspace", ProbeDir(), "--", "/bin/sh", "-c", script},
                         dir.path());
  ASSERT_TRUE(Eventually([&] { return Contains(ReadFileOrEmpty(dir.path() + "/stdout"), "sent"); }))
      << ReadFileOrEmpty(dir.path() + "/stdout") << ReadFileOrEmpty(dir.path() + "/stderr");
  pid_t init = InitOf(brig);
  ASSERT_NE(init, 0);
  ASSERT_EQ(kill(init, SIGUSR2), 0);
  EXPECT_EQ(WaitExit(brig), 0) << ReadFileOrEmpty(dir.path() + "/stderr");
  EXPECT_EQ(ReadFileOrEmpty(dir.path() + "/stdout"), "allowed\nsent\nhost-usr2\n");
}

// Under a race on the workspace (.git, above the protected .git/hooks and .git/config,
// flips between a directory and a symlink), some starts are refused by brig before the
// clone and some by init, which resolves the paths again; the parent meanwhile sends init
// its next message. Every refusal names its cause, none the broken pipe that init's exit
// left (8 of 40 did, issue 14).
TEST_F(BrigInit, ARaceOnAProtectedPathIsReportedByItsCauseNotTheBrokenPipe) {
  ScratchDir ws;
  ASSERT_EQ(RunCommand({"mkdir", "-p", ws.path() + "/.git/hooks"}).exit_code, 0);
  ws.Write(".git/config", "");
  ASSERT_EQ(symlink("/etc", (ws.path() + "/.git-swap").c_str()), 0);
  RunCommand({"chown", "-hR", "1234:1234", ws.path()});
  std::atomic<bool> stop{false};
  std::string a = ws.path() + "/.git", b = ws.path() + "/.git-swap";
  std::thread flipper([&] {
    while (!stop) (void)renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
  });
  std::string protected_profile =
      SourceRoot() + "/tests/host/profiles/workspace-rw-protected.textproto";
  int by_init = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = Sh("true", {"--profile", protected_profile, "--workspace", ws.path()});
    if (r.exit_code == 0) continue;
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_TRUE(Contains(r.err, ".git")) << r.err;
    EXPECT_FALSE(Contains(r.err, "Broken pipe") || Contains(r.err, "sync")) << r.err;
    if (Contains(r.err, "container init")) ++by_init;
  }
  stop = true;
  flipper.join();
  RecordProperty("refused_by_init", by_init);
}

// A protected leaf (a file, a directory) that a host process turns into a symlink between
// brig's check and init's mount is never held as a symlink: every start holds the real
// file or directory, or is refused naming the path, as brig's own check refuses it. The
// flipper swaps each leaf with a symlink until the workload says it runs, then stops, so
// the workload can see which of the two names its protect mount holds (a mount point
// follows its dentry when the host renames it) and what that is.
TEST_F(BrigInit, AProtectedLeafRacedIntoASymlinkIsNeverHeld) {
  ScratchDir ws;
  ASSERT_EQ(RunCommand({"mkdir", "-p", ws.path() + "/.git", ws.path() + "/.husky"}).exit_code, 0);
  ws.Write(".git/config", "");
  ASSERT_EQ(symlink("/etc/hostname", (ws.path() + "/.git/config-swap").c_str()), 0);
  ASSERT_EQ(symlink("/etc", (ws.path() + "/.husky-swap").c_str()), 0);
  RunCommand({"chown", "-hR", "1234:1234", ws.path()});
  const std::pair<std::string, std::string> leaves[] = {
      {ws.path() + "/.git/config", ws.path() + "/.git/config-swap"},
      {ws.path() + "/.husky", ws.path() + "/.husky-swap"}};
  const std::string started = ws.path() + "/started", stopped = ws.path() + "/stopped";
  const std::string script =
      "touch /workspace/started; while [ ! -e /workspace/stopped ]; do :; done; "
      "awk '$5 ~ \"^/workspace/([.]git/config|[.]husky)\" {print $5}' /proc/self/mountinfo | "
      "while read m; do echo \"$m: $(stat -c %F \"$m\")\"; done";
  std::string profile = SourceRoot() + "/tests/host/profiles/workspace-rw-protected.textproto";
  int held = 0, by_init = 0;
  for (int i = 0; i < 40; ++i) {
    unlink(started.c_str());
    unlink(stopped.c_str());
    std::atomic<bool> done{false};
    std::thread flipper([&] {
      while (!done && access(started.c_str(), F_OK) != 0) {
        for (const auto& [a, b] : leaves) {
          (void)renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
        }
      }
      ws.Write("stopped", "");
    });
    auto r = Sh(script, {"--profile", profile, "--workspace", ws.path()});
    done = true;
    flipper.join();
    if (r.exit_code == 0) {
      ++held;
      EXPECT_FALSE(Contains(r.out, "symbolic link")) << "a symlink held as protected: " << r.out;
      EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
      continue;
    }
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_TRUE(Contains(r.err, "a symlink at a protected path of a read-write workspace"))
        << r.err;
    EXPECT_TRUE(Contains(r.err, ".git/config") || Contains(r.err, ".husky")) << r.err;
    EXPECT_FALSE(Contains(r.err, "Broken pipe") || Contains(r.err, "sync")) << r.err;
    if (Contains(r.err, "container init")) ++by_init;
  }
  RecordProperty("held", held);
  RecordProperty("refused_by_init", by_init);
}

// The parent's half of a lost init, deterministically: the child fails at the step right
// before the parent's next send, says why, and exits; the parent's send then meets a
// broken pipe, and what it reports is the child's error. A child that dies without a word
// is reported by how it ended.
TEST_F(BrigInit, ALostInitIsReportedByItsOwnErrorNotTheBrokenPipe) {
  for (bool says_why : {true, false}) {
    int sp[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
    sys::UniqueFd parent(sp[0]), child(sp[1]);
    int pidfd = -1;
    sys::CloneArgs ca;
    ca.flags = CLONE_PIDFD;
    ca.pidfd = &pidfd;
    ca.exit_signal = SIGCHLD;
    auto cloned = sys::Clone3(ca);
    ASSERT_TRUE(cloned);
    if (*cloned == 0) {
      if (says_why) {
        Error e = Fail("protected path", "/workspace/.husky",
                       "a symlink at a protected path of a read-write workspace");
        (void)container::SendError(child.get(), std::move(e).Wrap("container init"));
        _exit(125);
      }
      raise(SIGKILL);
    }
    sys::UniqueFd pfd(pidfd);
    child.Reset();
    siginfo_t si = {};
    ASSERT_EQ(syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | WNOWAIT, nullptr), 0);
    auto sent = container::SendMessage(parent.get(), container::Msg::kStart);
    ASSERT_FALSE(sent) << "the send should meet the dead child's closed end";
    std::optional<Error> why = container::WhyInitIsGone(parent.get(), pidfd, sent.error());
    ASSERT_TRUE(why.has_value()) << sent.error().Render();
    std::string line = why->Render();
    EXPECT_FALSE(Contains(line, "Broken pipe") || Contains(line, "sync")) << line;
    if (says_why) {
      EXPECT_EQ(line, "container init: protected path '/workspace/.husky': a symlink at a "
                      "protected path of a read-write workspace");
    } else {
      EXPECT_EQ(line, "brig init: killed by signal 9 (Killed) before it said why");
    }
    ASSERT_EQ(syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, nullptr), 0);
  }
}

}  // namespace
}  // namespace brig::testing
