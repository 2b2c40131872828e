// brig without root (issue 31): `brig run`, and the OCI verbs on a rootless container, as an
// ordinary user. The tests run brig as a uid
// of their own that no account and no process has (setpriv, no supplementary groups, an
// environment built from nothing), with that uid's own XDG_RUNTIME_DIR and HOME in scratch
// directories; nothing of the host's (/etc/passwd, /etc/subuid) is changed. Each checks
// what the run does, and that nothing of it is left: no record in the user's runtime
// directory, no process of the uid.
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

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
    if (std::string why = user_.Make(); !why.empty()) GTEST_SKIP() << why;
    uid_ = user_.uid();
    runtime_ = user_.runtime();
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
      EXPECT_EQ(user_.Processes(), "") << "a process of the user outlived its run";
      EXPECT_EQ(user_.Records(), "") << "a record was left in the user's runtime directory";
    }
    HostTest::TearDown();
  }

  // brig run ARGS as the user, with an environment of PATH, HOME and XDG_RUNTIME_DIR
  // (`xdg` false: without it).
  RunOutput RunAs(const std::vector<std::string>& args, bool xdg = true) {
    std::vector<std::string> cmd = wrap_;
    for (std::string& a : user_.Prefix(home_.path() + "/home", xdg, groups_)) cmd.push_back(a);
    cmd.push_back(BrigBinary());
    cmd.push_back("run");
    cmd.insert(cmd.end(), args.begin(), args.end());
    return RunCommand(cmd);
  }

  // brig ARGS (any verb) as the user.
  RunOutput BrigAs(const std::vector<std::string>& args) {
    std::vector<std::string> cmd = wrap_;
    for (std::string& a : user_.Prefix(home_.path() + "/home", true, groups_)) cmd.push_back(a);
    cmd.push_back(BrigBinary());
    cmd.insert(cmd.end(), args.begin(), args.end());
    return RunCommand(cmd);
  }

  // A bundle of the user's: `brig spec --rootless` run by the user, its process made
  // `args` without a terminal, `resources` (JSON) added to linux when not empty, and a root
  // of the host's static busybox.
  std::string RootlessBundle(const std::string& name, const std::string& args,
                             const std::string& resources = "") {
    const std::string bundle = home_.path() + "/" + name;
    EXPECT_EQ(mkdir(bundle.c_str(), 0755), 0);
    for (const char* d : {"/rootfs", "/rootfs/bin"}) {
      EXPECT_EQ(mkdir((bundle + d).c_str(), 0755), 0);
    }
    EXPECT_EQ(RunCommand({"cp", "/bin/busybox", bundle + "/rootfs/bin/busybox"}).exit_code, 0);
    for (const char* tool : {"sh", "sleep", "cat", "id"}) {
      EXPECT_EQ(symlink("busybox", (bundle + "/rootfs/bin/" + tool).c_str()), 0);
    }
    EXPECT_EQ(RunCommand({"chown", "-R", std::to_string(uid_) + ":" + std::to_string(uid_), bundle})
                  .exit_code,
              0);
    RunOutput spec = BrigAs({"spec", "--rootless", "--bundle", bundle});
    EXPECT_EQ(spec.exit_code, 0) << spec.err;
    std::string json = ReadFileOrEmpty(bundle + "/config.json");
    auto replace = [&](const std::string& from, const std::string& to) {
      size_t at = json.find(from);
      EXPECT_NE(at, std::string::npos) << from << " in " << json;
      if (at != std::string::npos) json.replace(at, from.size(), to);
    };
    replace("\"terminal\": true", "\"terminal\": false");
    replace("\"args\": [\n      \"sh\"\n    ]", "\"args\": " + args);
    if (!resources.empty())
      replace("\"linux\": {", "\"linux\": {\"resources\": " + resources + ",");
    home_.Write(name + "/config.json", json);
    return bundle;
  }

  // The default profile with its cgroup limits said not to be wanted.
  RunOutput ShAs(const std::string& script, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--workspace", ws_, "--memory", "none", "--pids", "none"};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunAs(args);
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
  OrdinaryUser user_;
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

// A group delegated to the user, as systemd's user manager delegates a scope
// (`systemd-run --user --scope -p Delegate=yes`): the test makes it, gives it to the uid
// (the directory, cgroup.procs, cgroup.subtree_control, cgroup.threads) and starts brig in
// it. The memory and pids limits hold there with the codes root's have; the sandbox's group
// goes, and only brig's own, empty, stays until the delegated group goes. Needs a pure
// cgroup v2 host (the vm tier), where the test may make a group at the root.
TEST_F(Rootless, ADelegatedCgroupHoldsTheLimits) {
  struct statfs fs;
  if (statfs("/sys/fs/cgroup", &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    GTEST_SKIP() << "needs a pure cgroup v2 host (the vm tier)";
  }
  std::string offered = ReadFileOrEmpty("/sys/fs/cgroup/cgroup.subtree_control");
  if (offered.find("memory") == std::string::npos || offered.find("pids") == std::string::npos) {
    GTEST_SKIP() << "the root group enables no memory and pids for its children: " << offered;
  }
  // One delegated group a run, as one scope a brig: a group whose children have controllers
  // takes no process again.
  int made = 0;
  auto delegate = [&]() {
    const std::string dir =
        "/sys/fs/cgroup/bt-delegated-" + std::to_string(getpid()) + "-" + std::to_string(++made);
    EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
    for (const std::string f :
         {"", "/cgroup.procs", "/cgroup.subtree_control", "/cgroup.threads"}) {
      EXPECT_EQ(chown((dir + f).c_str(), uid_, uid_), 0) << dir + f;
    }
    wrap_ = {"sh", "-c", "echo $$ > " + dir + "/cgroup.procs && exec \"$@\"", "sh"};
    return dir;
  };
  // The sandbox's group went; brig's own stays, empty, with the delegated group.
  auto left_only_brigs = [](const std::string& dir) {
    std::vector<std::string> left;
    for (const std::string& p : PathsIn(dir)) {
      struct stat st;
      if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) left.push_back(p);
    }
    ASSERT_EQ(left.size(), 1u) << "left: " << Lines(left);
    EXPECT_NE(left[0].find(".supervisor"), std::string::npos) << left[0];
    EXPECT_EQ(ReadFileOrEmpty(left[0] + "/cgroup.procs"), "") << left[0];
    EXPECT_EQ(rmdir(left[0].c_str()), 0) << left[0];
    EXPECT_EQ(rmdir(dir.c_str()), 0) << dir;
  };
  ScratchDir out;
  ASSERT_EQ(chown(out.path().c_str(), uid_, uid_), 0);
  const std::string result = out.path() + "/result.json";
  // The default profile's own limits hold too: nothing says --memory none.
  std::string dir = delegate();
  RunOutput oom =
      RunAs({"--workspace", ws_, "--memory", "64M", "--timeout", "60s", "--result", result, "--",
             "/bin/sh", "-c", "x=$(head -c 512M /dev/zero | tr '\\0' a); echo survived"});
  EXPECT_EQ(oom.exit_code, 137) << oom.err;
  EXPECT_EQ(oom.out, "");
  EXPECT_NE(oom.err.find("out of memory"), std::string::npos) << oom.err;
  EXPECT_NE(ReadFileOrEmpty(result).find(R"("error_code":"oom_killed")"), std::string::npos)
      << ReadFileOrEmpty(result);
  left_only_brigs(dir);
  dir = delegate();
  RunOutput pids = RunAs({"--workspace", ws_, "--pids", "4", "--result", result, "--", "/bin/sh",
                          "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait"});
  // The shell could not fork past the limit (dash then gives up: exit 2).
  EXPECT_NE(pids.err.find("Cannot fork"), std::string::npos) << pids.exit_code << pids.err;
  EXPECT_NE(ReadFileOrEmpty(result).find(R"("peak_pids":4)"), std::string::npos)
      << ReadFileOrEmpty(result);
  left_only_brigs(dir);
  // A delegated group that holds another process (the shell that ran brig, say) is no
  // place for brig's groups: the run is refused, naming it.
  dir = delegate();
  wrap_ = {"sh", "-c",
           "echo $$ > " + dir +
               "/cgroup.procs && { sleep 60 >/dev/null 2>&1 </dev/null & } && exec \"$@\"",
           "sh"};
  RunOutput shared = RunAs({"--workspace", ws_, "--pids", "4", "--", "/bin/true"});
  EXPECT_EQ(shared.exit_code, 125) << shared.err;
  EXPECT_NE(shared.err.find("holds process"), std::string::npos) << shared.err;
  RunCommand({"sh", "-c", "kill $(cat " + dir + "/cgroup.procs)"});
  ASSERT_TRUE(Eventually([&] { return ReadFileOrEmpty(dir + "/cgroup.procs").empty(); }));
  EXPECT_EQ(rmdir(dir.c_str()), 0) << dir;
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
  EXPECT_NE(r.err.find("not delegated to it"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("systemd-run --user --scope -p Delegate=yes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--memory none"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = RunAs({"--workspace", ws_, "--memory", "none", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("--pids none"), std::string::npos) << r.err;
}

// The allowlist posture without root (egress_test.cc runs the resolver's and proxy's own
// tests as the user too): the workload attacks the rules brig put in its network namespace
// and tries every way around them; each fails at once, and nothing reaches a server of the
// test world or of its fake internet, not even the world's own address. nft cannot even
// open netfilter's netlink (the seccomp policy: exit 3); ip can, and the kernel refuses
// every change (no capability over the namespace: exit 2). A refused TCP connection is
// reset (curl's 7), a datagram refused before it leaves (EPERM: the rule is in the
// sandbox's own namespace, where root's is at the bridge, whose ICMP says EHOSTUNREACH).
constexpr char kUdpProbe[] = R"(import errno, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); s.send(b"x"); s.recv(100); print("reply")
except OSError as e:
    print("timeout" if isinstance(e, socket.timeout) else errno.errorcode[e.errno])
)";

TEST_F(Rootless, TheWorkloadCanNeitherChangeNorGoAroundItsRules) {
  if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  TestWorld world;
  ASSERT_EQ(world.Build(), "");
  wrap_ = {"nsenter", "--net=" + world.NsPath(TestWorld::kWorld)};
  home_.Write("ws/udp.py", kUdpProbe);
  const std::string internet = kInternetHost;
  RunOutput r = ShAs(
      "nft flush ruleset 2>/dev/null; echo nft $?;"
      "ip link set brig down 2>/dev/null; echo link $?;"
      "ip addr add 198.51.100.99/24 dev eth0 2>/dev/null; echo addr $?;"
      "ip route add 198.51.100.0/24 dev brig 2>/dev/null; echo route $?;"
      "unshare -Urn true 2>/dev/null; echo userns $?;"
      "curl -sS -m 20 http://" +
          internet +
          ":8080/ 2>/dev/null; echo tcp $?;"
          "curl -sS -m 20 http://" +
          std::string(kWorldAddr) +
          ":22/ 2>/dev/null; echo world $?;"
          "echo udp $(python3 /workspace/udp.py " +
          internet +
          " 8080);"
          "curl -sS -m 20 -H 'Host: allowed.test' http://127.0.0.1:64880/ 2>&1 | grep -c 'brig:';"
          "curl -sS -m 20 http://[::1]:8080/ 2>/dev/null; echo v6 $?",
      {"--profile", SourceRoot() + "/tests/host/profiles/egress.textproto", "--dns-upstream",
       kDnsHost});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "nft 3\nlink 2\naddr 2\nroute 2\nuserns 1\ntcp 7\nworld 7\nudp EPERM\n1\nv6 7\n")
      << r.err;
  EXPECT_EQ(Lines(world.AllHits()), "") << "the workload reached a server";
  EXPECT_EQ(world.TearDown(), "");
}

// A broker without root: the host-side broker adds the secret on its way out, and nothing
// inside holds it. The upstream, on the host's loopback, writes down the headers it got.
constexpr char kHeaderUpstream[] = R"(import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[1], "a") as f:
            f.write("".join("%s: %s\n" % (k.lower(), v) for k, v in self.headers.items()))
        b = b"hello from upstream\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
)";

TEST_F(Rootless, ABrokerAddsTheSecretOutsideAndTheSandboxNeverHoldsIt) {
  ScratchDir up;
  const std::string log = up.path() + "/headers", port_file = up.path() + "/port";
  pid_t server =
      SpawnQuiet({"python3", "-c", kHeaderUpstream, log, port_file}, up.path() + "/stderr");
  ASSERT_GT(server, 0);
  ASSERT_TRUE(Eventually([&] { return !ReadFileOrEmpty(port_file).empty(); }))
      << ReadFileOrEmpty(up.path() + "/stderr");
  const std::string secret = "brig-rootless-secret-" + std::to_string(getpid());
  std::vector<std::string> cmd = user_.Prefix(home_.path() + "/home");
  cmd.insert(cmd.end(),
             {"BRIG_TEST_KEY=" + secret, BrigBinary(), "run", "--workspace", ws_, "--memory",
              "none", "--pids", "none", "--broker",
              "model=port=8080,to=http://127.0.0.1:" + ReadFileOrEmpty(port_file) +
                  ",header=x-api-key:env:BRIG_TEST_KEY",
              "--", "/bin/sh", "-c",
              "curl -sS http://127.0.0.1:8080/v1; cat /proc/[0-9]*/environ | tr '\\0' '\\n' | "
              "grep -c brig-rootless-secret"});
  RunOutput r = RunCommand(cmd);
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  EXPECT_EQ(r.exit_code, 1) << r.err << "\n(grep -c's 1: no match)";
  EXPECT_EQ(r.out, "hello from upstream\n0\n") << r.err;
  EXPECT_NE(ReadFileOrEmpty(log).find("x-api-key: " + secret + "\n"), std::string::npos)
      << ReadFileOrEmpty(log);
}

// The dry run plans as a run does (in brig's own namespace) and makes nothing; its manifest
// names the sandbox's own table and address, which are fixed.
TEST_F(Rootless, TheDryRunNamesTheTableInTheSandboxsOwnNamespace) {
  RunOutput r = RunAs({"--dry-run", "--profile", "untrusted-code-write", "--workspace", ws_,
                       "--memory", "none", "--pids", "none", "--", "/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("address":"10.213.0.2")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"(tcp dport 443 redirect to :64443\n)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nft_sets\":[{"), std::string::npos) << r.out;
  EXPECT_EQ(access((runtime_ + "/brig/sandboxes").c_str(), F_OK), -1) << "the dry run made state";
}

// brig check as the user says what the user can have. Here (the development machines'
// hybrid hierarchy, or the vm tier's root group) no cgroup is delegated to it, so a profile
// with limits cannot run without --memory none; everything else the profiles need, it has.
TEST_F(Rootless, CheckSaysWhatThisUserCanHave) {
  std::vector<std::string> cmd = user_.Prefix(home_.path() + "/home");
  cmd.insert(cmd.end(), {BrigBinary(), "check", "--policy-dir", SourceRoot() + "/policies"});
  RunOutput r = RunCommand(cmd);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  for (const std::string line :
       {"delegated   no: its cgroup v2 group ", "subordinate ids     missing ",
        "user namespaces     ok ", "namespaces          ok ", "seccomp filters     ok ",
        "mount API           ok ", "sealed network      ok ",
        "profile none                     can run here",
        "cannot run here: limits.memory needs a cgroup delegated to this user (or --memory "
        "none)"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("exit wait"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("host ids"), std::string::npos) << r.out;
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

// brig list as the user shows the user's own running sandbox (its records are under the
// user's runtime directory), by its name, and nothing once the run is over.
TEST_F(Rootless, ListShowsTheCallersOwnSandboxes) {
  std::vector<std::string> cmd = user_.Prefix(home_.path() + "/home", true, groups_);
  cmd.insert(cmd.end(), {BrigBinary(), "run", "--name", "listed", "--workspace", ws_, "--memory",
                         "none", "--pids", "none", "--timeout", "60s", "--", "/bin/sleep", "60"});
  pid_t brig = SpawnQuiet(cmd, home_.path() + "/run.err");
  ASSERT_GT(brig, 0);
  std::string listed;
  EXPECT_TRUE(Eventually([&] {
    listed = BrigAs({"list"}).out;
    return listed.find(" listed ") != std::string::npos;
  })) << listed
      << ReadFileOrEmpty(home_.path() + "/run.err");
  kill(brig, SIGTERM);
  WaitExit(brig);
  RunOutput after = BrigAs({"list"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out.find(" listed "), std::string::npos) << after.out;
}

// The OCI verbs without root (brig-oci(1), WITHOUT ROOT), as runc's on a rootless
// container: the user's own `spec --rootless`, a container made in the user's runtime
// directory, its process uid 0 inside and the user's uid outside, exec, ps and kill --all
// by its pid namespace (there is no cgroup on this host, nor one delegated), no cgroup tree
// seen at /sys/fs/cgroup, pause refused saying why, and nothing left after delete.
TEST_F(Rootless, TheOciVerbsRunARootlessContainer) {
  // Detached, the container's process has brig's stdio, as runc's does: it lets go of the
  // test's pipes so that brig's exit ends the call.
  const std::string bundle =
      RootlessBundle("oci", R"(["sh", "-c", "exec sleep 1000 </dev/null >/dev/null 2>&1"])");
  RunOutput plan = BrigAs({"create", "--dry-run", "--bundle", bundle, "rl"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find(R"("cgroups":{"dirs":[],)"), std::string::npos)
      << "the dry run plans cgroups create would not make: " << plan.out;
  RunOutput run = BrigAs({"run", "--bundle", bundle, "--detach", "rl"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  struct stat st;
  ASSERT_EQ(stat((runtime_ + "/brig/oci/rl").c_str(), &st), 0) << "not in the user's runtime dir";
  EXPECT_EQ(st.st_uid, uid_);
  RunOutput exec =
      BrigAs({"exec", "rl", "sh", "-c", "id -u; cat /proc/self/uid_map; ls -A /sys/fs/cgroup"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(SplitLines(exec.out).size(), 2u) << "a cgroup tree not its own is seen: " << exec.out;
  EXPECT_EQ(SplitLines(exec.out)[0], "0") << exec.out;
  std::vector<std::string> map = Words(SplitLines(exec.out).at(1));
  EXPECT_EQ(map, (std::vector<std::string>{"0", std::to_string(uid_), "1"})) << exec.out;
  RunOutput ps = BrigAs({"ps", "--format", "json", "rl"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::string pids = ps.out;
  pids.erase(std::remove_if(pids.begin(), pids.end(), [](char c) { return c == '[' || c == ']'; }),
             pids.end());
  pid_t sleeper = static_cast<pid_t>(atoi(pids.c_str()));
  ASSERT_GT(sleeper, 1) << ps.out;
  struct stat proc;
  ASSERT_EQ(stat(("/proc/" + std::to_string(sleeper)).c_str(), &proc), 0);
  EXPECT_EQ(proc.st_uid, uid_) << "the container's uid 0 is the user's uid on the host";
  RunOutput pause = BrigAs({"pause", "rl"});
  EXPECT_EQ(pause.exit_code, 1);
  EXPECT_NE(pause.err.find("has no cgroup"), std::string::npos) << pause.err;
  sys::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, sleeper, 0)));
  ASSERT_TRUE(pidfd.valid());
  RunOutput kill = BrigAs({"kill", "--all", "rl", "KILL"});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  struct pollfd p = {pidfd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 60000), 1) << "kill --all left the container's process";
  // Its parent is the caller of brig run --detach, which reaps it, as an engine's shim does.
  (void)waitpid(sleeper, nullptr, 0);
  RunOutput del = BrigAs({"delete", "rl"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
}

// A limit has nowhere to go without a cgroup: create refuses it with one line naming the
// property, exit 1, and leaves nothing (TearDown: no record, no process); its dry run
// refuses it alike.
TEST_F(Rootless, AnOciLimitWithoutACgroupIsRefused) {
  const std::string bundle =
      RootlessBundle("limited", R"(["true"])", R"({"memory": {"limit": 100000000}})");
  RunOutput plan = BrigAs({"create", "--dry-run", "--bundle", bundle, "lim"});
  EXPECT_EQ(plan.exit_code, 1);
  EXPECT_NE(plan.err.find("linux.resources"), std::string::npos) << "the dry run: " << plan.err;
  RunOutput create = BrigAs({"create", "--bundle", bundle, "lim"});
  EXPECT_EQ(create.exit_code, 1);
  EXPECT_EQ(SplitLines(create.err).size(), 1u) << create.err;
  EXPECT_NE(create.err.find("linux.resources"), std::string::npos) << create.err;
  EXPECT_NE(create.err.find("no cgroup"), std::string::npos) << create.err;
}

}  // namespace
}  // namespace brig::testing
