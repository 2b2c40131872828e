// container/process.h: the two steps by which every front end's child takes its process on,
// tried in forked children. What each step did is read back from the child itself.
#include "container/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "testlib/testlib.h"

namespace brig::container {
namespace {

// What `body` writes on the pipe it is given, run in a forked child, and the child's exit
// code.
struct ChildSaid {
  std::string out;
  int code = -1;
};
ChildSaid InChild(const std::function<void(int)>& body) {
  int p[2];
  if (pipe(p) < 0) return {"pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    body(p[1]);
    _exit(0);
  }
  close(p[1]);
  ChildSaid said;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;)
    said.out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  said.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return said;
}

void Say(int fd, const std::string& s) { (void)!write(fd, s.data(), s.size()); }

// The line of /proc/self/status that starts with `key` ("Seccomp:", "NoNewPrivs:").
std::string StatusLine(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) return line;
  }
  return "";
}

security::SeccompProgram AllowEverything() {
  auto policy = security::ParseSeccompPolicy("default_action: SCMP_ACT_ALLOW\n", "allow");
  EXPECT_TRUE(policy);
  auto program = security::CompileSeccomp(*policy);
  EXPECT_TRUE(program) << program.error().Render();
  return *program;
}

class Process : public ::testing::Test {
 protected:
  testing::ScratchDir dir_;
};

// brig run's workload: its parent's ids, its own rlimits, and the cwd entered in the root.
TEST_F(Process, WithoutCredentialsItTakesItsRlimitsAndCwdAndKeepsItsIds) {
  ProcessSpec p;
  p.cwd = dir_.path();
  p.rlimits = {{RLIMIT_NOFILE, 77, 77, "RLIMIT_NOFILE"}};
  uid_t uid = getuid();
  ChildSaid said = InChild([&](int out) {
    if (auto s = TakeOn(p); !s) return Say(out, "error: " + s.error().Render());
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    char cwd[4096];
    Say(out, std::to_string(rl.rlim_cur) + "/" + std::to_string(rl.rlim_max) + " " +
                 std::to_string(getuid()) + " " + (getcwd(cwd, sizeof cwd) ? cwd : "?"));
  });
  EXPECT_EQ(said.out, "77/77 " + std::to_string(uid) + " " + dir_.path());
}

// process.oomScoreAdj: written first, while the privileges to lower it are still held (a
// raise, as here, needs none).
TEST_F(Process, TheOomScoreIsTheOneAsked) {
  ProcessSpec p;
  p.oom_score_adj = 789;
  ChildSaid said = InChild([&](int out) {
    if (auto s = TakeOn(p); !s) return Say(out, "error: " + s.error().Render());
    std::ifstream in("/proc/self/oom_score_adj");
    std::string v;
    in >> v;
    Say(out, v);
  });
  EXPECT_EQ(said.out, "789");
}

TEST_F(Process, ACwdThatIsNotADirectoryIsNamedWithItsPrefix) {
  dir_.Write("file", "x", 0644);
  ProcessSpec p;
  p.cwd = dir_.path() + "/file";
  p.prefix = "process.";
  ChildSaid said = InChild([&](int out) {
    if (auto s = TakeOn(p); !s) Say(out, s.error().Render());
  });
  EXPECT_NE(said.out.find("process.cwd"), std::string::npos) << said.out;
  EXPECT_NE(said.out.find("Not a directory"), std::string::npos) << said.out;
}

// Nothing of its maker's reaches execve but the preserved fds: every other fd above stdio,
// close-on-exec or not, is made close-on-exec; the preserved ones are made inheritable.
TEST_F(Process, OnlyThePreservedFdsOutliveExecve) {
  ProcessSpec p;
  p.preserved_fds = 1;
  ChildSaid said = InChild([&](int out) {
    if (out == 3) return Say(out, "the result pipe is fd 3");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return Say(out, "pipe failed");
    // fd 3 preserved (close-on-exec until TakeOn), the pipe's write end left open without.
    if (fds[0] != 3 && dup3(fds[0], 3, O_CLOEXEC) < 0) return Say(out, "dup");
    int leak = fds[1];
    if (fcntl(leak, F_SETFD, 0) < 0) return Say(out, "fcntl");
    if (auto s = TakeOn(p); !s) return Say(out, "error: " + s.error().Render());
    Say(out, "3:" + std::to_string(fcntl(3, F_GETFD) & FD_CLOEXEC) +
                 " other:" + std::to_string(fcntl(leak, F_GETFD) & FD_CLOEXEC) +
                 " out:" + std::to_string(fcntl(out, F_GETFD) & FD_CLOEXEC));
  });
  EXPECT_EQ(said.out, "3:0 other:1 out:1");
}

// A file without a #! line: brig run's command runs it with /bin/sh, as execvp does; an OCI
// process gets runc's "exec format error" as a command that cannot run (126).
TEST_F(Process, AScriptWithoutAShebangRunsWithShOnlyWhereAsked) {
  dir_.Write("script", "echo ran > \"$1\"\n", 0755);
  std::string script = dir_.path() + "/script", marker = dir_.path() + "/ran";
  ProcessSpec p;
  p.args = {script, marker};
  p.env = {"PATH=/usr/bin:/bin"};
  p.scripts_via_shell = false;
  ChildSaid refused = InChild([&](int out) {
    Error e = Exec(p, script);
    Say(out, std::to_string(e.err) + " " + std::to_string(static_cast<int>(e.kind)));
  });
  EXPECT_EQ(refused.out, std::to_string(ENOEXEC) + " " +
                             std::to_string(static_cast<int>(ErrorKind::kNotExecutable)));
  EXPECT_NE(access(marker.c_str(), F_OK), 0);

  p.scripts_via_shell = true;
  ChildSaid ran = InChild([&](int out) { Say(out, Exec(p, script).Render()); });
  EXPECT_EQ(ran.out, "") << "execve returned";
  EXPECT_EQ(ran.code, 0);
  EXPECT_EQ(access(marker.c_str(), F_OK), 0) << "the script did not run";
}

// The filter loads before the credentials where they leave no_new_privs off: loading it then
// needs CAP_SYS_ADMIN, which they drop. With no_new_privs it loads last, in Exec.
TEST_F(Process, AFilterWithoutNoNewPrivsLoadsBeforeTheCredentialsDropItsRight) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to change ids and drop capabilities";
  ProcessSpec p;
  p.credentials = security::Credentials{};
  p.credentials->uid = 65534;
  p.credentials->gid = 65534;
  p.seccomp = AllowEverything();
  ChildSaid said = InChild([&](int out) {
    if (auto s = TakeOn(p); !s) return Say(out, "error: " + s.error().Render());
    Say(out, StatusLine("Seccomp:") + "|" + StatusLine("NoNewPrivs:"));
  });
  EXPECT_EQ(said.out, "Seccomp:\t2|NoNewPrivs:\t0");

  p.credentials->no_new_privs = true;
  ChildSaid later = InChild([&](int out) {
    if (auto s = TakeOn(p); !s) return Say(out, "error: " + s.error().Render());
    Say(out, StatusLine("Seccomp:") + "|" + StatusLine("NoNewPrivs:"));
  });
  EXPECT_EQ(later.out, "Seccomp:\t0|NoNewPrivs:\t1") << "the filter is Exec's, last";
}

}  // namespace
}  // namespace brig::container
