// brig without root (issue 31): `brig run` as an ordinary user. The tests run brig as a uid
// of their own that no account and no process has (setpriv, no supplementary groups, an
// environment built from nothing), with that uid's own XDG_RUNTIME_DIR and HOME in scratch
// directories; nothing of the host's (/etc/passwd, /etc/subuid) is changed. Each checks
// what the run does, and that nothing of it is left: no record in the user's runtime
// directory, no process of the uid.
#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  int ma = 0, mi = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

class Rootless : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    for (uid_ = 61000 + static_cast<uid_t>(getpid() % 997); getpwuid(uid_) != nullptr; ++uid_) {
    }
    ASSERT_TRUE(ProcessesOf(uid_).empty()) << "uid " << uid_ << " has processes";
    RunOutput userns =
        RunCommand({"setpriv", "--reuid=" + std::to_string(uid_), "--regid=" + std::to_string(uid_),
                    "--clear-groups", "unshare", "--user", "--mount", "true"});
    if (userns.exit_code != 0) {
      GTEST_SKIP() << "an ordinary user cannot make a user namespace here: " << userns.err;
    }
    // A runtime directory is a tmpfs (/run/user/UID): records are made there with O_TMPFILE,
    // which the vm tier's /tmp does not take.
    char run[] = "/run/brig-rootless-test.XXXXXX";
    ASSERT_NE(mkdtemp(run), nullptr);
    runtime_ = run;
    ASSERT_EQ(chown(runtime_.c_str(), uid_, uid_), 0);
    for (const std::string& d : {home_.path() + "/home", home_.path() + "/ws"}) {
      ASSERT_EQ(mkdir(d.c_str(), 0700), 0) << d;
      ASSERT_EQ(chown(d.c_str(), uid_, uid_), 0) << d;
    }
    ASSERT_EQ(chmod(home_.path().c_str(), 0755), 0);
    ws_ = home_.path() + "/ws";
    home_.Write("ws/file", "from the workspace\n");
    ASSERT_EQ(chown((ws_ + "/file").c_str(), uid_, uid_), 0);
  }

  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(ProcessesOf(uid_), "") << "a process of the user outlived its run";
      EXPECT_EQ(Records(), "") << "a record was left in the user's runtime directory";
    }
    if (!runtime_.empty()) RunCommand({"rm", "-rf", "--one-file-system", runtime_});
    HostTest::TearDown();
  }

  // brig run ARGS as the user, with an environment of PATH, HOME and XDG_RUNTIME_DIR
  // (`xdg` false: without it).
  RunOutput RunAs(const std::vector<std::string>& args, bool xdg = true) {
    std::vector<std::string> cmd = wrap_;
    cmd.insert(cmd.end(),
               {"setpriv", "--reuid=" + std::to_string(uid_), "--regid=" + std::to_string(uid_),
                groups_, "env", "-i", "PATH=/usr/bin:/bin", "HOME=" + home_.path() + "/home"});
    if (xdg) cmd.push_back("XDG_RUNTIME_DIR=" + runtime_);
    cmd.push_back(BrigBinary());
    cmd.push_back("run");
    cmd.insert(cmd.end(), args.begin(), args.end());
    return RunCommand(cmd);
  }

  // The default profile with its cgroup limits said not to be wanted.
  RunOutput ShAs(const std::string& script, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--workspace", ws_, "--memory", "none", "--pids", "none"};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunAs(args);
  }

  // The pids of `uid`'s processes, space-separated.
  static std::string ProcessesOf(uid_t uid) {
    std::string pids;
    DIR* d = opendir("/proc");
    if (!d) return "cannot read /proc";
    while (dirent* e = readdir(d)) {
      struct stat st;
      std::string p = std::string("/proc/") + e->d_name;
      if (e->d_name[0] < '1' || e->d_name[0] > '9' || stat(p.c_str(), &st) != 0) continue;
      if (st.st_uid == uid) pids += (pids.empty() ? "" : " ") + std::string(e->d_name);
    }
    closedir(d);
    return pids;
  }

  // What is left in the user's record directory.
  std::string Records() const {
    std::string left;
    if (DIR* d = opendir((runtime_ + "/brig/sandboxes").c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') left += std::string(e->d_name) + " ";
      }
      closedir(d);
    }
    return left;
  }

  // The user gets a name and subordinate ids: brig runs in a mount namespace of the test's
  // where /etc/passwd, /etc/subuid and /etc/subgid are copies with the user's lines, and
  // newuidmap and newgidmap read those; the host's files are never written. With
  // `helpers` false, /usr/bin/newgidmap is hidden there as well.
  void GrantSubordinateIds(bool helpers = true) {
    for (const char* f :
         {"/etc/subuid", "/etc/subgid", "/usr/bin/newuidmap", "/usr/bin/newgidmap"}) {
      if (access(f, F_OK) != 0) GTEST_SKIP() << f << " is missing (package uidmap)";
    }
    const std::string user = "brigrl" + std::to_string(uid_);
    const std::string line = user + ":" + std::to_string(kSubordinate) + ":65536\n";
    home_.Write("passwd", ReadFileOrEmpty("/etc/passwd") + user + ":x:" + std::to_string(uid_) +
                              ":" + std::to_string(uid_) + "::/nonexistent:/bin/sh\n");
    home_.Write("subuid", line);
    home_.Write("subgid", line);
    std::string script =
        "mount --bind \"$1\"/passwd /etc/passwd && mount --bind \"$1\"/subuid /etc/subuid && "
        "mount --bind \"$1\"/subgid /etc/subgid && ";
    if (!helpers) script += "mount --bind /dev/null /usr/bin/newgidmap && ";
    wrap_ = {"unshare",
             "--mount",
             "--propagation",
             "private",
             "sh",
             "-c",
             script + "shift && exec \"$@\"",
             "sh",
             home_.path()};
  }

  static constexpr uint32_t kSubordinate = 3000000000u;
  ScratchDir home_;
  std::vector<std::string> wrap_;
  std::string groups_ = "--clear-groups";
  std::string runtime_, ws_;
  uid_t uid_ = 0;
};

