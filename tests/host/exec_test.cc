// `brig exec NAME|ID -- CMD` into a running `brig run` sandbox (brig-exec(1)): the process
// joins the sandbox and never gets more than its workload has; each test tries to get more.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "host/host_fixture.h"
#include "proto/brig.pb.h"

namespace brig::testing {
namespace {

class Exec : public HostTest {
 protected:
  // A sandbox named `name` whose workload writes its own view (namespaces and status) to
  // /tmp/workload, says "started", and waits until the test creates `go` in its workspace,
  // which holds brig-probe.
  pid_t Start(const std::string& name, const std::string& extra_audit = "") {
    RunCommand({"cp", ProbeBinary(), ws_.path() + "/brig-probe"});
    std::vector<std::string> args = {"run", "--name", name, "--workspace", ws_.path()};
    if (!extra_audit.empty()) args.insert(args.end(), {"--audit-log", extra_audit});
    args.insert(args.end(),
                {"--", "sh", "-c",
                 "readlink /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt "
                 "/proc/self/ns/user /proc/self/ns/ipc /proc/self/ns/uts > /tmp/workload; "
                 "grep -E '^(Cap|NoNewPrivs|Seccomp|Groups)' /proc/self/status >> /tmp/workload; "
                 "echo started; while [ ! -e /workspace/go ]; do sleep 0.05; done"});
    pid_t brig = SpawnBrig(args, out_.path());
    EXPECT_TRUE(Eventually([&] {
      return ReadFileOrEmpty(out_.path() + "/stdout").find("started") != std::string::npos;
    })) << ReadFileOrEmpty(out_.path() + "/stderr");
    return brig;
  }
  void Stop(pid_t brig) {
    ws_.Write("go", "");
    EXPECT_EQ(WaitExit(brig), 0);
  }
  std::string Name(const std::string& what) { return what + "-" + std::to_string(getpid()); }
  // The record of the sandbox named `name`, as brig wrote it.
  static std::string RecordOf(const std::string& name) {
    for (const std::string& path : PathsIn("/run/brig/sandboxes")) {
      std::string text = ReadFileOrEmpty(path);
      if (text.find("about name=" + name + "\n") != std::string::npos) return text;
    }
    return "";
  }
  // brig init's host pid, from its record.
  static std::string InitPid(const std::string& name) {
    std::string record = RecordOf(name);
    size_t at = record.find("about pid=");
    if (at == std::string::npos) return "";
    at += strlen("about pid=");
    return record.substr(at, record.find('\n', at) - at);
  }

