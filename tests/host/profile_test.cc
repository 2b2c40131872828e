// Profiles fix the posture (design.md, Invariants 1 and 2): attempts to widen it from the
// command line fail before anything runs, and `none` is unconfined only when named.
#include <sys/stat.h>
#include <unistd.h>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Profile : public HostTest {};

TEST_F(Profile, DefaultIsTheReadOnlySandbox) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  auto r = Sh("readlink /proc/self/ns/user; id -u; touch /workspace/x 2>/dev/null || echo ro",
              {"--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.substr(0, r.out.find('\n')), HostNs("user"));
  EXPECT_NE(r.out.find("\n1000\nro\n"), std::string::npos) << r.out;
}

TEST_F(Profile, WideningFromTheCommandLineRunsNothing) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  auto r = RunBrig({"run", "--workspace", ws.path(), "--workspace-mode", "rw", "--", "touch",
                    "/workspace/ran"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("fixes filesystem.workspace = WORKSPACE_RO"), std::string::npos) << r.err;
  EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0);
}

TEST_F(Profile, AProfileFileByPath) {
  ScratchDir dir;
  std::string path = dir.Write("short.textproto",
                               "# a profile of the operator's own\n"
                               "isolation: ISOLATION_SANDBOX\n"
                               "filesystem { workspace: WORKSPACE_RO }\n"
                               "network { posture: POSTURE_NONE }\n"
                               "security { seccomp_policy: \"default\" }\n"
                               "limits { timeout: \"1s\" }\n");
  auto r = RunBrig({"run", "--profile", path, "--", "sleep", "5"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  std::string bad = dir.Write("bad.textproto", "isolation: ISOLATION_SANDBOX\nfilesystems {}\n");
  auto b = RunBrig({"run", "--profile", bad, "--", "true"});
  EXPECT_EQ(b.exit_code, 125);
  EXPECT_NE(b.err.find("bad.textproto:2:"), std::string::npos) << b.err;
}

TEST_F(Profile, NoneRunsUnconfinedOnlyWhenNamed) {
  ScratchDir ws;
  ws.Write("marker", "here\n");
  auto r = RunBrig({"run", "--profile", "none", "--workspace", ws.path(), "--", "sh", "-c",
                    "readlink /proc/self/ns/mnt; cat marker; echo $HOME"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, HostNs("mnt") + "\nhere\n/tmp\n");
  // Still a timeout, and it takes the command's process group with it.
  std::string marker = "sleep " + std::to_string(2000000 + getpid());
  auto t = RunBrig({"run", "--profile", "none", "--timeout", "1s", "--", "sh", "-c",
                    marker + " & " + marker});
  EXPECT_EQ(t.exit_code, 124);
  EXPECT_TRUE(FindProcesses(marker).empty());
  EXPECT_EQ(RunBrig({"run", "--profile", "none", "--", "no-such-command-anywhere"}).exit_code,
            127);
  // A relative command is one inside the workspace, where it runs.
  ws.Write("script.sh", "#!/bin/sh\necho relative\n", 0755);
  auto rel = RunBrig({"run", "--profile", "none", "--workspace", ws.path(), "--", "./script.sh"});
  EXPECT_EQ(rel.out, "relative\n") << rel.err;
  // What the command leaves running in its process group ends with the phase.
  std::string left = "sleep " + std::to_string(3000000 + getpid());
  EXPECT_EQ(RunBrig({"run", "--profile", "none", "--", "sh", "-c", left + " & exit 0"}).exit_code,
            0);
  EXPECT_TRUE(Eventually([&] { return FindProcesses(left).empty(); }));
  // Limits still apply.
  auto lim = RunBrig({"run", "--profile", "none", "--rlimit", "nofile=64", "--", "sh", "-c",
                      "ulimit -n"});
  EXPECT_EQ(lim.out, "64\n");
}

}  // namespace
}  // namespace brig::testing
