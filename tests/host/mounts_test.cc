// Named mounts and caches a profile declares (--mount NAME=PATH supplies only sources), and
// the small things of `brig run` a harness needs: --chdir, --env-file, --name, `brig list`
// and `brig gc ID`, each as a harness author or an operator would hit it.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A profile of the test's own, with the default profile's posture and `mounts`.
std::string WriteProfile(const ScratchDir& dir, const std::string& mounts) {
  return dir.Write("mounts.textproto",
                   "isolation: ISOLATION_SANDBOX\n"
                   "filesystem { workspace: WORKSPACE_RO }\n"
                   "network { posture: POSTURE_NONE }\n"
                   "security { seccomp_policy: \"" +
                       SourceRoot() + "/policies/seccomp/default.textproto\" }\n" + mounts);
}

// A cache name of this test process's own, and its directory, removed at the end.
class CacheName {
 public:
  CacheName() : name_("brig-test-" + std::to_string(getpid())) {}
  // The cache, and brig's directory of caches if the test's was its last (rmdir leaves a
  // directory that holds others).
  ~CacheName() {
    RunCommand({"rm", "-rf", path()});
    rmdir("/var/cache/brig");
  }
  const std::string& name() const { return name_; }
  std::string path() const { return "/var/cache/brig/" + name_; }

 private:
  std::string name_;
};

// The records in /run/brig/sandboxes whose id starts with "brig-NAME-".
std::vector<std::string> RecordsNamed(const std::string& name) {
  std::vector<std::string> out;
  DIR* d = opendir("/run/brig/sandboxes");
  if (!d) return out;
  while (struct dirent* de = readdir(d)) {
    std::string id = de->d_name;
    if (id.rfind("brig-" + name + "-", 0) == 0) out.push_back(id);
  }
  closedir(d);
  return out;
}

class Mounts : public HostTest {};