  ScratchDir ws_, out_;
};

// Its namespaces are the workload's, every one; its credentials, supplementary groups,
// capability sets, no_new_privs and seccomp mode are the workload's; it runs as the sandbox
// user in the workload's directory. brig exec is run with a supplementary group of host
// root's (gid 0), which must not come in.
TEST_F(Exec, TheProcessJoinsTheSandboxAndHoldsWhatItsWorkloadHolds) {
  std::string name = Name("exec-join");
  pid_t brig = Start(name);
  std::vector<gid_t> had(static_cast<size_t>(getgroups(0, nullptr)));
  ASSERT_EQ(getgroups(static_cast<int>(had.size()), had.data()), static_cast<int>(had.size()));
  const gid_t root_group = 0;
  ASSERT_EQ(setgroups(1, &root_group), 0) << strerror(errno);
  RunOutput r = RunBrig(
      {"exec", name, "--", "sh", "-c",
       "cat /tmp/workload; echo ---; readlink /proc/self/ns/pid /proc/self/ns/net "
       "/proc/self/ns/mnt /proc/self/ns/user /proc/self/ns/ipc /proc/self/ns/uts; "
       "grep -E '^(Cap|NoNewPrivs|Seccomp|Groups)' /proc/self/status; id -u; id -g; pwd; "
       "hostname"});
  ASSERT_EQ(setgroups(had.size(), had.data()), 0) << strerror(errno);
  Stop(brig);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t split = r.out.find("---\n");
  ASSERT_NE(split, std::string::npos) << r.out;
  std::string workload = r.out.substr(0, split), own = r.out.substr(split + 4);
  EXPECT_EQ(own.substr(0, workload.size()), workload) << r.out;
  EXPECT_NE(workload.find("CapEff:\t0000000000000000"), std::string::npos) << workload;
  EXPECT_NE(workload.find("Seccomp:\t2"), std::string::npos) << workload;
  EXPECT_NE(workload.find("Groups:\t \n"), std::string::npos) << workload;
  EXPECT_EQ(own.substr(workload.size()), "1000\n1000\n/workspace\nsandbox\n") << r.out;
}

// A syscall the workload's policy denies is denied to it: add_key, which the sandbox user
// may call without a filter.
TEST_F(Exec, ASyscallTheProfileDeniesIsDenied) {
  std::string name = Name("exec-seccomp");
  pid_t brig = Start(name);
  RunOutput r = RunBrig({"exec", name, "--", "/workspace/brig-probe", "keyctl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("denied EPERM", 0), 0u) << r.out;
  Stop(brig);
}

// Nothing of brig's environment enters but what --env names.
TEST_F(Exec, TheEnvironmentIsBuiltFromNothing) {
  std::string name = Name("exec-env");
  pid_t brig = Start(name);
  setenv("BRIG_EXEC_TEST_SECRET", "s3cret", 1);
  setenv("BRIG_EXEC_TEST_PASSED", "given", 1);
  RunOutput r =
      RunBrig({"exec", "--env", "BRIG_EXEC_TEST_PASSED", "--env", "SET=1", name, "--", "env"});
  unsetenv("BRIG_EXEC_TEST_SECRET");
  unsetenv("BRIG_EXEC_TEST_PASSED");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(r.out.substr(at, nl - at));
  }
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines,
            (std::vector<std::string>{
                "BRIG_EXEC_TEST_PASSED=given", "HOME=/tmp", "LANG=C.UTF-8",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SET=1"}))
      << r.out;
  Stop(brig);
}

// Seen from the host while it runs, the process holds its stdio (brig's pipes, never the
// caller's files) and nothing else, and its cwd and root are the sandbox's.
TEST_F(Exec, TheProcessHoldsNoHostDescriptor) {
  std::string name = Name("exec-fds");
  pid_t brig = Start(name);
  ScratchDir exec_out;
  pid_t exec =
      SpawnBrig({"exec", name, "--", "sh", "-c", "echo up; exec sleep 30"}, exec_out.path());
  ASSERT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(exec_out.path() + "/stdout").find("up") != std::string::npos;
  })) << ReadFileOrEmpty(exec_out.path() + "/stderr");
  // Once its comm is sleep's and its loader is done: execve shows the new command line
  // before it closes the descriptors marked close-on-exec, and sets the comm after; then
  // ld.so opens the sandbox's own libc (close-on-exec) for a moment. Under TCG, the vm
  // tier saw both windows.
  std::vector<pid_t> sleeps;
  ASSERT_TRUE(Eventually([&] {
    return (sleeps = FindProcesses("sleep 30")).size() == 1 &&
           ReadFileOrEmpty("/proc/" + std::to_string(sleeps[0]) + "/comm") == "sleep\n";
  }));
  std::string proc = "/proc/" + std::to_string(sleeps[0]);
  const std::vector<std::string> stdio = {proc + "/fd/0", proc + "/fd/1", proc + "/fd/2"};
  std::vector<std::string> fds;
  auto held = [&] {
    std::string out;
    for (const std::string& fd : fds) {
      char link[256] = {};
      (void)!readlink(fd.c_str(), link, sizeof link - 1);
      out += fd + " -> " + link + "\n";
    }
    return out;
  };
  EXPECT_TRUE(Eventually([&] {
    fds = PathsIn(proc + "/fd");
    std::sort(fds.begin(), fds.end());
    return fds == stdio;
  })) << held();
  for (const char* fd : {"1", "2"}) {
    char link[256] = {};
    ASSERT_GT(readlink((proc + "/fd/" + fd).c_str(), link, sizeof link - 1), 0);
    EXPECT_EQ(std::string(link).rfind("pipe:", 0), 0u) << fd << ": " << link;
  }
  // Its root is brig init's, and its cwd the workspace inside it.
  std::string init = "/proc/" + InitPid(name);
  struct stat root, init_root, cwd, workspace;
  ASSERT_EQ(stat((proc + "/root/").c_str(), &root), 0);
  ASSERT_EQ(stat((init + "/root/").c_str(), &init_root), 0);
  EXPECT_EQ(root.st_dev, init_root.st_dev);
  EXPECT_EQ(root.st_ino, init_root.st_ino);
  ASSERT_EQ(stat((proc + "/cwd/").c_str(), &cwd), 0);
  ASSERT_EQ(stat((init + "/root/workspace/").c_str(), &workspace), 0);
  EXPECT_EQ(cwd.st_ino, workspace.st_ino);
  EXPECT_EQ(cwd.st_dev, workspace.st_dev);
  kill(exec, SIGTERM);
  EXPECT_EQ(WaitExit(exec), 128 + SIGTERM);
  Stop(brig);
}

// The command's own status, 126 and 127 as brig run gives them; brig's refusals are one
// line and 125: an unknown name, a name two sandboxes share (both ids named).
TEST_F(Exec, TheExitStatusIsTheCommandsAndRefusalsAre125) {
  std::string name = Name("exec-status");
  pid_t brig = Start(name);
  EXPECT_EQ(RunBrig({"exec", name, "--", "sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(RunBrig({"exec", name, "--", "/no/such/command"}).exit_code, 127);
  EXPECT_EQ(RunBrig({"exec", name, "--", "/etc/passwd"}).exit_code, 126);
  RunOutput none = RunBrig({"exec", "--env", "X=1", name + "-none", "--", "true"});
  EXPECT_EQ(none.exit_code, 125);
  ScratchDir other_out;
  pid_t twin = SpawnBrig({"run", "--name", name, "--", "sh", "-c", "echo started; sleep 30"},
                         other_out.path());
  ASSERT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(other_out.path() + "/stdout").find("started") != std::string::npos;
  }));
  RunOutput twice = RunBrig({"exec", name, "--", "true"});
  EXPECT_EQ(twice.exit_code, 125);
  EXPECT_NE(twice.err.find("names 2 running sandboxes"), std::string::npos) << twice.err;
  EXPECT_EQ(std::count(twice.err.begin(), twice.err.end(), '\n'), 1) << twice.err;
  kill(twin, SIGTERM);
  WaitExit(twin);
  Stop(brig);
}

// brig exec is its command's handle: killed, it takes the command along, which would
// otherwise go on in the sandbox, its end never recorded, until the phase ends.
TEST_F(Exec, TheCommandEndsWhenItsBrigExecIsKilled) {
  std::string name = Name("exec-killed");
  std::string log = out_.path() + "/audit.log";
  pid_t brig = Start(name, log);
  ScratchDir exec_out;
  pid_t exec =
      SpawnBrig({"exec", name, "--", "sh", "-c", "echo running; exec sleep 1000"}, exec_out.path());
  ASSERT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(exec_out.path() + "/stdout").find("running") != std::string::npos;
  })) << ReadFileOrEmpty(exec_out.path() + "/stderr");
  pid_t command = 0;
  for (const v1::AuditEvent& e : ReadAuditEvents(log)) {
    if (e.has_exec_start()) command = static_cast<pid_t>(e.exec_start().pid());
  }
  ASSERT_GT(command, 0);
  ASSERT_TRUE(Eventually(
      [&] { return ReadFileOrEmpty("/proc/" + std::to_string(command) + "/comm") == "sleep\n"; }));
  kill(exec, SIGKILL);
  WaitExit(exec);
  // Gone, or a zombie: the test, a subreaper, is its parent once brig exec is gone.
  auto ended = [&] {
    std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(command) + "/stat");
    size_t paren = stat.rfind(')');
    return paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0;
  };
  EXPECT_TRUE(Eventually(ended)) << "the command outlived its brig exec";
  // Reaped here, killed first if it outlived brig exec: a process of the sandbox that only
  // the test can reap would keep brig init, and so Stop, waiting.
  (void)kill(command, SIGKILL);
  (void)waitpid(command, nullptr, 0);
  Stop(brig);
}

