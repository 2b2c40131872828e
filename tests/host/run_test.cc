// brig run, host tier: the sandbox as the workload sees it, and the output contract.
#include <google/protobuf/util/json_util.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "proto/brig.pb.h"
#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Run : public HostTest {};

TEST_F(Run, EveryNamespaceIsNew) {
  const char* kNs[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
  std::string script;
  for (const char* n : kNs) script += std::string("readlink /proc/self/ns/") + n + "; ";
  auto r = Sh(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  for (const char* n : kNs) {
    std::string inside;
    std::getline(in, inside);
    EXPECT_EQ(inside.rfind(std::string(n) + ":[", 0), 0u) << inside;
    EXPECT_NE(inside, HostNs(n)) << n << " namespace is the host's";
  }
}

TEST_F(Run, SeesOnlyItsOwnProcesses) {
  auto r = Sh("ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  int pid, count = 0;
  while (in >> pid) {
    EXPECT_LT(pid, 20) << "a pid that belongs to no process of the sandbox: " << r.out;
    ++count;
  }
  EXPECT_GE(count, 2);
  EXPECT_LE(count, 6) << r.out;
  // pid 1 is brig init, and its command line says nothing of the supervisor's.
  auto c = Sh("tr -d '\\0' < /proc/1/cmdline");
  EXPECT_EQ(c.out, "brig-init");
}

TEST_F(Run, CapabilitiesNoNewPrivsSeccomp) {
  auto r = Sh("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Uid|Gid|Groups):' "
              "/proc/self/status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_NE(r.out.find(std::string(cap) + ":\t0000000000000000"), std::string::npos)
        << cap << " not empty:\n" << r.out;
  }
  EXPECT_NE(r.out.find("NoNewPrivs:\t1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Seccomp:\t2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Uid:\t1000\t1000\t1000\t1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Gid:\t1000\t1000\t1000\t1000"), std::string::npos) << r.out;
  // No supplementary group of the host's root survives.
  size_t g = r.out.find("Groups:");
  ASSERT_NE(g, std::string::npos);
  std::string groups = r.out.substr(g + 7, r.out.find('\n', g) - g - 7);
  EXPECT_EQ(groups.find_first_not_of(" \t"), std::string::npos) << "groups: " << groups;
}

// brig init (pid 1) took the same credentials before it forked the workload: it holds
// nothing the workload could reach through it.
TEST_F(Run, BrigInitHoldsNoCapabilityEither) {
  auto r = Sh("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Uid):' /proc/1/status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_NE(r.out.find(std::string(cap) + ":\t0000000000000000"), std::string::npos)
        << cap << " not empty:\n" << r.out;
  }
  EXPECT_NE(r.out.find("NoNewPrivs:\t1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Uid:\t1000\t1000\t1000\t1000"), std::string::npos) << r.out;
}

TEST_F(Run, HostRootIsNeverMapped) {
  auto r = Sh("cat /proc/self/uid_map /proc/self/gid_map");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  long inside, outside, count;
  int lines = 0;
  while (in >> inside >> outside >> count) {
    EXPECT_NE(outside, 0) << r.out;
    EXPECT_EQ(count, 1);
    ++lines;
  }
  EXPECT_EQ(lines, 2);
}

TEST_F(Run, RootAndHostPathsAreReadOnly) {
  ScratchDir ws;
  auto r = Sh(
      "for p in /x /usr/x /etc/x /etc/passwd /workspace/x /proc/sys/kernel/hostname "
      "/dev/x /lib/x; do if (echo x > $p) 2>/dev/null; then echo WROTE $p; fi; done; "
      "echo done",
      {"--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  // /tmp is writable but the sandbox's own: nothing reaches the host.
  auto t = Sh("echo x > /tmp/brig-test-marker && cat /tmp/brig-test-marker");
  EXPECT_EQ(t.out, "x\n");
  EXPECT_NE(access("/tmp/brig-test-marker", F_OK), 0);
}

TEST_F(Run, FilesystemLayout) {
  auto r = Sh("ls -A / | tr '\\n' ' '; echo; ls /dev | tr '\\n' ' '; echo; "
              "grep -c . /etc/passwd; test -e /etc/shadow || echo noshadow; "
              "test -e /sys || echo nosys; test -e /home || echo nohome; "
              "test -e /root || echo noroot; test -e /run || echo norun; pwd; hostname");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string root, dev, passwd_lines;
  std::getline(in, root);
  std::getline(in, dev);
  EXPECT_NE(root.find("workspace"), std::string::npos) << root;
  EXPECT_NE(root.find("usr"), std::string::npos) << root;
  EXPECT_EQ(dev, "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ");
  for (const char* absent : {"noshadow", "nosys", "nohome", "noroot", "norun"}) {
    EXPECT_NE(r.out.find(absent), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("/workspace\nsandbox\n"), std::string::npos) << r.out;
}

TEST_F(Run, ProcHasMaskedAndReadOnlyPaths) {
  // Every OCI masked path this kernel has must read as empty inside.
  std::string script;
  int present = 0;
  for (const char* p : {"acpi", "asound", "kcore", "keys", "latency_stats", "timer_list",
                        "timer_stats", "sched_debug", "scsi"}) {
    std::string path = std::string("/proc/") + p;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    ++present;
    script += S_ISDIR(st.st_mode) ? "ls -A " + path + " | wc -l; " : "wc -c < " + path + "; ";
  }
  ASSERT_GT(present, 0);
  script += "if (echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null; then echo WROTE; fi; "
            "if (echo b > /proc/sysrq-trigger) 2>/dev/null; then echo WROTE; fi; echo ok";
  auto r = Sh(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expect;
  for (int i = 0; i < present; ++i) expect += "0\n";
  EXPECT_EQ(r.out, expect + "ok\n");
}

TEST_F(Run, TmpIsSizeCapped) {
  auto r = Sh("dd if=/dev/zero of=/tmp/big bs=1M count=8 2>/dev/null; echo $?; "
              "df -k /tmp | tail -1 | awk '{print $2}'",
              {"--tmp-size", "4M"});
  std::istringstream in(r.out);
  int dd_rc = 0;
  long size_kb = 0;
  in >> dd_rc >> size_kb;
  EXPECT_NE(dd_rc, 0) << "wrote 8M into a 4M /tmp";
  EXPECT_EQ(size_kb, 4096);
}

TEST_F(Run, RootfsDirectoryReplacesTheHostRoot) {
  ScratchDir rootfs;
  ASSERT_EQ(mkdir((rootfs.path() + "/bin").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((rootfs.path() + "/etc").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((rootfs.path() + "/proc").c_str(), 0755), 0);  // brig provides its own
  rootfs.Write("etc/os-release", "ID=brig-test\n");
  ASSERT_EQ(symlink("bin", (rootfs.path() + "/sbin").c_str()), 0);
  std::string copy = "cp " + ProbeBinary() + " " + rootfs.path() + "/bin/probe";
  ASSERT_EQ(system(copy.c_str()), 0);
  auto r = RunBrig({"run", "--rootfs", rootfs.path(), "--", "/sbin/probe", "ls", "/"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::set<std::string> entries;
  for (std::string e; in >> e;) entries.insert(e);
  EXPECT_EQ(entries, (std::set<std::string>{"bin", "dev", "etc", "proc", "sbin", "tmp",
                                            "workspace"}));
  auto etc = RunBrig({"run", "--rootfs", rootfs.path(), "--", "/bin/probe", "ls", "/etc"});
  EXPECT_EQ(etc.out, "os-release \n");
  auto w = RunBrig({"run", "--rootfs", rootfs.path(), "--", "/bin/probe", "write",
                    "/etc/os-release"});
  EXPECT_EQ(w.out.rfind("denied EROFS", 0), 0u) << w.out;
  EXPECT_EQ(ReadFileOrEmpty(rootfs.path() + "/etc/os-release"), "ID=brig-test\n");
}

// --layer: thin per-repo layers stacked on a shared base with overlayfs. The topmost layer
// that has a file wins, a layer's whiteout deletes a base file, a layer adds new top-level
// entries, and every layer (and the base) stays read-only and unchanged.
TEST_F(Run, LayersStackOnTheRootfs) {
  ScratchDir base, l1, l2;
  for (const char* d : {"bin", "etc", "usr", "usr/share"}) {
    ASSERT_EQ(mkdir((base.path() + "/" + d).c_str(), 0755), 0) << d;
  }
  ASSERT_EQ(system(("cp " + ProbeBinary() + " " + base.path() + "/bin/probe").c_str()), 0);
  base.Write("etc/os-release", "ID=base\n");
  base.Write("usr/share/base-only", "base\n");
  base.Write("usr/share/gone", "deleted by a layer\n");
  for (const char* d : {"etc", "usr", "usr/share"}) {
    ASSERT_EQ(mkdir((l1.path() + "/" + d).c_str(), 0755), 0) << d;
  }
  l1.Write("etc/os-release", "ID=layer1\n");
  l1.Write("usr/share/layer1", "layer1\n");
  // A whiteout; overlayfs refuses to make one, so where /tmp is itself an overlay (the vm
  // tier's root) the layer deletes nothing.
  bool whiteout = mknod((l1.path() + "/usr/share/gone").c_str(), S_IFCHR, makedev(0, 0)) == 0;
  ASSERT_EQ(mkdir((l2.path() + "/etc").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((l2.path() + "/opt").c_str(), 0755), 0);
  l2.Write("etc/os-release", "ID=layer2\n");
  l2.Write("opt/tool", "tool\n");
  std::vector<std::string> run = {"run", "--rootfs", base.path(), "--layer", l1.path(),
                                  "--layer", l2.path(), "--", "/bin/probe"};
  auto cat = [&](const std::string& path) {
    auto args = run;
    args.insert(args.end(), {"cat", path});
    return RunBrig(args).out;
  };
  EXPECT_EQ(cat("/etc/os-release"), "ID=layer2\n") << "the last --layer is on top";
  EXPECT_EQ(cat("/usr/share/base-only"), "base\n");
  EXPECT_EQ(cat("/usr/share/layer1"), "layer1\n");
  EXPECT_EQ(cat("/opt/tool"), "tool\n");
  auto ls = run;
  ls.insert(ls.end(), {"ls", "/usr/share"});
  std::istringstream listed(RunBrig(ls).out);
  std::set<std::string> share;
  for (std::string e; listed >> e;) share.insert(e);
  std::set<std::string> want = {"base-only", "layer1"};
  if (!whiteout) want.insert("gone");
  EXPECT_EQ(share, want) << "a layer's whiteout deletes";
  for (const char* path : {"/etc/os-release", "/usr/share/new", "/opt/new"}) {
    auto w = run;
    w.insert(w.end(), {"write", path});
    EXPECT_EQ(RunBrig(w).out.rfind("denied EROFS", 0), 0u) << path;
  }
  EXPECT_EQ(ReadFileOrEmpty(base.path() + "/etc/os-release"), "ID=base\n");
  EXPECT_EQ(ReadFileOrEmpty(l1.path() + "/etc/os-release"), "ID=layer1\n");
  // The audit names the stack.
  ScratchDir logs;
  auto audited = run;
  audited.insert(audited.begin() + 1, {"--audit-log", logs.path() + "/audit"});
  audited.insert(audited.end(), {"ls", "/"});
  ASSERT_EQ(RunBrig(audited).exit_code, 0);
  EXPECT_NE(ReadFileOrEmpty(logs.path() + "/audit")
                .find("\"layers\":[\"" + l1.path() + "\",\"" + l2.path() + "\"]"),
            std::string::npos)
      << ReadFileOrEmpty(logs.path() + "/audit");
  auto bad = RunBrig({"run", "--layer", l1.path(), "--", "true"});
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_NE(bad.err.find("--layer '" + l1.path() + "': needs a --rootfs to stack on"),
            std::string::npos) << bad.err;
}

TEST_F(Run, ReadOnlyWorkspace) {
  ScratchDir ws;
  ws.Write("hello.txt", "hello\n");
  auto r = Sh("cat hello.txt; if (echo x > new.txt) 2>/dev/null; then echo WROTE; fi",
              {"--workspace", ws.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_NE(access((ws.path() + "/new.txt").c_str(), F_OK), 0);
}

TEST_F(Run, ReadWriteWorkspaceWritesAsItsOwner) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 2345), 0);
  auto r = Sh("echo made > /workspace/made.txt && mkdir sub && id -u",
              {"--workspace", ws.path(), "--profile", RwProfile()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1000\n");
  struct stat st;
  ASSERT_EQ(stat((ws.path() + "/made.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 2345u);
  ASSERT_EQ(stat((ws.path() + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/made.txt"), "made\n");
}

TEST_F(Run, WorkspaceGivenThroughASymlink) {
  ScratchDir ws, links;
  ws.Write("through-link.txt", "found\n");
  std::string link = links.path() + "/ws-link";
  ASSERT_EQ(symlink(ws.path().c_str(), link.c_str()), 0);
  auto r = Sh("cat /workspace/through-link.txt", {"--workspace", link});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "found\n");
}

TEST_F(Run, RlimitsApplyAndCanBeOverridden) {
  const std::string nproc = "; awk '/Max processes/ {print $3}' /proc/self/limits";
  auto r = Sh("ulimit -n; ulimit -c" + nproc);
  EXPECT_EQ(r.out, "4096\n0\n4096\n") << r.err;
  auto o = Sh("ulimit -n" + nproc, {"--rlimit", "nofile=256", "--rlimit", "nproc=100"});
  EXPECT_EQ(o.out, "256\n100\n") << o.err;
  // The limits are the workload's: brig init keeps working with a tiny nofile.
  auto tiny = Probe({"fds"}, {"--rlimit", "nofile=4"});
  EXPECT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_EQ(tiny.out, "0 1 2 \n");
  struct rlimit hard;
  getrlimit(RLIMIT_NOFILE, &hard);
  if (hard.rlim_max != RLIM_INFINITY) {
    auto too_high = Sh("true", {"--rlimit", "nofile=unlimited"});
    EXPECT_EQ(too_high.exit_code, 125);
    EXPECT_NE(too_high.err.find("above brig's own hard limit"), std::string::npos) << too_high.err;
  }
}

// A root-owned 0700 tree, as a harness hands over a checkout root made: the sandbox user
// (host uid 65534, since host root is never mapped) reads it as its owner through an
// id-mapped mount, and it is still read-only.
TEST_F(Run, RootOwnedWorkspaceIsReadThroughAnIdMap) {
  ScratchDir ws;  // owned by root
  ASSERT_EQ(chmod(ws.path().c_str(), 0700), 0);
  ws.Write("file", "root's\n", 0600);
  auto r = Sh("cat /workspace/file && stat -c %u:%g /workspace /workspace/file && id -u && "
              "if touch /workspace/new 2>/dev/null; then echo WROTE; fi",
              {"--workspace", ws.path()});
  if (r.err.find("does not support id-mapped mounts") != std::string::npos) {
    GTEST_SKIP() << r.err;  // the vm tier's /tmp is on overlayfs, which cannot be id-mapped
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "root's\n1000:1000\n1000:1000\n1000\n");
  EXPECT_NE(access((ws.path() + "/new").c_str(), F_OK), 0);
}

TEST_F(Run, RootOwnedWorkspaceIsRefusedReadWrite) {
  ScratchDir ws;  // owned by root
  ASSERT_EQ(chmod(ws.path().c_str(), 0700), 0);
  auto r = Sh("touch /workspace/x", {"--workspace", ws.path(), "--profile", RwProfile()});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("workspace '" + ws.path() +
                       "': owned by root (uid 0); brig will not write through an id map onto a "
                       "root-owned tree (a set-uid path onto the host); use a copy workspace"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(access((ws.path() + "/x").c_str(), F_OK), 0);
}

// The sandbox user runs as the workspace's owner: a workspace its owner may not enter is
// refused before anything starts, not reported as a command that cannot be run.
TEST_F(Run, AWorkspaceItsOwnerMayNotEnterIsRefused) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ASSERT_EQ(chmod(ws.path().c_str(), 0070), 0);
  auto r = Sh("true", {"--workspace", ws.path()});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("mode 0070: its owner (uid 1234), as whom the sandbox user runs, may not "
                       "read and enter it"),
            std::string::npos)
      << r.err;
  ASSERT_EQ(chmod(ws.path().c_str(), 0500), 0);
  auto w = Sh("true", {"--workspace", ws.path(), "--profile", RwProfile()});
  EXPECT_EQ(w.exit_code, 125);
  EXPECT_NE(w.err.find("may not read, write and enter it"), std::string::npos) << w.err;
}

// The default seccomp policy must not get in the way of ordinary build and agent work.
TEST_F(Run, RealWorkloadsRunUnderTheDefaultPolicy) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  const std::pair<const char*, const char*> steps[] = {
      {"git", "git init -q r && cd r && git config user.email a@b && git config user.name a "
              "&& echo x > f && git add f && git commit -qm first && git log --oneline | wc -l"},
      {"gcc", "printf '#include <stdio.h>\\nint main(void){puts(\"c-ok\");return 0;}' > m.c "
              "&& gcc m.c -o m && ./m"},
      {"python3", "python3 -c 'import subprocess, threading; "
                  "print(subprocess.run([\"echo\", \"py-ok\"], capture_output=True, "
                  "text=True).stdout.strip())'"},
      {"node", "node -e 'require(\"child_process\").execFileSync(\"true\"); "
               "console.log(\"node-ok\")'"},
  };
  int ran = 0;
  for (const auto& [tool, script] : steps) {
    std::string which = std::string("command -v ") + tool + " >/dev/null";
    if (system(which.c_str()) != 0) continue;  // this host lacks the tool
    ++ran;
    auto r = Sh(script, {"--workspace", ws.path(), "--profile", RwProfile()});
    EXPECT_EQ(r.exit_code, 0) << tool << ": " << r.err;
    EXPECT_FALSE(r.out.empty()) << tool;
  }
  EXPECT_GE(ran, 2) << "too few of git, gcc, python3, node on this host";
}

TEST_F(Run, StdoutAndStderrStaySeparate) {
  auto r = Sh("echo to-out; echo to-err >&2; echo more-out");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "to-out\nmore-out\n");
  EXPECT_EQ(r.err, "to-err\n");
}

TEST_F(Run, ExitStatusIsPropagated) {
  EXPECT_EQ(Sh("exit 0").exit_code, 0);
  EXPECT_EQ(Sh("exit 42").exit_code, 42);
  EXPECT_EQ(Sh("kill -KILL $$").exit_code, 128 + 9);
  EXPECT_EQ(Sh("kill -TERM $$").exit_code, 128 + 15);
  EXPECT_EQ(Sh("kill -SEGV $$").exit_code, 128 + 11);
}

TEST_F(Run, EnvironmentIsBuiltFromNothing) {
  setenv("BRIG_TEST_SECRET", "hunter2", 1);
  setenv("BRIG_TEST_PASSED", "visible", 1);
  auto r = Sh("env | sort", {"--pass-env", "BRIG_TEST_PASSED", "--env", "EXTRA=1"});
  unsetenv("BRIG_TEST_SECRET");
  unsetenv("BRIG_TEST_PASSED");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BRIG_TEST_PASSED=visible\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("EXTRA=1\n"), std::string::npos);
  EXPECT_NE(r.out.find("HOME=/tmp\n"), std::string::npos);
  EXPECT_NE(r.out.find("PATH=/usr/local/sbin:"), std::string::npos);
}

TEST_F(Run, ResultFileFollowsTheContract) {
  ScratchDir out;
  std::string path = out.path() + "/result.json";
  auto r = Sh("exit 3", {"--result", path});
  EXPECT_EQ(r.exit_code, 3);
  v1::RunResult res;
  std::string json = ReadFileOrEmpty(path);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
  EXPECT_FALSE(res.ok());
  EXPECT_EQ(res.exit_code(), 3);
  EXPECT_EQ(res.error_code(), "");
  EXPECT_EQ(res.sandbox_id().rfind("brig-", 0), 0u);
  EXPECT_GT(res.duration_ms(), 0);
  EXPECT_NE(json.find("\"exit_code\":3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"duration_ms\":"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"duration_ms\":\""), std::string::npos) << "a number, not a string";
  EXPECT_NE(json.find("\"ok\":false"), std::string::npos) << json;

  auto nf = RunBrig({"run", "--result", path, "--", "no-such-command-anywhere"});
  EXPECT_EQ(nf.exit_code, 127);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFileOrEmpty(path), &res).ok());
  EXPECT_EQ(res.error_code(), "not_found");
  EXPECT_EQ(res.exit_code(), 127);

  auto sig = Sh("kill -KILL $$", {"--result", path});
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFileOrEmpty(path), &res).ok());
  EXPECT_EQ(res.signal(), 9);
  EXPECT_EQ(res.exit_code(), 137);
}

TEST_F(Run, CommandNotFoundOrNotExecutable) {
  ScratchDir ws;
  ws.Write("script.sh", "#!/bin/sh\necho hi\n", 0644);
  auto nf = RunBrig({"run", "--", "no-such-command-anywhere"});
  EXPECT_EQ(nf.exit_code, 127);
  EXPECT_NE(nf.err.find("no-such-command-anywhere"), std::string::npos) << nf.err;
  EXPECT_EQ(RunBrig({"run", "--", "/no/such/path"}).exit_code, 127);
  auto ne = RunBrig({"run", "--workspace", ws.path(), "--", "/workspace/script.sh"});
  EXPECT_EQ(ne.exit_code, 126) << ne.err;
  EXPECT_NE(ne.err.find("permission denied"), std::string::npos) << ne.err;
  EXPECT_EQ(RunBrig({"run", "--", "/usr"}).exit_code, 126);
  // One line each.
  EXPECT_EQ(std::count(nf.err.begin(), nf.err.end(), '\n'), 1) << nf.err;
}

// As a harness author writes it: the command is looked up as a shell in /workspace would,
// relative paths and PATH entries from there, with execvp(3)'s 126 and 127.
TEST_F(Run, CommandsResolveInTheWorkingDirectory) {
  ScratchDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  ws.Write("run.sh", "#!/bin/sh\necho ran \"$@\" in \"$PWD\"\n", 0755);
  ws.Write("plain.txt", "not a program\n", 0644);
  ws.Write("no-shebang", "echo run by sh\n", 0755);
  ASSERT_EQ(mkdir((ws.path() + "/bin").c_str(), 0755), 0);
  ws.Write("bin/tool", "#!/bin/sh\necho tool\n", 0755);
  auto run = [&](std::vector<std::string> cmd, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"run", "--workspace", ws.path()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    return RunBrig(args);
  };
  auto rel = run({"./run.sh", "a"});
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_EQ(rel.out, "ran a in /workspace\n");
  EXPECT_EQ(run({"bin/tool"}).out, "tool\n");
  auto missing = run({"./missing"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.err, "brig: command './missing': no such file or directory\n");
  EXPECT_EQ(run({"./plain.txt/x"}).exit_code, 127);  // ENOTDIR
  auto plain = run({"./plain.txt"});
  EXPECT_EQ(plain.exit_code, 126);
  EXPECT_EQ(plain.err, "brig: command './plain.txt': permission denied\n");
  EXPECT_EQ(run({"./bin"}).exit_code, 126);
  auto sh = run({"./no-shebang"});
  EXPECT_EQ(sh.exit_code, 0) << sh.err;
  EXPECT_EQ(sh.out, "run by sh\n");
  auto path = run({"id", "-u"});
  EXPECT_EQ(path.out, "1000\n") << path.err;
  EXPECT_EQ(run({"tool"}).exit_code, 127);  // the working directory is not on PATH
  EXPECT_EQ(run({"tool"}, {"--env", "PATH=bin:/usr/bin:/bin"}).out, "tool\n");
  // Without isolation the command runs from the workspace too.
  auto none = run({"./run.sh", "b"}, {"--profile", "none"});
  EXPECT_EQ(none.out, "ran b in " + ws.path() + "\n") << none.err;
  EXPECT_EQ(run({"tool"}, {"--profile", "none", "--env", "PATH=bin:/usr/bin:/bin"}).out,
            "tool\n");
}

}  // namespace
}  // namespace brig::testing