TEST_F(Mounts, ReadOnlyDataAndACacheThatPersistsForTheSandboxUser) {
  ScratchDir policy, data, ws;
  CacheName cache;
  data.Write("hello", "from the host\n");
  std::string profile =
      WriteProfile(policy,
                   "mounts { name: \"data\" target: \"/data\" source: MOUNT_PER_RUN }\n"
                   "mounts { name: \"" +
                       cache.name() +
                       "\" target: \"/cache/npm\" writable: true "
                       "source: MOUNT_CACHE }\n");
  std::vector<std::string> args = {"--profile", profile,   "--workspace",
                                   ws.path(),   "--mount", "data=" + data.path()};
  RunOutput first =
      Sh("cat /data/hello; touch /data/new 2>&1; echo kept > /cache/npm/f && "
         "stat -c %u:%a /cache/npm",
         args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(Contains(first.out, "from the host\n")) << first.out;
  EXPECT_TRUE(Contains(first.out, "Read-only file system")) << first.out;
  EXPECT_TRUE(Contains(first.out, "1000:700\n")) << first.out;  // the sandbox user's own
  EXPECT_NE(access((data.path() + "/new").c_str(), F_OK), 0);
  // On the host: made 0700 for the id the sandbox user maps to (a root-owned workspace:
  // the overflow id), and kept after the run.
  struct stat st;
  ASSERT_EQ(lstat(cache.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  RunOutput second = Sh("cat /cache/npm/f", args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "kept\n");
}

TEST_F(Mounts, OnlyWhatTheProfileDeclaresCanBeMounted) {
  ScratchDir policy, data;
  CacheName cache;
  std::string profile =
      WriteProfile(policy,
                   "mounts { name: \"data\" target: \"/data\" source: MOUNT_PER_RUN }\n"
                   "mounts { name: \"" +
                       cache.name() +
                       "\" target: \"/cache\" writable: true "
                       "source: MOUNT_CACHE }\n");
  RunOutput r = RunBrig({"run", "--profile", profile, "--mount", "data=" + data.path(), "--mount",
                         "home=/root", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err, "brig: --mount 'home=/root': profile '" + profile +
                       "' declares no mount 'home' (it declares: data, " + cache.name() +
                       "); a read-only one is --ro-bind /root DST, a writable one the "
                       "profile's (brig-profile(5), MOUNTS): mounts { name: \"home\" target: "
                       "\"/mnt/home\" writable: true source: MOUNT_PER_RUN }\n");
  EXPECT_NE(access(cache.path().c_str(), F_OK), 0) << "a refused run made the cache";
  // A declared per-run mount without its source is refused too.
  r = RunBrig({"run", "--profile", profile, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "mount 'data' needs a source: --mount data=PATH")) << r.err;
}

TEST_F(Mounts, SourcesAreCheckedAsTheWorkspaceIs) {
  ScratchDir policy, data;
  std::string profile =
      WriteProfile(policy, "mounts { name: \"data\" target: \"/data\" source: MOUNT_PER_RUN }\n");
  std::string link = policy.path() + "/link";
  ASSERT_EQ(symlink(data.path().c_str(), link.c_str()), 0);
  RunOutput r = RunBrig({"run", "--profile", profile, "--mount", "data=" + link, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err, "brig: --mount 'data=" + link + "': a symlink; name the directory itself\n");
  r = RunBrig({"run", "--profile", profile, "--mount", "data=/run/brig", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "overlaps /run/brig")) << r.err;
  r = RunBrig({"run", "--profile", profile, "--workspace", data.path() + "/..", "--mount",
               "data=" + data.path(), "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "overlaps the workspace")) << r.err;
}

// A per-run mount's source is a host directory, as a bound workspace is: a unix socket a
// host process listens on, or a FIFO it reads, is no way out (connect(2) and open(2) of
// one ignore a read-only mount), and in a writable mount a hard link to a file outside
// does not carry a write out. The host side hears nothing and the outside file is as it
// was.
TEST_F(Mounts, HostSocketsFifosAndOutsideLinksInAMountAreOutOfReach) {
  for (bool writable : {false, true}) {
    ScratchDir policy, data, outside, ws;
    ws.Write("brig-probe", ReadFileOrEmpty(ProbeBinary()), 0755);
    std::string secret = outside.Write("secret", "as it was\n", 0666);
    ASSERT_EQ(link(secret.c_str(), (data.path() + "/link").c_str()), 0);
    RunCommand({"chown", "-R", "1234:1234", ws.path(), data.path(), outside.path()});
    HostIpc ipc(data.path(), "agent.sock", "cmd.fifo");
    ASSERT_TRUE(ipc.ok());
    std::string profile = WriteProfile(
        policy, std::string("mounts { name: \"data\" target: \"/data\" source: MOUNT_PER_RUN") +
                    (writable ? " writable: true" : "") + " }\n");
    auto r = Sh("/workspace/brig-probe unix /data/agent.sock; "
                "/workspace/brig-probe fifo /data/cmd.fifo; echo out >> /data/link; true",
                {"--profile", profile, "--workspace", ws.path(), "--mount", "data=" + data.path()});
    ASSERT_EQ(r.exit_code, 0) << writable << ": " << r.err;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << writable << ": " << r.out;
    EXPECT_FALSE(ipc.Connected()) << writable << ": the host's socket took a connection from "
                                  << "inside; the probe said: " << r.out;
    EXPECT_FALSE(ipc.Written()) << writable << ": the host's FIFO got a byte from inside; "
                                << "the probe said: " << r.out;
    EXPECT_EQ(ReadFileOrEmpty(secret), "as it was\n") << writable << ": " << r.err;
  }
}

// --ro-bind SRC DST, bwrap's, as a harness uses it for the agent's own code: read-only,
// nosuid and nodev, with the holds of a read-only workspace: the profile's hidden paths
// are hidden in it, a host socket or FIFO in it is out of reach.
TEST_F(Mounts, RoBindMountsAHostDirectoryReadOnlyWithTheWorkspacesHolds) {
  ScratchDir ws, code;
  ws.Write("brig-probe", ReadFileOrEmpty(ProbeBinary()), 0755);
  code.Write("tool.sh", "echo tool-ran\n", 0755);
  code.Write(".env", "SECRET=1\n");
  ASSERT_EQ(mkdir((code.path() + "/keys").c_str(), 0755), 0);
  code.Write("keys/id.pem", "KEY\n");
  HostIpc ipc(code.path(), "agent.sock", "cmd.fifo");
  ASSERT_TRUE(ipc.ok());
  RunCommand({"chown", "-R", "1234:1234", ws.path()});
  auto r =
      Sh("sh /opt/agent/tool.sh; touch /opt/agent/new 2>/dev/null || echo read-only; "
         "cat /opt/agent/.env /opt/agent/keys/id.pem 2>/dev/null; ls /opt/agent/keys; "
         "grep -c ' /opt/agent .*nosuid,nodev' /proc/self/mountinfo; "
         "/workspace/brig-probe unix /opt/agent/agent.sock; "
         "/workspace/brig-probe fifo /opt/agent/cmd.fifo; true",
         {"--workspace", ws.path(), "--ro-bind", code.path(), "/opt/agent"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "tool-ran\nread-only\nid.pem\n1\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "SECRET")) << r.out;
  EXPECT_FALSE(Contains(r.out, "KEY")) << r.out;
  EXPECT_FALSE(ipc.Connected()) << r.out;
  EXPECT_FALSE(ipc.Written()) << r.out;
  EXPECT_NE(access((code.path() + "/new").c_str(), F_OK), 0);
}

// What a --ro-bind may not be, each refused with one line before anything starts: a
// symlinked source, brig's own state, a target on what brig mounts itself or the root's
// system directories, two binds on one target, a missing DST.
TEST_F(Mounts, RoBindIsCheckedAsAMountIs) {
  ScratchDir code, other;
  std::string link = other.path() + "/link";
  ASSERT_EQ(symlink(code.path().c_str(), link.c_str()), 0);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--ro-bind", link, "/opt/a"}, "a symlink; name the directory itself"},
           {{"--ro-bind", "/run/brig", "/opt/a"}, "overlaps /run/brig"},
           {{"--ro-bind", code.path(), "/workspace/a"}, "overlaps /workspace, which brig provides"},
           {{"--ro-bind", code.path(), "/etc"}, "overlaps /etc, which brig provides"},
           {{"--ro-bind", code.path(), "opt"}, "is not an absolute path"},
           {{"--ro-bind", code.path(), "/opt/a", "--ro-bind", other.path(), "/opt/a/b"},
            "'/opt/a/b' overlaps /opt/a (another --ro-bind)"},
           {{"--ro-bind", code.path()}, "--ro-bind: needs SRC and DST"},
       }) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    if (c.args.size() > 2) args.insert(args.end(), {"--", "true"});
    RunOutput r = RunBrig(args);
    EXPECT_EQ(r.exit_code, 125) << c.says;
    EXPECT_TRUE(Contains(r.err, c.says)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(Mounts, ACacheOfAnotherOwnerIsRefused) {
  ScratchDir policy;
  CacheName cache;
  std::string profile = WriteProfile(policy, "mounts { name: \"" + cache.name() +
                                                 "\" target: \"/cache\" writable: true "
                                                 "source: MOUNT_CACHE }\n");
  ASSERT_EQ(RunCommand({"mkdir", "-p", "-m", "0700", cache.path()}).exit_code, 0);
  ASSERT_EQ(chown(cache.path().c_str(), 12345, 12345), 0);
  RunOutput r = RunBrig({"run", "--profile", profile, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "owned by uid 12345 with mode 0700, not uid 65534")) << r.err;
  EXPECT_TRUE(Contains(r.err,
                       "another owner's cache, which brig never shares: give each "
                       "workspace owner a cache name of its own (a profile whose mount "
                       "is named " +
                           cache.name() + "-65534, say)"))
      << r.err;
  EXPECT_FALSE(Contains(r.err, "remove it")) << r.err;
  ASSERT_EQ(rmdir(cache.path().c_str()), 0);
  ASSERT_EQ(symlink("/etc", cache.path().c_str()), 0);
  r = RunBrig({"run", "--profile", profile, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "not a directory (a symlink or a file is there)")) << r.err;
  unlink(cache.path().c_str());
}

class RunKnobs : public HostTest {};

TEST_F(RunKnobs, ChdirRunsTheCommandInADirectoryOfTheWorkspace) {
  ScratchDir ws;
  ASSERT_EQ(mkdir((ws.path() + "/sub").c_str(), 0755), 0);
  RunOutput r = RunBrig({"run", "--workspace", ws.path(), "--chdir", "sub", "--", "pwd"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "/workspace/sub\n");
  r = RunBrig({"run", "--workspace", ws.path(), "--chdir", "/workspace/missing", "--", "pwd"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err,
            "brig: --chdir '/workspace/missing': not a directory of the workspace (No "
            "such file or directory)\n");
  r = RunBrig({"run", "--workspace", ws.path(), "--chdir", "/etc", "--", "pwd"});
  EXPECT_EQ(r.exit_code, 125);
}

TEST_F(RunKnobs, EnvFileSetsAndPassesAndEnvWins) {
  ScratchDir dir;
  std::string file = dir.Write("run.env",
                               "# the phase's settings\nA=from file\nB=b\n\n"
                               "BRIG_TEST_PASSED\nBRIG_TEST_UNSET\n");
  setenv("BRIG_TEST_PASSED", "from brig", 1);
  unsetenv("BRIG_TEST_UNSET");
  RunOutput r = RunBrig({"run", "--env", "B=from flag", "--env-file", file, "--", "sh", "-c",
                         "echo \"$A|$B|$BRIG_TEST_PASSED|${BRIG_TEST_UNSET-unset}\""});
  unsetenv("BRIG_TEST_PASSED");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "from file|from flag|from brig|unset\n");
  std::string bad = dir.Write("bad.env", "A=1\nNOT-A-NAME=2\n");
  r = RunBrig({"run", "--env-file", bad, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err, "brig: --env-file '" + bad +
                       "': line 2: 'NOT-A-NAME' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)\n");
}

TEST_F(RunKnobs, NameIsInTheIdTheResultAndEveryAuditEvent) {
  ScratchDir dir;
  std::string name = "task-" + std::to_string(getpid());
  RunOutput r = RunBrig({"run", "--name", name, "--result", dir.path() + "/r.json", "--audit-log",
                         dir.path() + "/audit.log", "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string result = ReadFileOrEmpty(dir.path() + "/r.json");
  EXPECT_TRUE(Contains(result, "\"name\":\"" + name + "\"")) << result;
  EXPECT_TRUE(Contains(result, "\"sandbox_id\":\"brig-" + name + "-")) << result;
  std::string audit = ReadFileOrEmpty(dir.path() + "/audit.log");
  size_t lines = 0;
  for (size_t at = 0; (at = audit.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 2u) << audit;  // sandbox_start and sandbox_exit
  size_t named = 0;
  for (size_t at = 0; (at = audit.find("\"name\":\"" + name + "\"", at)) != std::string::npos;
       ++at) {
    ++named;
  }
  EXPECT_EQ(named, lines) << audit;
  r = RunBrig({"run", "--name", "../x", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
}

// A sandbox that waits until the test creates `go` in its workspace.
std::vector<std::string> Waiter(const ScratchDir& ws, const std::string& name) {
  return {
      "run",         "--name",  name,
      "--workspace", ws.path(), "--",
      "sh",          "-c",      "echo started; while [ ! -e /workspace/go ]; do sleep 0.05; done"};
}

TEST_F(RunKnobs, ListShowsTheRunningSandboxes) {
  ScratchDir ws, out;
  std::string name = "list-" + std::to_string(getpid());
  // A profile named by a path relative to brig's directory is listed whole (issue 32).
  std::string profile =
      out.Write("mine.textproto",
                ReadFileOrEmpty(SourceRoot() + "/policies/profiles/untrusted-code-read.textproto"));
  std::vector<std::string> args = Waiter(ws, name);
  args.insert(args.begin() + 1,
              {"--profile", std::filesystem::relative(profile, std::filesystem::current_path())});
  ASSERT_NE(args[2][0], '/');
  pid_t brig = SpawnBrig(args, out.path());
  ASSERT_TRUE(Eventually([&] {
    return Contains(ReadFileOrEmpty(out.path() + "/stdout"), "started");
  })) << ReadFileOrEmpty(out.path() + "/stderr");
  std::vector<std::string> ids = RecordsNamed(name);
  ASSERT_EQ(ids.size(), 1u);
  RunOutput table = RunBrig({"list"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(Contains(table.out, "ID ")) << table.out;
  EXPECT_TRUE(Contains(table.out, ids[0] + " ")) << table.out;
  EXPECT_TRUE(Contains(table.out, " " + profile + " ")) << table.out;
  RunOutput json = RunBrig({"list", "--format", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  std::string file = out.Write("list.json", json.out);
  RunOutput parsed = RunCommand(
      {"python3", "-c",
       "import json,sys; l=json.load(open(sys.argv[1])); s=[x for x in l if x['id']==sys.argv[2]]; "
       "print(s[0]['name'], s[0]['posture'], s[0]['pid'] > 0, s[0]['brig_pid'])",
       file, ids[0]});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.err << json.out;
  EXPECT_EQ(parsed.out, name + " none True " + std::to_string(brig) + "\n") << json.out;
  ws.Write("go", "");
  EXPECT_EQ(WaitExit(brig), 0);
  EXPECT_FALSE(Contains(RunBrig({"list"}).out, ids[0]));
}

TEST_F(RunKnobs, GcOfOneIdRemovesOnlyThatSandboxsResidue) {
  ScratchDir ws, out_a, out_b;
  std::string a = "gc-a-" + std::to_string(getpid()), b = "gc-b-" + std::to_string(getpid());
  pid_t brig_a = SpawnBrig(Waiter(ws, a), out_a.path());
  pid_t brig_b = SpawnBrig(Waiter(ws, b), out_b.path());
  for (const auto* out : {&out_a, &out_b}) {
    ASSERT_TRUE(Eventually([&] {
      return Contains(ReadFileOrEmpty(out->path() + "/stdout"), "started");
    })) << ReadFileOrEmpty(out->path() + "/stderr");
  }
  std::string id_a = RecordsNamed(a).at(0), id_b = RecordsNamed(b).at(0);
  RunOutput live = RunBrig({"gc", id_b});
  EXPECT_EQ(live.exit_code, 125);
  EXPECT_EQ(live.err, "brig: brig gc '" + id_b +
                          "': still running (its brig holds its record); stop that brig first\n");
  EXPECT_EQ(RunBrig({"gc", "brig-no-such-sandbox"}).exit_code, 125);
  ASSERT_EQ(kill(brig_a, SIGKILL), 0);
  EXPECT_EQ(WaitExit(brig_a), 128 + SIGKILL);
  RunOutput gc = RunBrig({"gc", id_a});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_TRUE(Contains(gc.out, "removed cgroup ")) << gc.out;
  EXPECT_TRUE(Contains(gc.out, id_a)) << gc.out;
  EXPECT_FALSE(Contains(gc.out, id_b)) << gc.out;
  EXPECT_TRUE(RecordsNamed(a).empty());
  EXPECT_EQ(RecordsNamed(b).size(), 1u);
  ws.Write("go", "");
  EXPECT_EQ(WaitExit(brig_b), 0);
}

}  // namespace
}  // namespace brig::testing