// A record whose pid is now another process's (its start time is not the record's) is
// never joined: a live record, its lock held, naming a process of the test's.
TEST_F(Exec, ARecycledPidIsNeverJoined) {
  std::string name = Name("exec-recycled");
  pid_t brig = Start(name);
  std::string record = RecordOf(name);
  EXPECT_FALSE(record.empty());
  // The same record under another id and name, naming a process of the test's instead.
  pid_t other = SpawnQuiet({"sleep", "30"}, "/dev/null");
  std::string forged;
  for (size_t at = 0, nl; (nl = record.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = record.substr(at, nl - at);
    if (line.rfind("about pid=", 0) == 0) line = "about pid=" + std::to_string(other);
    if (line.rfind("about name=", 0) == 0) line = "about name=" + name + "-forged";
    if (line.rfind("cgroup ", 0) == 0) continue;
    forged += line + "\n";
  }
  std::string path = "/run/brig/sandboxes/brig-" + name + "-forged";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, forged.data(), forged.size()), static_cast<ssize_t>(forged.size()));
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  RunOutput r = RunBrig({"exec", name + "-forged", "--", "true"});
  unlink(path.c_str());
  close(fd);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("is not running"), std::string::npos) << r.err;
  kill(other, SIGKILL);
  WaitExit(other);
  Stop(brig);
}

// The audit log has the exec's start, with its command, pid and caller, before the
// command's own output could be, and its exit with the command's status.
TEST_F(Exec, TheSandboxsAuditLogRecordsTheExec) {
  std::string name = Name("exec-audit");
  std::string log = out_.path() + "/audit.log";
  pid_t brig = Start(name, log);
  EXPECT_EQ(RunBrig({"exec", name, "--", "sh", "-c", "exit 3"}).exit_code, 3);
  Stop(brig);
  std::vector<v1::AuditEvent> events = ReadAuditEvents(log);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_TRUE(events[0].has_sandbox_start());
  ASSERT_TRUE(events[1].has_exec_start());
  EXPECT_EQ(events[1].exec_start().argv_size(), 3);
  EXPECT_EQ(events[1].exec_start().caller_uid(), getuid());
  EXPECT_GT(events[1].exec_start().pid(), 0);
  EXPECT_EQ(events[1].name(), name);
  ASSERT_TRUE(events[2].has_exec_exit());
  EXPECT_EQ(events[2].exec_exit().exit_code(), 3);
  EXPECT_EQ(events[2].exec_exit().pid(), events[1].exec_start().pid());
  EXPECT_TRUE(events[3].has_sandbox_exit());
}

}  // namespace
}  // namespace brig::testing
