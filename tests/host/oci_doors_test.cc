// The doors issue 27 found in the OCI half, each tried as an attacker tries it: from a
// container's process or with what a container can plant, against what the host holds.
// Each test names what must hold; every one of them failed on the engine before the fix
// or guards what was found to hold.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/oci_fixture.h"

namespace brig::testing::oci {
namespace {

// A file on the host, under the test's scratch dir, that no path inside a container
// reaches: only a process whose cwd (or a descriptor) is on the host can read it.
class OciDoors : public Oci {
 protected:
  void SetUp() override {
    Oci::SetUp();
    secret_ = scratch_.Write("host-only", kSecret, 0600);
  }
  // From any directory, the secret as a relative path: enough ".." for the host's root.
  std::string UpToSecret() const {
    std::string up;
    for (int i = 0; i < 24; ++i) up += "../";
    return up + secret_.substr(1);
  }
  // What an exec that ran `sh -c 'pwd; cat SECRET'` may show: a refusal of one line, or a
  // run inside the container that never read the secret.
  void ExpectStayedInside(const RunOutput& r, const std::string& what) {
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << what << ": the host's file was read";
    if (r.exit_code == 255) {
      EXPECT_EQ(Lines(r.err).size(), 1u) << what << ": " << r.err;
      return;
    }
    std::vector<std::string> lines = Lines(r.out);
    ASSERT_FALSE(lines.empty()) << what << ": " << r.err;
    EXPECT_EQ(lines[0].rfind('/', 0), 0u) << what << ": cwd " << lines[0];
    EXPECT_EQ(lines[0].find("unreachable"), std::string::npos) << what << ": cwd " << lines[0];
  }

