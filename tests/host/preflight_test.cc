// brig check as an operator's preflight, and the one line a caller without root gets from
// every verb that needs root, as an operator would hit them.
#include <fcntl.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <sstream>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Preflight : public HostTest {};

const char* const kFeatures[] = {"user namespaces", "namespaces",       "seccomp filters",
                                 "mount API",       "overlayfs",        "id-mapped mounts",
                                 "nftables",        "bridge and veth"};
const char* const kProfiles[] = {"none", "trusted-code-write", "untrusted-code-read",
                                 "untrusted-code-write"};

// The line of `out` that starts with `prefix` followed by spaces, or "".
std::string LineOf(const std::string& out, const std::string& prefix) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix + " ", 0) == 0) return line;
  }
  return "";
}

// The word at `column` of `line` ("ok", "missing"), or "" if the line is shorter.
std::string Status(const std::string& line, size_t column) {
  if (line.size() <= column) return "";
  size_t end = line.find(' ', column);
  return line.substr(column, end == std::string::npos ? std::string::npos : end - column);
}

std::string HostLinks() { return RunCommand({"ip", "-o", "link", "show"}).out; }

TEST_F(Preflight, CheckProbesEveryFeatureAndNamesTheProfilesThatRunHere) {
  auto r = RunBrig({"check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* f : kFeatures) {
    std::string status = Status(LineOf(r.out, f), 20);
    // No shipped profile needs an id-mapped mount, and whether /tmp's file system takes
    // one depends on it (the vm tier's is an overlay over 9p): named either way.
    if (std::string(f) == "id-mapped mounts" && status == "missing") continue;
    EXPECT_EQ(status, "ok") << "feature '" << f << "' in\n" << r.out;
  }
  for (const char* p : kProfiles) {
    std::string line = LineOf(r.out, std::string("profile ") + p);
    EXPECT_NE(line.find("can run here"), std::string::npos) << p << " in\n" << r.out;
  }
  // The probes' bridge, veth and tables were in namespaces of their own.
  EXPECT_EQ(HostLinks().find("bvprobe"), std::string::npos);
  // What a run with an interface waits for at its end: a figure, whether its elements are
  // expired or deleted, and, if deleted, which grace periods this host has.
  std::string wait = LineOf(r.out, "exit wait");
  EXPECT_TRUE(std::regex_search(wait, std::regex("^exit wait +[0-9]+\\.[0-9] ms +what removing "
                                                 "its nftables elements adds to a run with an "
                                                 "interface: ")))
      << r.out;
  if (KernelUpdatesElementExpiry()) {
    EXPECT_NE(wait.find("they are expired, not deleted, and no RCU grace period is waited for"),
              std::string::npos)
        << wait;
  } else {
    EXPECT_NE(wait.find("this kernel cannot expire them early"), std::string::npos) << wait;
    bool expedited = ReadFileOrEmpty("/sys/kernel/rcu_expedited").rfind("1", 0) == 0;
    EXPECT_EQ(wait.find("expedited, as /sys/kernel/rcu_expedited is 1") != std::string::npos,
              expedited)
        << wait;
  }
}

// A host whose seccomp (a container runtime's default profile, or a kernel before 5.2)
// refuses the new mount API: the sandboxed profiles cannot run, and check says so and
// fails; the unsandboxed one still can.
TEST_F(Preflight, WithoutTheMountApiOnlyNoneCanRunAndCheckFails) {
  ScratchDir dir;
  std::string out = dir.path() + "/out", err = dir.path() + "/err";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(98);
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(fsopen), 0) < 0 ||
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0) {
      _exit(97);
    }
    std::string brig = BrigBinary();
    execl(brig.c_str(), brig.c_str(), "check", nullptr);
    _exit(99);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  std::string o = ReadFileOrEmpty(out), e = ReadFileOrEmpty(err);
  EXPECT_EQ(WEXITSTATUS(st), 1) << o << e;
  EXPECT_EQ(Status(LineOf(o, "mount API"), 20), "missing") << o;
  EXPECT_EQ(Status(LineOf(o, "overlayfs"), 20), "missing") << o;
  EXPECT_EQ(Status(LineOf(o, "nftables"), 20), "ok") << o;
  EXPECT_NE(LineOf(o, "profile none").find("can run here"), std::string::npos) << o;
  EXPECT_NE(LineOf(o, "profile untrusted-code-read").find("cannot run here: mount API"),
            std::string::npos)
      << o;
  EXPECT_NE(LineOf(o, "profile untrusted-code-write").find("mount API, overlayfs"),
            std::string::npos)
      << o;
  EXPECT_EQ(e, "brig: the default profile untrusted-code-read cannot run here (see above)\n");
}