TEST_F(Rootless, TheDefaultProfileHoldsAsForRoot) {
  RunOutput r = ShAs(
      "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status;"
      "touch /x 2>/dev/null && echo root-writable; touch /workspace/y 2>/dev/null && echo "
      "ws-writable; cat /workspace/file; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "1000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n"
            "Seccomp:\t2\nfrom the workspace\nlo\n");
  EXPECT_EQ(access((runtime_ + "/brig/sandboxes").c_str(), F_OK), 0)
      << "the state is not in the user's XDG_RUNTIME_DIR";
}

TEST_F(Rootless, TheSandboxUserIsTheCallersUidOnTheHost) {
  // A file the sandbox makes in a read-write workspace is the caller's on the host.
  RunOutput r = RunAs({"--profile", RwProfile(), "--workspace", ws_, "--", "/bin/sh", "-c",
                       "echo made > /workspace/made"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/made").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid_);
  EXPECT_EQ(st.st_gid, uid_);
}

TEST_F(Rootless, ACgroupLimitIsRefusedNamingTheWayToGoWithout) {
  RunOutput r = RunAs({"--workspace", ws_, "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("limits.memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--memory none"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = RunAs({"--workspace", ws_, "--memory", "none", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("--pids none"), std::string::npos) << r.err;
}

TEST_F(Rootless, ANetworkedProfileIsRefusedBeforeASandboxExists) {
  RunOutput r = RunAs({"--profile", "untrusted-code-write", "--workspace", ws_, "--memory", "none",
                       "--pids", "none", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("posture none"), std::string::npos) << r.err;
  EXPECT_EQ(access((runtime_ + "/brig/sandboxes").c_str(), F_OK), -1)
      << "brig made a sandbox's record before refusing";
}

TEST_F(Rootless, WithoutXdgRuntimeDirTheRunIsRefused) {
  RunOutput r = RunAs({"--workspace", ws_, "--", "/bin/true"}, false);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("XDG_RUNTIME_DIR"), std::string::npos) << r.err;
}

TEST_F(Rootless, ACopyWorkspaceExportsItsChangesAndLeavesTheSourceAlone) {
  // The copy's upper layer is a tmpfs, whose user.* xattrs an ordinary user's overlay
  // (userxattr) needs: Linux 6.6 has them.
  if (!KernelAtLeast(6, 6)) GTEST_SKIP() << "tmpfs takes user.* xattrs from Linux 6.6";
  std::string out = home_.path() + "/home/changes";
  RunOutput r = RunAs({"--profile", RwProfile(), "--workspace", ws_, "--workspace-mode", "copy",
                       "--export-changes", out, "--", "/bin/sh", "-c",
                       "echo new > /workspace/new; rm /workspace/file; mkdir /workspace/dir"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(access((ws_ + "/file").c_str(), F_OK), 0) << "the copy changed the source";
  EXPECT_EQ(access((ws_ + "/new").c_str(), F_OK), -1) << "the copy changed the source";
  EXPECT_EQ(ReadFileOrEmpty(out + "/files/new"), "new\n");
  EXPECT_NE(ReadFileOrEmpty(out + "/deleted").find("file"), std::string::npos);
}

TEST_F(Rootless, TheTimeoutEndsEveryProcessOfTheSandbox) {
  RunOutput r = ShAs("sleep 300 & sleep 300 & sleep 300", {"--timeout", "1s"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  // TearDown: no process of the uid is left.
}

// The attacks: from inside, the workload sees no process but its own, cannot make a user
// namespace to get capabilities back, and cannot reach the caller's files outside the
// workspace (its HOME, its runtime directory with brig's state).
TEST_F(Rootless, TheWorkloadReachesNeitherBrigNorTheCallersFiles) {
  home_.Write("home/secret", "the caller's\n");
  ASSERT_EQ(chown((home_.path() + "/home/secret").c_str(), uid_, uid_), 0);
  RunOutput r = ShAs(
      "ls /proc | grep -c '^[0-9]' ; "
      "unshare -U true 2>/dev/null && echo userns; "
      "cat " +
      home_.path() + "/home/secret 2>/dev/null; ls " + runtime_ +
      " 2>/dev/null; "
      "kill -9 -1; echo alive");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // sh, ls, grep (and init, pid 1): nothing of brig's.
  EXPECT_LE(std::stoi(r.out.substr(0, r.out.find('\n'))), 4) << r.out;
  EXPECT_EQ(r.out.find("userns"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the caller's"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("brig"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alive\n"), std::string::npos) << "kill -9 -1 ended the workload's shell";
}

// The caller's supplementary groups: a file only a group of the caller's may read, in the
// workspace, is the attacker's target. With subordinate ids brig drops the groups in its own
// namespace (setgroups stays allowed there), so the workload has none, and the sandbox
// still maps one uid and one gid, the caller's.
constexpr gid_t kCallersGroup = 61999;
constexpr char kGroupOnly[] =
    "grep '^Groups:' /proc/self/status; cat /workspace/group-only 2>/dev/null || echo refused; "
    "awk '{print $1, $2, $3}' /proc/self/uid_map /proc/self/gid_map";

TEST_F(Rootless, WithSubordinateIdsTheCallersGroupsAreDropped) {
  GrantSubordinateIds();
  if (IsSkipped()) return;
  groups_ = "--groups=" + std::to_string(kCallersGroup);
  home_.Write("ws/group-only", "the group's\n");
  const std::string file = ws_ + "/group-only";
  ASSERT_EQ(chown(file.c_str(), 0, kCallersGroup), 0);
  ASSERT_EQ(chmod(file.c_str(), 0040), 0);
  RunOutput r = ShAs(kGroupOnly);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string own = std::to_string(uid_);
  const std::string map = "1000 " + std::to_string(uid_) + " 1\n";
  EXPECT_EQ(r.out, "Groups:\t \nrefused\n" + map + map);
}

TEST_F(Rootless, GrantedIdsWithoutTheHelpersAreWarnedOf) {
  GrantSubordinateIds(false);
  if (IsSkipped()) return;
  groups_ = "--groups=" + std::to_string(kCallersGroup);
  RunOutput r = ShAs("grep '^Groups:' /proc/self/status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Groups:\t65534 \n") << "the kept group, unmapped in the sandbox";
  EXPECT_NE(r.err.find("/usr/bin/newgidmap is not installed (package uidmap): the sandbox keeps "
                       "the caller's supplementary groups"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace brig::testing