  static constexpr char kSecret[] = "host-secret-7c1d";
  std::string secret_;
};

// Every /proc link a container can name as a cwd that could lead out of it: a descriptor
// of the process itself (3 to 10: whatever the runtime holds while it starts it), its
// own and init's cwd and root, and init's descriptors.
std::vector<std::string> HostReachingCwds() {
  std::vector<std::string> out;
  for (int fd = 3; fd <= 10; ++fd) out.push_back("/proc/self/fd/" + std::to_string(fd));
  for (const char* p : {"/proc/self/cwd", "/proc/1/cwd", "/proc/1/root", "/proc/self/root"}) {
    out.push_back(p);
  }
  for (int fd = 0; fd <= 10; ++fd) out.push_back("/proc/1/fd/" + std::to_string(fd));
  return out;
}

// Reproduction A: `exec --cwd /proc/self/fd/N` started in the container's cgroup directory
// on the host, from which eight ".." reached the host's root (runc CVE-2024-21626's shape).
TEST_F(OciDoors, ExecWithACwdThroughProcNeverStartsOnTheHost) {
  pid_t init = CreateAndStart(Cfg("cwda"), "cwda", "sleep");
  ASSERT_GT(init, 0);
  for (const std::string& cwd : HostReachingCwds()) {
    RunOutput r = Run({"exec", "--cwd", cwd, "cwda", "sh", "-c", "pwd; cat " + UpToSecret()});
    ExpectStayedInside(r, "--cwd " + cwd);
  }
  EXPECT_EQ(Run({"delete", "--force", "cwda"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
}

// Reproduction B: the container replaces its process.cwd with a link to one of those,
// and waits for the next ordinary exec (an engine's healthcheck, `kubectl exec`).
TEST_F(OciDoors, APlantedCwdLinkNeverLeadsAnExecOut) {
  Config c = Cfg("cwdb");
  c.readonly = false;
  c.cwd = "/app";
  std::string bundle = Bundle(c, "cwdb");
  ASSERT_EQ(mkdir((bundle + "/rootfs/app").c_str(), 0755), 0);
  pid_t init = CreateFrom(bundle, "cwdb");
  ASSERT_GT(init, 0);
  ASSERT_EQ(Run({"start", "cwdb"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Comm(init) == "sleep"; }));
  for (const std::string& target : HostReachingCwds()) {
    RunOutput plant = Run({"exec", "--cwd", "/", "cwdb", "sh", "-c",
                           "rm -rf /app && ln -s " + target + " /app && readlink /app"});
    ASSERT_EQ(plant.exit_code, 0) << plant.err;
    ASSERT_EQ(plant.out, target + "\n");
    RunOutput r = Run({"exec", "cwdb", "sh", "-c", "pwd; cat " + UpToSecret()});
    ExpectStayedInside(r, "process.cwd /app -> " + target);
  }
  EXPECT_EQ(Run({"delete", "--force", "cwdb"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
}

// A relative link that climbs past the container's root is clamped at it, as the
// container's own lookups are: the exec starts at the container's root, not above it.
TEST_F(OciDoors, ACwdLinkAboveTheRootStaysInside) {
  Config c = Cfg("cwdc");
  c.readonly = false;
  c.cwd = "/app";
  std::string bundle = Bundle(c, "cwdc");
  ASSERT_EQ(symlink("../../../../../../../../../..", (bundle + "/rootfs/app").c_str()), 0);
  pid_t init = CreateFrom(bundle, "cwdc");
  ASSERT_GT(init, 0);
  ASSERT_EQ(Run({"start", "cwdc"}).exit_code, 0);
  RunOutput r = Run({"exec", "cwdc", "sh", "-c", "pwd; cat " + UpToSecret()});
  ExpectStayedInside(r, "process.cwd /app -> ../..");
  EXPECT_EQ(Run({"delete", "--force", "cwdc"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
}


// The processes in container `id`'s groups, as every hierarchy lists them.
std::vector<pid_t> ProcsIn(const std::vector<std::string>& groups) {
  std::vector<pid_t> out;
  for (const std::string& g : groups) {
    for (const std::string& l : Lines(ReadFileOrEmpty(g + "/cgroup.procs"))) {
      out.push_back(static_cast<pid_t>(atoi(l.c_str())));
    }
  }
  return out;
}

// The runtime with --root `root` and `args`, in a session of its own, its stdio /dev/null,
// not waited for: a verb the test watches, or kills, while it runs.
pid_t SpawnVerb(const std::string& root, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"brig", "--root", root};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (std::string& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  std::string binary = RuntimeBinary();
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2; ++fd) dup2(null, fd);
    execv(binary.c_str(), c.data());
    _exit(127);
  }
  return pid;
}

// An engine that kills `create` mid-way (on its own timeout) must still be able to state,
// kill and delete the container: its init used to hold a copy of brig's end of the sync
// socket and the lock on the container's directory, and waited for ever, and every verb
// on that id with it. brig is killed while a hook of the phase named holds it there (the
// hook says so on a FIFO): prestart runs in brig while init waits for it, createContainer
// in init while brig waits.
TEST_F(OciDoors, AKilledCreateLeavesNoInitAndNoLockBehind) {
  int n = 0;
  for (const char* phase : {"prestart", "createContainer"}) {
    const std::string id = "killed" + std::to_string(n++);
    const std::string fifo = scratch_.path() + "/" + id + ".fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    Config c = Cfg(id);
    c.hooks_json = std::string("{\"") + phase + R"(":[{"path":"/bin/busybox","args":["sh","-c",)" +
                   R"("echo ran > )" + fifo + R"(; exec sleep )" + std::to_string(1000000 + n) +
                   R"("]}]})";
    std::string bundle = Bundle(c, id);
    pid_t create = SpawnVerb(root_, {"create", "--bundle", bundle, id});
    int r = open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(r, 0);
    ASSERT_EQ(ReadUntil(r, "\n"), "ran\n") << phase << ": the hook did not run";
    close(r);
    // Found from the host: a createContainer hook's $$ is a pid of the container's namespace.
    std::vector<pid_t> hook;
    ASSERT_TRUE(Eventually([&] {
      return (hook = FindProcesses("sleep " + std::to_string(1000000 + n))).size() == 1;
    })) << phase;
    ASSERT_EQ(kill(create, SIGKILL), 0);
    ASSERT_EQ(waitpid(create, nullptr, 0), create);
    // Gone already if it was in the container's pid namespace, whose init died with brig.
    ASSERT_TRUE(kill(hook[0], SIGKILL) == 0 || errno == ESRCH);
    std::vector<std::string> groups = GroupsOf(id);
    ASSERT_TRUE(Eventually([&] {
      ReapExited();
      return ProcsIn(groups).empty();
    })) << "killed in " << phase << ": the container's init outlived its create";
    RunOutput st = Run({"state", id});
    EXPECT_EQ(st.exit_code, 0) << st.err;
    EXPECT_EQ(ParseState(st.out).status, "creating") << st.out;
    RunOutput del = Run({"delete", "--force", id});
    EXPECT_EQ(del.exit_code, 0) << "killed in " << phase << ": " << del.err;
    EXPECT_FALSE(Exists(root_ + "/" + id));
  }
}

// A verb that cannot have the container's directory says who holds it, after a bounded
// wait, and `delete --force` wins over the holder.
TEST_F(OciDoors, AHeldContainerIsNamedAndForceDeleteWins) {
  if (!IsBrig()) GTEST_SKIP() << "brig's lock and its wording";
  pid_t init = CreateAndStart(Cfg("held"), "held", "sleep");
  ASSERT_GT(init, 0);
  int dir = open((root_ + "/held").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  ASSERT_EQ(flock(dir, LOCK_EX), 0);
  RunOutput st = Run({"state", "held"});
  EXPECT_EQ(st.exit_code, 1);
  EXPECT_EQ(Lines(st.err).size(), 1u) << st.err;
  EXPECT_NE(st.err.find("locked by pid " + std::to_string(getpid())), std::string::npos) << st.err;
  // The holder here is the test, not a process of the container: delete --force kills the
  // container and still waits for the lock, which the test then lets go.
  pid_t del = fork();
  if (del == 0) {
    setsid();
    execl(BrigBinary().c_str(), "brig", "--root", root_.c_str(), "delete", "--force", "held",
          nullptr);
    _exit(127);
  }
  EXPECT_TRUE(AwaitGone(init)) << "delete --force did not kill the container first";
  close(dir);
  int status = 0;
  ASSERT_EQ(waitpid(del, &status, 0), del);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(Exists(root_ + "/held"));
}

// `brig run --bundle` of `bundle` in a network namespace the test makes for it, so that
// what the container could write into "the host's" is this one's: its stdout and status.
RunOutput RunInAPrivateNetns(const std::string& root, const std::string& bundle,
                             const std::string& id) {
  RunOutput r;
  int out[2];
  if (pipe2(out, O_CLOEXEC) < 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (unshare(CLONE_NEWNET) < 0) _exit(120);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execl(RuntimeBinary().c_str(), "brig", "--root", root.c_str(), "run", "--bundle",
          bundle.c_str(), id.c_str(), nullptr);
    _exit(127);
  }
  close(out[1]);
  r.out = ReadUntil(out[0], "\x04");
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// A namespaced sysctl of a container without that namespace was written into brig's own,
// the host's: net.ipv4.ip_forward went 0 -> 1 on the host. It is refused before anything
// runs, as runc refuses it.
TEST_F(OciDoors, ASysctlNeverReachesANamespaceTheContainerDoesNotOwn) {
  Config c = Cfg("sysctl");
  c.namespaces = {"pid", "ipc", "uts", "mount", "cgroup"};
  c.args = {"cat", "/proc/sys/net/ipv4/ip_forward"};
  c.sysctl = {{"net.ipv4.ip_forward", "1"}};
  std::string bundle = Bundle(c, "sysctl");
  RunOutput r = RunInAPrivateNetns(root_, bundle, "sysctl");
  EXPECT_EQ(r.out.find("1\n"), std::string::npos) << "the sysctl was set outside: " << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("net.ipv4.ip_forward"), std::string::npos) << r.out;
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
}

// --no-pivot leaves the host's mounts under the container's root. A full proc among them
// let the container, root in a user namespace of its own, mount a new proc with nothing
// masked (the kernel allows it where a fully visible one is in the mount namespace): runc
// hides the host's first, and so does brig.
TEST_F(OciDoors, ANoPivotContainerNeverMountsABareProc) {
  Config c = Cfg("nopivot");
  // Root's id mapped to itself in the new user namespace (unshare -r) takes CAP_SETFCAP.
  for (auto* set : {&c.bounding, &c.effective, &c.permitted}) set->push_back("CAP_SETFCAP");
  c.args = {"unshare", "-mrpf", "sh", "-c",
            "echo in-its-own-userns; mount -t proc none /proc && echo bare-proc-mounted; true"};
  RunOutput r = Run({"run", "--no-pivot", "--bundle", Bundle(c, "nopivot"), "nopivot"});
  ASSERT_NE(r.out.find("in-its-own-userns"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("bare-proc-mounted"), std::string::npos) << r.out;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "run left its container";
}

// A startContainer hook runs in the container, and may be the image's own binary: it runs
// under the container's seccomp filter, as runc runs it, both where the filter loads
// last (no_new_privileges) and where it loads before the credentials. It used to run
// before a last-loaded filter, free of it.
TEST_F(OciDoors, AStartContainerHookRunsUnderTheContainersSeccompFilter) {
  for (bool nnp : {true, false}) {
    Config c = Cfg("hookfilter");
    c.no_new_privileges = nnp;
    c.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"mode=1777"}});
    c.seccomp_json =
        R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],)"
        R"("action":"SCMP_ACT_ERRNO","errnoRet":1}]})";
    c.hooks_json =
        R"({"startContainer":[{"path":"/bin/busybox","args":["sh","-c","mkdir /tmp/by-the-hook"]}]})";
    c.args = {"sh", "-c", "test -d /tmp/by-the-hook && echo hook-made-it; true"};
    RunOutput r =
        Run({"run", "--bundle", Bundle(c, nnp ? "hookfilter" : "hookfilter-nonnp"), "hookfilter"});
    EXPECT_NE(r.exit_code, 0) << "nnp " << nnp << ": the hook's mkdir was allowed: " << r.out;
    EXPECT_EQ(r.out.find("hook-made-it"), std::string::npos) << "nnp " << nnp;
    EXPECT_NE(r.err.find("hooks.startContainer"), std::string::npos) << r.err;
    EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "run left its container";
  }
}

// A user-namespaced container (podman --userns=auto, a pod with hostUsers: false) gets the
// host's device nodes bound in, which its root, an id the host maps elsewhere, can use but
// never chown, chmod or touch: the host's /dev/null was once seen owned by such a root.
// Oci::TearDown compares the host's nodes with what they were before (HostDevices).
TEST_F(OciDoors, AUserNamespacedContainerNeverChangesTheHostsDeviceNodes) {
  Config c = Cfg("devs");
  c.namespaces.push_back("user");
  c.map_to = 200000;
  c.args = {"sh", "-c",
            "for d in null zero full random urandom tty; do chown 0:0 /dev/$d; chmod 600 /dev/$d; "
            "touch /dev/$d; done 2>/dev/null; echo x > /dev/null && echo wrote"};
  RunOutput r = Run({"run", "--bundle", Bundle(c, "devs"), "devs"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote\n") << r.err;
}

// What a process of the container holds that is not the container's, from the host's view:
// its descriptors above stdio (the engine's), and a cwd or root that is not `rootfs`. `allowed`
// names the one descriptor it may still hold (a created init's exec.fifo).
// The descriptors of process `pid` above its stdio, other than one open on `allowed`.
std::vector<std::string> FdsAboveStdio(pid_t pid, const std::string& allowed = "") {
  std::vector<std::string> out;
  const std::string proc = "/proc/" + std::to_string(pid);
  auto link = [](const std::string& p) {
    char buf[4096];
    ssize_t n = readlink(p.c_str(), buf, sizeof buf);
    return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
  };
  for (const std::string& fd : ListDir(proc + "/fd")) {
    if (atoi(fd.c_str()) <= 2) continue;
    std::string to = link(proc + "/fd/" + fd);
    if (to != allowed) out.push_back("fd " + fd + " -> " + to);
  }
  return out;
}

std::vector<std::string> HostHeld(pid_t pid, const std::string& rootfs,
                                  const std::string& allowed = "") {
  std::vector<std::string> out = FdsAboveStdio(pid, allowed);
  const std::string proc = "/proc/" + std::to_string(pid);
  // The container's root is its own mount namespace's "/", whatever readlink shows from
  // here: the directory itself is compared. (Its process.cwd is "/".)
  struct stat want, st;
  if (stat(rootfs.c_str(), &want) < 0) return {"no " + rootfs};
  for (const char* what : {"cwd", "root"}) {
    if (stat((proc + "/" + what).c_str(), &st) < 0 || st.st_dev != want.st_dev ||
        st.st_ino != want.st_ino) {
      out.push_back(std::string(what) + " is not the container's root");
    }
  }
  return out;
}

// Every process the OCI verbs start holds, once its command runs, what native brig init
// holds: nothing of the host's but the stdio the engine gave it, its cwd and root inside
// the container's. Init holds only exec.fifo between create and start.
TEST_F(OciDoors, EveryProcessTheVerbsStartHoldsNothingOfTheHosts) {
  if (!IsBrig()) GTEST_SKIP() << "runc's init holds its exec fifo as a /proc path";
  std::string bundle = Bundle(Cfg("held1"), "held1");
  const std::string rootfs = bundle + "/rootfs";
  pid_t init = CreateFrom(bundle, "held1");
  ASSERT_GT(init, 0);
  EXPECT_EQ(HostHeld(init, rootfs, root_ + "/held1/exec.fifo"), std::vector<std::string>{})
      << "container init after create";
  ASSERT_EQ(Run({"start", "held1"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Comm(init) == "sleep"; }));
  EXPECT_EQ(HostHeld(init, rootfs), std::vector<std::string>{}) << "container init after start";
  const std::string pid_file = scratch_.path() + "/exec.pid";
  for (bool tty : {false, true}) {
    std::vector<std::string> args = {"exec", "--detach", "--pid-file", pid_file};
    std::unique_ptr<ConsoleSocket> console;
    if (tty) {
      console = std::make_unique<ConsoleSocket>(scratch_.path() + "/console.sock");
      ASSERT_TRUE(console->ok());
      args.insert(args.end(), {"--tty", "--console-socket", scratch_.path() + "/console.sock"});
    }
    args.insert(args.end(), {"held1", "sleep", "997"});
    RunOutput e = Run(args);
    ASSERT_EQ(e.exit_code, 0) << e.err;
    pid_t p = static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));
    ASSERT_TRUE(Eventually([&] { return Comm(p) == "sleep"; }));
    EXPECT_EQ(HostHeld(p, rootfs), std::vector<std::string>{}) << "exec --detach, tty " << tty;
  }
  // An attached exec: its process, not brig's, is checked while brig waits for it.
  pid_t attached = SpawnVerb(root_, {"exec", "held1", "sleep", "995"});
  std::vector<pid_t> found;
  // Once its comm is sleep's: execve shows the new command line before it closes the
  // descriptors marked close-on-exec, and sets the comm after.
  ASSERT_TRUE(Eventually([&] {
    return (found = FindProcesses("sleep 995")).size() == 1 && Comm(found[0]) == "sleep";
  }));
  EXPECT_EQ(HostHeld(found[0], rootfs), std::vector<std::string>{}) << "exec, attached";
  ASSERT_EQ(kill(found[0], SIGKILL), 0);
  ASSERT_EQ(waitpid(attached, nullptr, 0), attached);
  Config c = Cfg("held2");
  std::string b2 = Bundle(c, "held2");
  RunOutput d = Run({"run", "--detach", "--pid-file", pid_file, "--bundle", b2, "held2"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  pid_t p2 = static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));
  ASSERT_TRUE(Eventually([&] { return Comm(p2) == "sleep"; }));
  EXPECT_EQ(HostHeld(p2, b2 + "/rootfs"), std::vector<std::string>{}) << "run --detach";
  EXPECT_EQ(Run({"delete", "--force", "held1"}).exit_code, 0);
  EXPECT_EQ(Run({"delete", "--force", "held2"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
  EXPECT_TRUE(AwaitGone(p2));
}

// A hook holds what the engine gave it (the state on stdin, stdout, stderr) and nothing
// else of brig's: the hooks of the runtime's namespaces (prestart, createRuntime,
// poststart) as much as those run in the container's (createContainer, startContainer);
// startContainer's runs with the container's root and cwd, as its command will. Each hook
// says on a FIFO that it runs, and is checked from the host while it sleeps.
TEST_F(OciDoors, AHookProcessHoldsNothingOfBrigs) {
  if (!IsBrig()) GTEST_SKIP() << "brig's hooks";
  int n = 0;
  for (const char* phase :
       {"prestart", "createRuntime", "createContainer", "startContainer", "poststart"}) {
    const std::string id = "hook" + std::to_string(n);
    const std::string sleep = std::to_string(990000 + n++);
    Config c = Cfg(id);
    bool inside = std::string(phase) == "startContainer";
    // startContainer's runs after pivot_root: its FIFO is in the rootfs.
    std::string fifo = inside ? "/hook.fifo" : scratch_.path() + "/" + id + ".fifo";
    c.hooks_json = std::string("{\"") + phase + R"(":[{"path":"/bin/busybox","args":["sh","-c",)" +
                   R"("echo ran > )" + fifo + R"(; exec sleep )" + sleep + R"("]}]})";
    std::string bundle = Bundle(c, id);
    if (inside) fifo = bundle + "/rootfs/hook.fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
    pid_t verb = SpawnVerb(root_, {"run", "--detach", "--bundle", bundle, id});
    int r = open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(r, 0);
    EXPECT_EQ(ReadUntil(r, "\n"), "ran\n") << phase << ": the hook did not run";
    close(r);
    std::vector<pid_t> hook;
    ASSERT_TRUE(Eventually([&] {
      return (hook = FindProcesses("sleep " + sleep)).size() == 1 && Comm(hook[0]) == "sleep";
    })) << phase;
    // Until the loader of its (dynamically linked) sleep has closed the libc it opens for a
    // moment after execve.
    std::vector<std::string> held;
    EXPECT_TRUE(Eventually([&] {
      held = inside ? HostHeld(hook[0], bundle + "/rootfs") : FdsAboveStdio(hook[0]);
      return held.empty();
    })) << phase << ": " << (held.empty() ? "" : held[0]);
    ASSERT_EQ(kill(hook[0], SIGKILL), 0);
    ASSERT_EQ(waitpid(verb, nullptr, 0), verb);
    EXPECT_EQ(Run({"delete", "--force", id}).exit_code, 0) << phase;
  }
}

// A foreground run holds the signals it passes on to the container; a hook it runs gets
// none of them blocked (a hook ran with SIGTERM and SIGINT blocked, and could be ended
// only by SIGKILL).
TEST_F(OciDoors, AHookOfAForegroundRunBlocksNoSignal) {
  if (!IsBrig()) GTEST_SKIP() << "brig's hooks";
  // The hook is grep itself, reading its own mask as brig's execve left it: a shell would
  // show its own, which glibc blocks wholly while the shell forks.
  Config c = Cfg("hookmask");
  c.args = {"true"};
  c.hooks_json =
      R"({"prestart":[{"path":"/bin/grep","args":["grep","SigBlk","/proc/self/status"]}]})";
  RunOutput r = Run({"run", "--bundle", Bundle(c, "hookmask"), "hookmask"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "SigBlk:\t0000000000000000\n");
}

// Between create and start, the container's process is brig's binary in the container's
// namespaces, already as the container's user: it must not be dumpable (runc
// CVE-2019-5736), or a process of that user could trace it or open it through /proc. The
// kernel shows it: a process that is not dumpable has its /proc files owned by the root of
// the user namespace its memory was made in (brig's: the host's, 0), one that is, by its
// own uid (here host 201000).
//
// Whatever fs.suid_dumpable says (SuidDumpableSettings): brig makes its process not
// dumpable after each change of ids.
TEST_F(OciDoors, ACreatedContainersProcessIsNotDumpableUntilItsCommandRuns) {
  for (const std::string& setting : SuidDumpableSettings()) {
    SCOPED_TRACE("fs.suid_dumpable " + (setting.empty() ? "as the kernel has it" : setting));
    ScopedSuidDumpable knob(setting);
    ASSERT_TRUE(knob.ok());
    Config c = Cfg("dump");
    c.namespaces.push_back("user");
    c.map_to = 200000;
    c.uid = c.gid = 1000;
    c.args = {"sleep", "996"};
    pid_t init = Create(c, "dump");
    ASSERT_GT(init, 0);
    auto owner = [&] {
      struct stat st;
      return stat(("/proc/" + std::to_string(init) + "/status").c_str(), &st) == 0 ? st.st_uid
                                                                                    : 0u;
    };
    EXPECT_EQ(Fields(ReadFileOrEmpty("/proc/" + std::to_string(init) + "/status"))["Uid"],
              "201000 201000 201000 201000")
        << "not yet the container's user";
    EXPECT_EQ(owner(), 0u) << "dumpable before its command";
    ASSERT_EQ(Run({"start", "dump"}).exit_code, 0);
    ASSERT_TRUE(Eventually([&] { return Comm(init) == "sleep"; }));
    EXPECT_EQ(owner(), 201000u) << "the command itself is the container's, dumpable";
    EXPECT_EQ(Run({"delete", "--force", "dump"}).exit_code, 0);
    EXPECT_TRUE(AwaitGone(init));
  }
}

// A masked file is covered by the container's /dev/null only if that is the null device
// (runc CVE-2025-31133): a bundle that binds its own /dev, whose null is a file, a
// symlink (even one to the host's real node) or another device, is refused at create
// (at the first of runc's masked files this kernel has), and nothing is put over it.
TEST_F(OciDoors, AMaskedFileIsNeverCoveredByAFakeDevNull) {
  if (!IsBrig()) GTEST_SKIP() << "brig's own check of the node it masks with";
  const std::vector<std::pair<std::string, std::function<int(const std::string&)>>> fakes = {
      {"a regular file", [](const std::string& p) { return close(creat(p.c_str(), 0666)); }},
      {"a symlink to the host's /dev/null",
       [](const std::string& p) { return symlink("/dev/null", p.c_str()); }},
      {"a symlink to a file",
       [](const std::string& p) { return symlink("/etc/passwd", p.c_str()); }},
      {"the zero device",
       [](const std::string& p) { return mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 5)); }},
  };
  int n = 0;
  for (const auto& [what, make] : fakes) {
    std::string id = "fakenull" + std::to_string(n++);
    Config c = Cfg(id);
    std::string dev = scratch_.path() + "/" + id + "-dev";
    c.mounts = {{"/proc", "proc", "proc", {}}, {"/dev", "bind", dev, {"rbind"}}};
    ASSERT_EQ(mkdir(dev.c_str(), 0755), 0);
    ASSERT_EQ(make(dev + "/null"), 0) << what;
    RunOutput r = Run({"create", "--bundle", Bundle(c, id), id});
    ExpectCleanFailure(r, id);
    EXPECT_NE(r.err.find("linux.maskedPaths: mask '/proc/"), std::string::npos)
        << what << ": " << r.err;
    EXPECT_NE(r.err.find("': /dev/null is not the null device"), std::string::npos)
        << what << ": " << r.err;
  }
}

// A bind source whose host mount is read-only stays read-only in a user-namespaced
// container, even for a root that holds CAP_SYS_ADMIN there and whose ids own the files:
// the kernel locks a mount's flags when it copies the host's mounts into a namespace that a
// less privileged user namespace owns, and the source is bound from that copy. (A tree
// cloned on the host with open_tree and attached there carries no lock: a container
// remounted such a bind read-write and wrote through it.)
// The same holds for an id-mapped bind, whose copy brig makes inside that namespace.
TEST_F(OciDoors, AUserNamespacedContainerNeverClearsTheHostsReadOnlyOnABindSource) {
  std::string src = scratch_.path() + "/lock-src", ro = scratch_.path() + "/lock-ro";
  ASSERT_EQ(mkdir(src.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(ro.c_str(), 0755), 0);
  ASSERT_EQ(mount(src.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr), 0);
  std::shared_ptr<void> unmount(nullptr, [&](void*) { umount2(ro.c_str(), MNT_DETACH); });
  ASSERT_EQ(mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0);
  for (bool idmapped : {false, true}) {
    SCOPED_TRACE(idmapped ? "id-mapped" : "plain");
    // (The id-mapped case where the kernel can id-map the scratch directory's file system.)
    if (idmapped && !IdMappable(src)) continue;
    // The container's root owns the source either way: host 200000, or on disk 0 mapped.
    ASSERT_EQ(chown(src.c_str(), idmapped ? 0 : 200000, idmapped ? 0 : 200000), 0);
    Config c = Cfg("lock");
    c.namespaces.push_back("user");
    c.map_to = 200000;
    c.bounding = c.effective = c.permitted = {"CAP_SYS_ADMIN"};
    c.mounts.push_back({"/mnt", "bind", ro, {"rbind"}, idmapped ? 200000u : 0u});
    c.args = {"sh", "-c",
              "stat -c owner=%u /mnt; mount -o remount,bind,rw /mnt 2>/dev/null; "
              "echo remount=$?; echo x > /mnt/f 2>/dev/null; echo write=$?"};
    RunOutput r = Run({"run", "--bundle", Bundle(c, "lock"), "lock"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "owner=0\nremount=1\nwrite=1\n") << r.err;
    struct stat st;
    EXPECT_NE(lstat((src + "/f").c_str(), &st), 0) << "the container wrote to the host";
  }
}

}  // namespace
}  // namespace brig::testing::oci