// Every verb that acts as root says so in one line, exit 125, and creates nothing: not
// its log, result or audit file, not a record under /run/brig (the fixture's residue
// check). brig policy reads files only and works for anyone; brig run and brig list work
// for anyone with a runtime directory of their own.
TEST_F(Preflight, WithoutRootEveryRootVerbSaysSoInOneLine) {
  ScratchDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  std::string log = dir.path() + "/log", result = dir.path() + "/result";
  std::string audit = dir.path() + "/audit";
  auto nobody = [](std::vector<std::string> args, bool no_runtime_dir = false) {
    std::vector<std::string> cmd = {"setpriv", "--reuid", "65534",
                                    "--regid", "65534",   "--clear-groups"};
    if (no_runtime_dir) cmd.insert(cmd.end(), {"env", "-u", "XDG_RUNTIME_DIR"});
    cmd.push_back(BrigBinary());
    cmd.insert(cmd.end(), args.begin(), args.end());
    return RunCommand(cmd);
  };
  const std::pair<std::string, std::vector<std::string>> verbs[] = {
      {"gc", {"--log", log, "gc"}},
  };
  for (const auto& [verb, args] : verbs) {
    auto r = nobody(args);
    EXPECT_EQ(r.exit_code, 125) << verb << ": " << r.err;
    EXPECT_EQ(r.out, "") << verb;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << verb << ": " << r.err;
    EXPECT_EQ(r.err.rfind("brig " + verb + ": brig needs root (", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("run it with sudo)\n"), std::string::npos) << r.err;
  }
  // brig run and brig list work without root (rootless_test.cc), but not without a runtime
  // directory of the user's, which they name before they create anything either.
  auto run =
      nobody({"--log", log, "run", "--result", result, "--audit-log", audit, "--", "true"}, true);
  EXPECT_EQ(run.exit_code, 125) << run.err;
  EXPECT_EQ(run.err.rfind("brig run: XDG_RUNTIME_DIR: not set; ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  auto list = nobody({"--log", log, "list"}, true);
  EXPECT_EQ(list.exit_code, 125) << list.err;
  EXPECT_EQ(list.err.rfind("brig list: XDG_RUNTIME_DIR: not set; ", 0), 0u) << list.err;
  for (const std::string& f : {log, result, audit}) {
    EXPECT_NE(access(f.c_str(), F_OK), 0) << f << " was created";
  }
  auto help = nobody({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  auto policy = nobody({"policy", "list"});
  EXPECT_EQ(policy.exit_code, 0) << policy.err;
  EXPECT_NE(policy.out.find("profile untrusted-code-read"), std::string::npos) << policy.out;
  auto diff = nobody({"policy", "diff", "untrusted-code-read", "untrusted-code-write"});
  EXPECT_EQ(diff.exit_code, 1) << diff.err;
  EXPECT_NE(diff.out.find("- filesystem.workspace: WORKSPACE_RO (A)  vs  WORKSPACE_COPY (B)"),
            std::string::npos)
      << diff.out;
}

}  // namespace
}  // namespace brig::testing
