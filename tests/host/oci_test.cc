// The OCI runtime verbs as a client (containerd's shim, podman) sees them: exit codes,
// output, state JSON, and what is left on the host. The runtime under test is
// BRIG_OCI_RUNTIME if set (runc takes the same command line), else brig; what only brig
// promises (its wording) is checked when IsBrig() (oci_fixture.h).
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "host/oci_fixture.h"
#include "sys/child.h"

namespace brig::testing::oci {
namespace {

// ---- lifecycle -----------------------------------------------------------------------

TEST_F(Oci, CreateStartKillDelete) {
  const std::string b = Bundle(Cfg("life"), "life");
  const std::string pid_file = scratch_.path() + "/life.pid";
  RunOutput cr = Run({"create", "--bundle", b, "--pid-file", pid_file, "life"});
  ASSERT_EQ(cr.exit_code, 0) << cr.err;
  pid_t pid = static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));
  ASSERT_GT(pid, 0) << "no pid in --pid-file";

  State s = StateOf("life");
  ASSERT_TRUE(s.ok) << s.raw;
  EXPECT_EQ(s.status, "created");
  EXPECT_EQ(s.id, "life");
  EXPECT_EQ(s.bundle, b);
  EXPECT_EQ(s.pid, pid) << "state and --pid-file name different processes";
  EXPECT_TRUE(Alive(pid));
  EXPECT_EQ(StatOf(pid).second, getpid()) << "the created process is not the caller's child";
  EXPECT_NE(Comm(pid), "sleep") << "the command ran before start";

  RunOutput st = Run({"start", "life"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_TRUE(Eventually([&] { return Comm(pid) == "sleep"; })) << Comm(pid);
  EXPECT_EQ(StateOf("life").status, "running");
  EXPECT_NE(Run({"start", "life"}).exit_code, 0) << "a running container started again";
  // runc's list -q, which engines and runc's suite read ids from; signal 0 asks whether
  // the process is there.
  RunOutput q = Run({"list", "-q"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "life\n");
  // And its JSON, with each field runc's has, in runc's order (its suite matches them so).
  RunOutput json = Run({"list", "--format", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"status\":\"running\",\"bundle\":\"" + b + "\",\"rootfs\":\"" + b +
                          "/rootfs\",\"created\":\""),
            std::string::npos)
      << json.out;
  RunOutput zero = Run({"kill", "life", "0"});
  EXPECT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_EQ(StateOf("life").status, "running") << "signal 0 did something";

  RunOutput k = Run({"kill", "life", "KILL"});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_TRUE(AwaitGone(pid));
  EXPECT_EQ(StateOf("life").status, "stopped");
  EXPECT_NE(Run({"kill", "life", "0"}).exit_code, 0) << "signal 0 found a stopped process";

  RunOutput d = Run({"delete", "life"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  State gone = StateOf("life");
  EXPECT_FALSE(gone.ok) << "state of a deleted container: " << gone.raw;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{});
  EXPECT_EQ(GroupsOf("life"), std::vector<std::string>{});
}

TEST_F(Oci, RunReturnsTheExitStatus) {
  struct Case {
    const char* id;
    std::vector<std::string> args;
    int want;
    bool pid_ns;
  };
  // Without a pid namespace: sh is not the namespace's init, which SIGKILL from inside
  // would not reach.
  const Case cases[] = {
      {"exit0", {"true"}, 0, true},
      {"exit3", {"sh", "-c", "echo to-out; echo to-err >&2; exit 3"}, 3, true},
      {"killed", {"sh", "-c", "kill -9 $$"}, 128 + SIGKILL, false},
  };
  for (const Case& c : cases) {
    Config cfg = Cfg(c.id);
    cfg.args = c.args;
    if (!c.pid_ns) cfg.namespaces.erase(cfg.namespaces.begin());
    std::string b = Bundle(cfg, c.id);
    RunOutput r = Run({"run", "--bundle", b, c.id});
    EXPECT_EQ(r.exit_code, c.want) << c.id << ": " << r.err;
    if (std::string(c.id) == "exit3") {
      EXPECT_EQ(r.out, "to-out\n");
      EXPECT_NE(r.err.find("to-err"), std::string::npos) << r.err;
    }
    EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << c.id << ": run left its container";
    EXPECT_EQ(GroupsOf(c.id), std::vector<std::string>{}) << c.id;
  }
}

// runc's own suite and every engine pass the global --root, and runc takes the bundle from
// the current directory: `runc --root R run ID`. A native brig run never has --root.
TEST_F(Oci, RunUnderRootTakesTheBundleInTheCurrentDirectory) {
  Config c = Cfg("cwdrun");
  c.args = {"echo", "from the bundle here"};
  RunOutput r = Run({"run", "cwdrun"}, -1, Bundle(c));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "from the bundle here\n") << "not the OCI run of the bundle in .";
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "run left its container";

  // A directory with no config.json is no bundle: one line naming it, nothing made.
  ScratchDir empty;
  RunOutput none = Run({"run", "nobundle"}, -1, empty.path());
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("config.json"), std::string::npos) << none.err;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{});
}

// ---- the process ---------------------------------------------------------------------

uint64_t CapMask(const std::vector<std::string>& names) {
  static const std::map<std::string, int> bits = {
      {"CAP_CHOWN", 0},  {"CAP_DAC_OVERRIDE", 1},      {"CAP_KILL", 5},        {"CAP_SETGID", 6},
      {"CAP_SETUID", 7}, {"CAP_NET_BIND_SERVICE", 10}, {"CAP_AUDIT_WRITE", 29}};
  uint64_t m = 0;
  for (const std::string& n : names) m |= 1ull << bits.at(n);
  return m;
}

std::string CapHex(uint64_t m) {
  char buf[32];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(m));
  return buf;
}

TEST_F(Oci, TheProcessIsAsConfigured) {
  Config c = Cfg("proc");
  c.uid = 1000;
  c.gid = 1000;
  c.additional_gids = {2000, 3000};
  // A process that is not root keeps across execve only its ambient capabilities, which
  // must be inheritable and permitted too.
  c.bounding = {"CAP_CHOWN", "CAP_KILL", "CAP_SETUID", "CAP_NET_BIND_SERVICE"};
  c.effective = c.permitted = c.inheritable = c.ambient = {"CAP_KILL", "CAP_NET_BIND_SERVICE"};
  c.rlimits = {{"RLIMIT_NOFILE", 654, 321}};
  c.hostname = "oci-host-test";
  c.env.push_back("FOO=bar  baz");
  c.cwd = "/home/user";
  c.args = {"sh", "-c",
            "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "
            "/proc/$$/status; echo nofile=$(ulimit -n)/$(ulimit -Hn); echo host=$(hostname); "
            "echo \"foo=[$FOO]\"; echo cwd=$(pwd)"};
  RunOutput r = Run({"run", "--bundle", Bundle(c), "proc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["Uid"], "1000 1000 1000 1000") << r.out;
  EXPECT_EQ(f["Gid"], "1000 1000 1000 1000");
  EXPECT_EQ(f["Groups"], "2000 3000");
  EXPECT_EQ(f["CapBnd"], CapHex(CapMask(c.bounding)));
  EXPECT_EQ(f["CapEff"], CapHex(CapMask(c.effective)));
  EXPECT_EQ(f["CapPrm"], CapHex(CapMask(c.permitted)));
  EXPECT_EQ(f["CapInh"], CapHex(CapMask(c.inheritable)));
  EXPECT_EQ(f["CapAmb"], CapHex(CapMask(c.ambient)));
  EXPECT_EQ(f["NoNewPrivs"], "1");
  EXPECT_EQ(f["nofile"], "321/654");
  EXPECT_EQ(f["host"], "oci-host-test");
  EXPECT_NE(r.out.find("foo=[bar  baz]\n"), std::string::npos) << r.out;
  EXPECT_EQ(f["cwd"], "/home/user");
}

// runc's own spec asks for ambient capabilities it does not make inheritable, which the
// kernel will not raise: runc leaves them out and runs it, and so does brig (it refused
// the whole container).
TEST_F(Oci, AnAmbientCapabilityThatIsNotInheritableIsLeftOutAsRuncLeavesIt) {
  Config c = Cfg("amb");
  c.uid = c.gid = 1000;
  c.ambient = c.bounding;  // runc spec's: the three, with no inheritable set
  c.inheritable = {"CAP_KILL"};
  c.args = {"sh", "-c", "grep -E '^Cap(Amb|Prm):' /proc/$$/status"};
  RunOutput r = Run({"run", "--bundle", Bundle(c), "amb"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["CapAmb"], CapHex(CapMask({"CAP_KILL"}))) << r.out;
  EXPECT_EQ(f["CapPrm"], CapHex(CapMask({"CAP_KILL"}))) << r.out;
}

// Without noNewPrivileges the filter needs CAP_SYS_ADMIN to load, which the bounding set
// here does not keep: it is loaded before the credentials drop it, and holds after.
TEST_F(Oci, WithoutNoNewPrivilegesTheFilterLoadsBeforeTheCapabilitiesGo) {
  Config c = Cfg("nonnp");
  c.uid = c.gid = 1000;
  c.no_new_privileges = false;
  c.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"mode=1777"}});
  c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],)"
                   R"("action":"SCMP_ACT_ERRNO","errnoRet":1}]})";
  c.args = {"sh", "-c",
            "grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$$/status; "
            "mkdir /tmp/x 2>/dev/null; echo mkdir=$?"};
  RunOutput r = Run({"run", "--bundle", Bundle(c), "nonnp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["Uid"], "1000 1000 1000 1000") << r.out;
  EXPECT_EQ(f["CapBnd"], CapHex(CapMask(c.bounding)));
  EXPECT_EQ(f["CapEff"], CapHex(0));
  EXPECT_EQ(f["NoNewPrivs"], "0");
  EXPECT_EQ(f["Seccomp"], "2");
  EXPECT_EQ(f["mkdir"], "1") << "mkdir was not refused: " << r.out;
}

// A profile written before openat2(2) existed (runtime-tools' default, older engines') refuses
// it. brig resolves process.cwd with openat2 before the filter loads, so the process still
// starts in its cwd, by create and by exec, with or without noNewPrivileges.
TEST_F(Oci, AFilterThatRefusesOpenat2StillLetsTheProcessStartInItsCwd) {
  for (bool nnp : {false, true}) {
    SCOPED_TRACE(nnp ? "noNewPrivileges" : "without noNewPrivileges");
    const std::string id = nnp ? "o2nnp" : "o2";
    Config c = Cfg(id);
    c.no_new_privileges = nnp;
    c.cwd = "/tmp";
    c.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"mode=1777"}});
    c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["openat2"],)"
                     R"("action":"SCMP_ACT_ERRNO","errnoRet":1}]})";
    pid_t init = CreateAndStart(c, id, "sleep");
    ASSERT_GT(init, 0);
    RunOutput r = Run({"exec", id, "sh", "-c", "readlink /proc/1/cwd; pwd"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "/tmp\n/tmp\n");
    EXPECT_EQ(Run({"delete", "--force", id}).exit_code, 0);
  }
}

// brig exec's process takes its credentials as create's does (security/caps.h).
TEST_F(Oci, AnExecdProcessIsAsItsProcessJsonSays) {
  pid_t init = CreateAndStart(Cfg("exc"), "exc", "sleep");
  ASSERT_GT(init, 0);
  Config p = Cfg("exc");
  p.uid = 1000;
  p.gid = 1001;
  p.additional_gids = {2000};
  p.bounding = {"CAP_KILL", "CAP_NET_BIND_SERVICE"};
  p.effective = p.permitted = p.inheritable = p.ambient = {"CAP_NET_BIND_SERVICE"};
  p.rlimits = {{"RLIMIT_NOFILE", 200, 100}};
  p.args = {"sh", "-c",
            "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "
            "/proc/$$/status; echo nofile=$(ulimit -n)/$(ulimit -Hn)"};
  const std::string file = scratch_.Write("process.json", p.ProcessJson());
  RunOutput r = Run({"exec", "--process", file, "exc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["Uid"], "1000 1000 1000 1000") << r.out;
  EXPECT_EQ(f["Gid"], "1001 1001 1001 1001");
  EXPECT_EQ(f["Groups"], "2000");
  EXPECT_EQ(f["CapBnd"], CapHex(CapMask(p.bounding)));
  for (const char* set : {"CapEff", "CapPrm", "CapInh", "CapAmb"}) {
    EXPECT_EQ(f[set], CapHex(CapMask(p.ambient))) << set;
  }
  EXPECT_EQ(f["NoNewPrivs"], "1");
  EXPECT_EQ(f["nofile"], "100/200");
  RunOutput del = Run({"delete", "--force", "exc"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_TRUE(AwaitGone(init));
}

// ---- the file system -----------------------------------------------------------------

// A new file system takes what config.json says of it: its source, its options, the
// mount(2) flags that are the superblock's ("sync") and those that are the mount's (ro,
// nosuid, nodev, noexec), as a container's mountinfo shows them. An option the file system
// refuses fails create with one line naming the mount, and nothing is made.
TEST_F(Oci, ANewFileSystemHasItsSourceOptionsAndFlags) {
  Config c = Cfg("newfs");
  c.mounts.push_back(
      {"/scratch", "tmpfs", "scratchfs", {"nosuid", "nodev", "noexec", "ro", "sync", "size=1m"}});
  c.args = {"sh", "-c", "grep ' /scratch ' /proc/self/mountinfo"};
  RunOutput r = Run({"run", "--bundle", Bundle(c), "newfs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "ID PARENT MAJ:MIN ROOT MOUNTPOINT MOUNT-OPTIONS - TYPE SOURCE SUPER-OPTIONS"
  std::istringstream line(r.out);
  std::string id, parent, dev, root, point, mount_opts, dash, type, source, super_opts;
  line >> id >> parent >> dev >> root >> point >> mount_opts >> dash >> type >> source >>
      super_opts;
  EXPECT_EQ(type, "tmpfs") << r.out;
  EXPECT_EQ(source, "scratchfs") << r.out;
  EXPECT_EQ(mount_opts.rfind("ro,nosuid,nodev,noexec", 0), 0u) << r.out;
  EXPECT_NE(super_opts.find("sync"), std::string::npos) << r.out;
  EXPECT_NE(super_opts.find("size=1024k"), std::string::npos) << r.out;

  Config bad = Cfg("newfsbad");
  bad.mounts.push_back({"/scratch", "tmpfs", "tmpfs", {"size=lots"}});
  RunOutput refused = Run({"run", "--bundle", Bundle(bad), "newfsbad"});
  ExpectCleanFailure(refused, "newfsbad");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("/scratch"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("size=lots"), std::string::npos) << refused.err;
}

TEST_F(Oci, ReadonlyRootMountsMaskedAndReadonlyPaths) {
  ScratchDir rw, ro;
  rw.Write("from-host", "host data\n");
  ro.Write("ro-file", "ro data\n");
  Config c = Cfg("fs");
  c.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}});
  c.mounts.push_back({"/rw", "bind", rw.path(), {"rbind", "rw"}});
  c.mounts.push_back({"/ro", "bind", ro.path(), {"bind", "ro"}});
  c.masked.push_back("/secret");
  c.masked.push_back("/etc/masked-file");
  c.args = {"sh", "-c",
            "touch /in-root 2>/dev/null && echo root=rw || echo root=ro; "
            "echo t > /tmp/t && echo tmp=$(cat /tmp/t); "
            "echo inside > /rw/from-inside && echo rwwrite=ok; echo rwread=$(cat /rw/from-host); "
            "touch /ro/x 2>/dev/null && echo ro=rw || echo ro=ro; echo roread=$(cat /ro/ro-file); "
            "for p in /proc/kcore /proc/timer_list /proc/keys; do "
            "echo \"$p=$(wc -c < $p 2>/dev/null || echo unreadable)\"; done; "
            "echo secret=$(ls -A /secret | wc -l); "
            "echo maskedfile=[$(cat /etc/masked-file)]; "
            "(echo x > /proc/sys/kernel/domainname) 2>/dev/null && echo procsys=rw || "
            "echo procsys=ro"};
  std::string b = Bundle(c);
  mkdir((b + "/rootfs/secret").c_str(), 0755);
  std::ofstream(b + "/rootfs/secret/hidden") << "hidden\n";
  std::ofstream(b + "/rootfs/etc/masked-file") << "masked\n";
  RunOutput r = Run({"run", "--bundle", b, "fs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["root"], "ro") << "root.readonly: / is writable";
  EXPECT_EQ(f["tmp"], "t") << "a tmpfs mount is not writable: " << r.err;
  EXPECT_EQ(f["rwwrite"], "ok") << r.err;
  EXPECT_EQ(f["rwread"], "host data");
  EXPECT_EQ(ReadFileOrEmpty(rw.path() + "/from-inside"), "inside\n");
  EXPECT_EQ(f["ro"], "ro") << "a ro bind mount is writable";
  EXPECT_FALSE(Exists(ro.path() + "/x"));
  EXPECT_EQ(f["roread"], "ro data");
  // Those of runc's masked files this host has (a kernel may lack /proc/kcore).
  int masked = 0;
  for (const char* p : {"/proc/kcore", "/proc/timer_list", "/proc/keys"}) {
    if (!Exists(p)) continue;
    ++masked;
    EXPECT_EQ(f[p], "0") << p << " is not masked";
  }
  EXPECT_GT(masked, 0) << "none of the masked files to check is on this host";
  EXPECT_EQ(f["secret"], "0") << "a masked directory shows its files";
  EXPECT_EQ(f["maskedfile"], "[]") << "a masked file shows its content";
  EXPECT_EQ(f["procsys"], "ro") << "/proc/sys is writable";
}

// `create --dry-run` prints the plan create would carry out, the root's steps in their
// order with the config.json field each comes from, and makes nothing.
TEST_F(Oci, CreateDryRunListsThePlanAndMakesNothing) {
  if (!IsBrig()) GTEST_SKIP() << "--dry-run is brig's";
  ScratchDir rw;
  Config c = Cfg("dry");
  c.mounts.push_back({"/scratch", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}});
  c.mounts.push_back({"/rw", "bind", rw.path(), {"rbind", "rw"}});
  c.masked.push_back("/secret");
  c.readonly_paths.push_back("/etc");
  c.resources_json = R"({"pids":{"limit":64}})";
  const std::string b = Bundle(c, "dry");
  RunOutput r = Run({"create", "--dry-run", "--bundle", b, "dry"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "not one line: " << r.out;
  EXPECT_FALSE(Exists(root_)) << "--root was made";
  EXPECT_EQ(GroupsOf("dry"), std::vector<std::string>{}) << "a cgroup was made";
  for (const CgroupMount& m : CgroupMounts()) {
    EXPECT_FALSE(Exists(m.point + parent_)) << "a cgroup was made: " << m.point + parent_;
  }
  ReapExited();
  EXPECT_EQ(LiveDescendants(), std::vector<pid_t>{}) << "a process was left";

  google::protobuf::Struct plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &plan).ok()) << r.out;
  const auto& f = plan.fields();
  EXPECT_EQ(f.at("id").string_value(), "dry");
  EXPECT_TRUE(f.at("dry_run").bool_value());
  EXPECT_EQ(f.at("rootfs").string_value(), b + "/rootfs");
  // Each step as "kind target", and the entries of those the test gave.
  auto steps = [&](const char* list) {
    std::vector<std::string> out;
    for (const auto& v : f.at(list).list_value().values()) {
      const auto& m = v.struct_value().fields();
      out.push_back(m.at("kind").string_value() + " " + m.at("target").string_value());
    }
    return out;
  };
  auto entry = [&](const char* list, const std::string& step) {
    std::vector<std::string> all = steps(list);
    size_t i = std::find(all.begin(), all.end(), step) - all.begin();
    EXPECT_LT(i, all.size()) << step << " not in " << list << ": " << r.out;
    if (i == all.size()) return google::protobuf::Struct();
    return f.at(list).list_value().values(static_cast<int>(i)).struct_value();
  };
  auto words = [](const google::protobuf::Value& v) {
    std::vector<std::string> out;
    for (const auto& w : v.list_value().values()) out.push_back(w.string_value());
    return out;
  };
  std::vector<std::string> before = steps("mounts");
  auto at = [&](const std::string& s) { return std::find(before.begin(), before.end(), s); };
  EXPECT_LT(at("mount /proc"), at("mount /scratch")) << r.out;
  EXPECT_LT(at("mount /scratch"), at("bind source /rw")) << "not in config.json's order";
  EXPECT_NE(at("bind source /rw"), before.end()) << r.out;

  auto tmpfs = entry("mounts", "mount /scratch").fields();
  EXPECT_EQ(tmpfs.at("type").string_value(), "tmpfs");
  EXPECT_EQ(tmpfs.at("field").string_value(), "mounts");
  EXPECT_NE(tmpfs.at("options").string_value().find("mode=1777"), std::string::npos) << r.out;
  std::vector<std::string> tf = words(tmpfs.at("flags"));
  EXPECT_NE(std::find(tf.begin(), tf.end(), "nosuid"), tf.end()) << r.out;
  auto bind = entry("mounts", "bind source /rw").fields();
  EXPECT_EQ(bind.at("source").string_value(), rw.path());
  std::vector<std::string> bf = words(bind.at("flags"));
  EXPECT_NE(std::find(bf.begin(), bf.end(), "rbind"), bf.end()) << r.out;

  std::vector<std::string> after = steps("mounts_after_pivot");
  auto after_at = [&](const std::string& s) { return std::find(after.begin(), after.end(), s); };
  EXPECT_LT(after_at("mask /secret"), after_at("read-only /etc")) << r.out;
  EXPECT_LT(after_at("read-only /etc"), after_at("seal read-only /")) << "root.readonly not last";
  EXPECT_NE(after_at("seal read-only /"), after.end()) << r.out;
  EXPECT_EQ(entry("mounts_after_pivot", "mask /secret").fields().at("field").string_value(),
            "linux.maskedPaths");
  EXPECT_EQ(entry("mounts_after_pivot", "read-only /etc").fields().at("field").string_value(),
            "linux.readonlyPaths");

  std::vector<std::string> ns;
  for (const auto& v : f.at("namespaces").list_value().values()) {
    ns.push_back(v.struct_value().fields().at("type").string_value());
  }
  EXPECT_EQ(ns, c.namespaces);
  const auto& cg = f.at("cgroups").struct_value().fields();
  std::vector<std::string> dirs = words(cg.at("dirs")), make = words(cg.at("make"));
  std::vector<std::string> groups;
  for (const CgroupMount& m : CgroupMounts()) groups.push_back(m.point + CgroupPath("dry"));
  for (const std::string& d : dirs) {
    EXPECT_NE(std::find(groups.begin(), groups.end(), d), groups.end()) << d;
    EXPECT_NE(std::find(make.begin(), make.end(), d), make.end()) << d << " not to be made";
  }
  EXPECT_FALSE(dirs.empty()) << r.out;
  bool pids = false;
  for (const auto& w : cg.at("writes").list_value().values()) {
    const auto& wf = w.struct_value().fields();
    if (wf.at("property").string_value() == "linux.resources.pids.limit") {
      pids = true;
      EXPECT_EQ(wf.at("value").string_value(), "64");
    }
  }
  EXPECT_TRUE(pids) << "pids.limit's write not planned: " << r.out;
  const auto& proc = f.at("process").struct_value().fields();
  EXPECT_EQ(words(proc.at("args")), c.args);
  EXPECT_TRUE(proc.at("no_new_privs").bool_value());
}

// A bundle create refuses is refused as create refuses it, and nothing is made.
TEST_F(Oci, CreateDryRunRefusesWhatCreateRefuses) {
  if (!IsBrig()) GTEST_SKIP() << "--dry-run is brig's";
  Config c = Cfg("drybad");
  c.namespaces.push_back("foo");
  RunOutput r = Run({"create", "--dry-run", "--bundle", Bundle(c), "drybad"});
  ExpectCleanFailure(r, "drybad");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("foo"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(Exists(root_));
}

TEST_F(Oci, SeccompPolicyDeniesWithItsErrno) {
  // The same commands without the policy: mkdir works there.
  const std::string script =
      "mkdir /tmp/x; echo mkdir=$?; touch /tmp/y; echo touch=$?; echo ls=$(ls /tmp)";
  Config open = Cfg("open");
  open.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"mode=1777"}});
  open.args = {"sh", "-c", script};
  RunOutput o = Run({"run", "--bundle", Bundle(open, "open"), "open"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(Fields(o.out)["mkdir"], "0") << o.err;

  Config c = open;
  c.cgroups_path = CgroupPath("sec");
  c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],)"
                   R"("action":"SCMP_ACT_ERRNO","errnoRet":1}]})";
  RunOutput r = Run({"run", "--bundle", Bundle(c, "sec"), "sec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_EQ(f["mkdir"], "1") << r.out;
  EXPECT_NE(r.err.find("Operation not permitted"), std::string::npos) << "not EPERM: " << r.err;
  EXPECT_EQ(f["touch"], "0") << r.err;
  EXPECT_EQ(f["ls"], "y");
}

// The names libseccomp knows of x86_64's calls 0 to `last` but `but`, as a JSON list's
// members ("read","write",...): a policy's allowlist.
std::string X86_64Names(int last, int but) {
  std::string names;
  for (int nr = 0; nr <= last; ++nr) {
    if (nr == but) continue;
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
    if (!name) continue;
    names += std::string(names.empty() ? "" : ",") + "\"" + name + "\"";
    free(name);
  }
  return names;
}

// A system call newer than every one an OCI policy names fails with ENOSYS, as on a kernel
// without it (runc's stub), where the policy's default refuses; one it leaves out below that
// meets the default (EPERM). The policy allows x86_64's calls 0 to 440 but unshare (272);
// brig-probe makes the calls raw.
TEST_F(Oci, ACallNewerThanThePolicyFailsAsOnAnOlderKernel) {
  std::string names = X86_64Names(440, SYS_unshare);
  Config c = Cfg("enosys");
  c.args = {"/brig-probe", "syscalls", "1000", std::to_string(SYS_set_mempolicy_home_node),
            std::to_string(SYS_unshare)};
  c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],)"
                   R"("syscalls":[{"names":[)" +
                   names + R"(],"action":"SCMP_ACT_ALLOW"}]})";
  const std::string bundle = Bundle(c, "enosys");
  ASSERT_EQ(RunCommand({"cp", ProbeBinary(), bundle + "/rootfs/brig-probe"}).exit_code, 0);
  RunOutput r = Run({"run", "--bundle", bundle, "enosys"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out),
            (std::vector<std::string>{"1000 ENOSYS",
                                      std::to_string(SYS_set_mempolicy_home_node) + " ENOSYS",
                                      std::to_string(SYS_unshare) + " EPERM"}))
      << r.err;
}

// podman's profile for a rootless container names socket(2) in rules that x86's socketcall(2)
// cannot tell apart (AF_NETLINK's NETLINK_AUDIT refused with EINVAL, everything else
// allowed, one rule twice), for three architectures. It compiles, and on x86_64 every rule
// holds: a raw socket of protocol 9 in another family is allowed by the rule socketcall
// could not take (the kernel's own answer, not the default's ENOSYS).
TEST_F(Oci, PodmansRootlessSocketRulesCompileAndHoldOnTheNativeArchitecture) {
  std::string names = X86_64Names(460, SYS_socket);
  Config c = Cfg("sockrules");
  c.args = {"sh", "-c", "for a in '16 3 9' '2 2 0' '2 3 9'; do /brig-probe socket $a; done"};
  const std::string allow_ne9 =
      R"({"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{"index":2,"value":9,"op":"SCMP_CMP_NE"}]})";
  c.seccomp_json =
      R"({"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,)"
      R"("architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],"syscalls":[)"
      R"({"names":[)" +
      names +
      R"(],"action":"SCMP_ACT_ALLOW"},)"
      R"({"names":["socket"],"action":"SCMP_ACT_ERRNO","errnoRet":22,"args":[)"
      R"({"index":0,"value":16,"op":"SCMP_CMP_EQ"},{"index":2,"value":9,"op":"SCMP_CMP_EQ"}]},)" +
      allow_ne9 +
      R"(,{"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":16,"op":"SCMP_CMP_NE"}]},)" +
      allow_ne9 + "]}";
  const std::string bundle = Bundle(c, "sockrules");
  ASSERT_EQ(RunCommand({"cp", ProbeBinary(), bundle + "/rootfs/brig-probe"}).exit_code, 0);
  RunOutput r = Run({"run", "--bundle", bundle, "sockrules"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("denied EINVAL", 0), 0u) << "NETLINK_AUDIT: " << lines[0];
  EXPECT_EQ(lines[1], "allowed") << "a UDP socket";
  EXPECT_TRUE(lines[2] == "allowed" || lines[2].rfind("denied EPERM", 0) == 0)
      << "a raw socket of protocol 9: " << lines[2];
}

// ---- exec, ps, pause -----------------------------------------------------------------

TEST_F(Oci, ExecRunsInTheContainer) {
  pid_t init = CreateAndStart(Cfg("ex"), "ex", "sleep");
  ASSERT_GT(init, 0);

  RunOutput r = Run({"exec", "ex", "sh", "-c", "echo $$; exit 4"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  int inner = atoi(r.out.c_str());
  EXPECT_GT(inner, 1) << "not a pid of the container's namespace: " << r.out;
  EXPECT_EQ(r.out, std::to_string(inner) + "\n");

  const std::string pid_file = scratch_.path() + "/exec.pid";
  RunOutput d = Run({"exec", "--detach", "--pid-file", pid_file, "ex", "sleep", "999"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  pid_t p = static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));
  ASSERT_GT(p, 0) << "no pid in --pid-file";
  EXPECT_TRUE(Alive(p));
  EXPECT_EQ(NsOf(p, "pid"), NsOf(init, "pid"));
  EXPECT_NE(NsOf(p, "pid"), HostNs("pid"));
  EXPECT_EQ(NsOf(p, "mnt"), NsOf(init, "mnt"));
  EXPECT_EQ(NsOf(p, "net"), NsOf(init, "net"));
  EXPECT_EQ(GroupsNotAt(p, CgroupPath("ex")), "") << "exec is not in all its groups";

  // --process as a shell hands it (bash's <(...)): a pipe, by its /dev/fd name.
  Config piped = Cfg("ex");
  piped.args = {"echo", "from-a-pipe"};
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  std::string json = piped.ProcessJson();
  ASSERT_EQ(write(fds[1], json.data(), json.size()), static_cast<ssize_t>(json.size()));
  close(fds[1]);
  RunOutput fromfd = Run({"exec", "--process", "/dev/fd/7", "ex"}, fds[0]);
  close(fds[0]);
  EXPECT_EQ(fromfd.exit_code, 0) << fromfd.err;
  EXPECT_EQ(fromfd.out, "from-a-pipe\n");

  RunOutput u =
      Run({"exec", "--env", "A=b c", "--cwd", "/tmp", "--user", "1000:1000", "ex", "sh", "-c",
           "echo \"a=[$A]\"; echo cwd=$(pwd); echo uid=$(id -u); echo gid=$(id -g)"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  auto f = Fields(u.out);
  EXPECT_NE(u.out.find("a=[b c]\n"), std::string::npos) << u.out;
  EXPECT_EQ(f["cwd"], "/tmp");
  EXPECT_EQ(f["uid"], "1000");
  EXPECT_EQ(f["gid"], "1000");

  RunOutput del = Run({"delete", "--force", "ex"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_TRUE(AwaitGone(p));
  EXPECT_TRUE(AwaitGone(init));
}

// runc's exec --cgroup: the process in a group below the container's, in every hierarchy
// or in those of the controllers named; never above it, nor in one that is not there.
TEST_F(Oci, ExecCgroupPutsTheProcessInAGroupBelowTheContainers) {
  pid_t init = CreateAndStart(Cfg("sub"), "sub", "sleep");
  ASSERT_GT(init, 0);
  for (const std::string& g : GroupsOf("sub")) {
    ASSERT_EQ(mkdir((g + "/inner").c_str(), 0755), 0) << g << ": " << strerror(errno);
    for (const char* f : {"/cpuset.cpus", "/cpuset.mems"}) {
      if (Exists(g + f)) {
        std::ofstream(g + "/inner" + f) << Trim(ReadFileOrEmpty(g + f));
      }
    }
  }
  RunOutput all = Run({"exec", "--cgroup", "inner", "sub", "cat", "/proc/self/cgroup"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::string memory_line;
  for (const std::string& line : Lines(all.out)) {
    if (line.find(":memory:") != std::string::npos) memory_line = line;
    bool own = line.rfind("0::", 0) == 0 || line.find(":memory:") != std::string::npos ||
               line.find(":pids:") != std::string::npos;
    if (own) {
      EXPECT_EQ(line.substr(line.rfind(':')), ":/inner") << all.out;
    }
  }
  if (!memory_line.empty()) {
    // A v1 hierarchy by its controller: that one alone.
    RunOutput mem = Run({"exec", "--cgroup", "memory:inner", "sub", "cat", "/proc/self/cgroup"});
    ASSERT_EQ(mem.exit_code, 0) << mem.err;
    EXPECT_NE(mem.out.find(":memory:/inner\n"), std::string::npos) << mem.out;
    EXPECT_NE(mem.out.find(":pids:/\n"), std::string::npos) << mem.out;
  }
  for (const auto& [sub, why] :
       std::vector<std::pair<std::string, std::string>>{{"..", "is not a sub cgroup path"},
                                                        {"inner/../..", "is not a sub cgroup path"},
                                                        {"nonexistent", "nonexistent"},
                                                        {"whaaat:/", "unknown controller"}}) {
    RunOutput r = Run({"exec", "--cgroup", sub, "sub", "true"});
    EXPECT_EQ(r.exit_code, 255) << sub;
    EXPECT_NE(r.err.find(why), std::string::npos) << sub << ": " << r.err;
  }
  EXPECT_EQ(Run({"delete", "--force", "sub"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
  EXPECT_EQ(GroupsOf("sub"), std::vector<std::string>{});
}

// A detached exec's process is reaped by the subreaper above brig (an engine's shim; here
// the test) as soon as it is that subreaper's. brig used to open its pidfd only after the
// stage child had gone, so an exec whose command ended at once failed now and then
// ("pidfd_open 'the process': No such process": Docker's exec check, once in 26).
TEST_F(Oci, ADetachedExecThatEndsAtOnceStillSucceeds) {
  pid_t init = CreateAndStart(Cfg("quick"), "quick", "sleep");
  ASSERT_GT(init, 0);
  for (int i = 0; i < 40; ++i) {
    RunOutput d = Run({"exec", "--detach", "quick", "true"});
    ASSERT_EQ(d.exit_code, 0) << "exec " << i << ": " << d.err;
  }
  EXPECT_EQ(Run({"delete", "--force", "quick"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
}

// Whether `pid` is frozen as the host's freezer says it: the v2 group's cgroup.events (on a
// hybrid host too, where brig freezes through cgroup.freeze when the unified group has it),
// or the v1 freezer (FROZEN, and its task state D), as runc uses on hybrid hosts.
bool Frozen(pid_t pid, const std::string& path) {
  for (const CgroupMount& m : CgroupMounts()) {
    if (m.v2 && Exists(m.point + path + "/cgroup.freeze") &&
        ReadFileOrEmpty(m.point + path + "/cgroup.events").find("frozen 1") !=
            std::string::npos) {
      return true;
    }
  }
  if (std::string v1 = ControllerDir("freezer", path); !v1.empty()) {
    return Trim(ReadFileOrEmpty(v1 + "/freezer.state")) == "FROZEN" && StatOf(pid).first == 'D';
  }
  return false;
}

TEST_F(Oci, PsPauseResume) {
  pid_t init = CreateAndStart(Cfg("pp"), "pp", "sleep");
  ASSERT_GT(init, 0);
  const std::string pid_file = scratch_.path() + "/exec.pid";
  RunOutput d = Run({"exec", "--detach", "--pid-file", pid_file, "pp", "sleep", "998"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  pid_t p = static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));

  RunOutput ps = Run({"ps", "--format", "json", "pp"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  google::protobuf::Value v;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ps.out, &v).ok()) << ps.out;
  std::set<pid_t> listed;
  for (const auto& e : v.list_value().values()) listed.insert(static_cast<pid_t>(e.number_value()));
  EXPECT_EQ(listed, (std::set<pid_t>{init, p})) << ps.out;
  // What follows the id is ps(1)'s, as runc passes it on.
  RunOutput table = Run({"ps", "pp", "-e", "-x"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(Lines(table.out).at(0).find("COMMAND"), std::string::npos) << table.out;
  bool listed_init = false;
  for (const std::string& line : Lines(table.out)) {
    std::istringstream fields(line);
    pid_t first = 0;
    listed_init |= (fields >> first) && first == init;
  }
  EXPECT_TRUE(listed_init) << table.out;

  RunOutput pa = Run({"pause", "pp"});
  ASSERT_EQ(pa.exit_code, 0) << pa.err;
  EXPECT_EQ(StateOf("pp").status, "paused");
  EXPECT_TRUE(Frozen(init, CgroupPath("pp"))) << "state " << StatOf(init).first;
  EXPECT_TRUE(Frozen(p, CgroupPath("pp")));
  // runc's refusal and its words; with --ignore-paused, the process waits in the frozen
  // groups and runs once the container is resumed.
  RunOutput refused = Run({"exec", "pp", "true"});
  EXPECT_EQ(refused.exit_code, 255);
  EXPECT_NE(refused.err.find("cannot exec in a paused container"), std::string::npos)
      << refused.err;
  // The group that freezes it (Frozen), which the process enters first.
  std::string procs = ControllerDir("freezer", CgroupPath("pp")) + "/cgroup.procs";
  for (const CgroupMount& m : CgroupMounts()) {
    if (m.v2 && Exists(m.point + CgroupPath("pp") + "/cgroup.freeze")) {
      procs = m.point + CgroupPath("pp") + "/cgroup.procs";
    }
  }
  auto count = [&] { return Lines(ReadFileOrEmpty(procs)).size(); };
  ASSERT_EQ(count(), 2u) << ReadFileOrEmpty(procs);
  // In the background, its status said by a shell: Run reaps every child of the test's.
  const std::string said = scratch_.path() + "/ignore-paused.out";
  pid_t bg = fork();
  if (bg == 0) {
    int fd = open(said.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(98);
    execl("/bin/sh", "sh", "-c",
          "\"$0\" --root \"$1\" exec --ignore-paused pp echo ran-once-resumed; echo rc=$?",
          RuntimeBinary().c_str(), root_.c_str(), nullptr);
    _exit(99);
  }
  ASSERT_GT(bg, 0);
  NoteSpawned(bg);
  EXPECT_TRUE(Eventually([&] { return count() == 3; })) << "the exec never joined";
  EXPECT_EQ(ReadFileOrEmpty(said), "") << "the exec ran in a paused container";

  RunOutput re = Run({"resume", "pp"});
  ASSERT_EQ(re.exit_code, 0) << re.err;
  EXPECT_TRUE(Eventually([&] { return ReadFileOrEmpty(said).find("rc=") != std::string::npos; }));
  EXPECT_EQ(ReadFileOrEmpty(said), "ran-once-resumed\nrc=0\n");
  (void)waitpid(bg, nullptr, WNOHANG);
  EXPECT_EQ(StateOf("pp").status, "running");
  EXPECT_FALSE(Frozen(init, CgroupPath("pp")));
  EXPECT_NE(Run({"resume", "pp"}).exit_code, 0) << "a running container resumed";

  EXPECT_EQ(Run({"delete", "--force", "pp"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
  EXPECT_TRUE(AwaitGone(p));
}

// ---- terminal, resources -------------------------------------------------------------

TEST_F(Oci, ConsoleSocketReceivesTheTerminal) {
  ConsoleSocket sock(scratch_.path() + "/console.sock");
  ASSERT_TRUE(sock.ok()) << strerror(errno);
  Config c = Cfg("tty");
  c.terminal = true;
  c.args = {"sh", "-c", "echo tty=$(tty); exec cat"};
  pid_t pid = Create(c, "tty", {"--console-socket", scratch_.path() + "/console.sock"});
  ASSERT_GT(pid, 0);
  sys::UniqueFd master = sock.ReceiveFd();
  ASSERT_TRUE(master.valid()) << "no terminal came over --console-socket";
  struct stat st;
  ASSERT_EQ(fstat(master.get(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(Run({"start", "tty"}).exit_code, 0);
  std::string got = ReadUntil(master.get(), "/dev/pts/0");
  EXPECT_NE(got.find("tty=/dev/pts/0"), std::string::npos) << "read: " << got;
  master.Reset();
  EXPECT_EQ(Run({"delete", "--force", "tty"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

// runc's foreground run and exec of a process with a terminal and no --console-socket:
// brig takes the master and relays it to its own stdout (runc's suite runs most of its
// tests so). Detached, a terminal needs --console-socket still.
TEST_F(Oci, AForegroundRunOrExecRelaysItsTerminal) {
  Config c = Cfg("fgtty");
  c.terminal = true;
  c.args = {"sh", "-c", "echo tty=$(tty); exit 7"};
  RunOutput r = Run({"run", "fgtty"}, -1, Bundle(c));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.out.find("tty=/dev/pts/0"), std::string::npos) << "relayed: " << r.out;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "run left its container";

  Config held = Cfg("fgexec");
  pid_t pid = Create(held, "fgexec");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Run({"start", "fgexec"}).exit_code, 0);
  RunOutput e = Run({"exec", "--tty", "fgexec", "sh", "-c", "echo exec-tty=$(tty)"});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("exec-tty=/dev/pts/"), std::string::npos) << "relayed: " << e.out;
  RunOutput d = Run({"exec", "--tty", "--detach", "fgexec", "true"});
  EXPECT_EQ(d.exit_code, 255) << d.err;
  EXPECT_NE(d.err.find("--console-socket"), std::string::npos) << d.err;
  EXPECT_EQ(Run({"delete", "--force", "fgexec"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));

  RunOutput detached = Run({"run", "--detach", "fgdetach"}, -1, Bundle(c, "fgdetach"));
  EXPECT_EQ(detached.exit_code, 1) << detached.err;
  EXPECT_EQ(std::count(detached.err.begin(), detached.err.end(), '\n'), 1) << detached.err;
  EXPECT_NE(detached.err.find("--console-socket"), std::string::npos) << detached.err;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{});
}

// A user-namespaced container's bind mounts whose sources only the host's root may reach
// (under a directory of mode 0700, as a kubelet's pod volumes are): brig opens the sources,
// as runc does, and the container's root, another id on the host, sees them. Its exec sees
// them too.
TEST_F(Oci, AUserNamespacedContainerBindsSourcesOnlyTheHostsRootReaches) {
  const std::string locked = scratch_.path() + "/locked";
  ASSERT_EQ(mkdir(locked.c_str(), 0700), 0);
  Config c = Cfg("reach");
  c.namespaces.push_back("user");
  c.map_to = 200000;
  for (const char* n : {"one", "two"}) {
    const std::string dir = locked + "/" + n;
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    scratch_.Write(std::string("locked/") + n + "/f", std::string("in-") + n + "\n");
    c.mounts.push_back({std::string("/mnt/") + n, "bind", dir, {"bind"}});
  }
  c.args = {"sh", "-c", "cat /mnt/one/f /mnt/two/f"};
  // The mount points exist: the image's root is the host's root's, which the container's
  // root may not write either.
  auto with_points = [&](const std::string& bundle) {
    for (const char* d : {"/rootfs/mnt", "/rootfs/mnt/one", "/rootfs/mnt/two"}) {
      mkdir((bundle + d).c_str(), 0755);
    }
    return bundle;
  };
  RunOutput r = Run({"run", "--bundle", with_points(Bundle(c, "reach")), "reach"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "in-one\nin-two\n") << r.err;

  c.args = {"sleep", "1000000"};
  pid_t pid = CreateFrom(with_points(Bundle(c, "reach-exec")), "reach-exec");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Run({"start", "reach-exec"}).exit_code, 0);
  RunOutput e = Run({"exec", "reach-exec", "cat", "/mnt/two/f"});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out, "in-two\n");
  EXPECT_EQ(Run({"delete", "--force", "reach-exec"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

// A user-namespaced pod's volume, as containerd 2 writes it for `hostUsers: false`
// (internal/cri/opts WithMounts: "rbind", "rprivate", "rw", and the pod's own mappings as
// the mount's uidMappings and gidMappings): the host's root's files are the container's
// root's, what its root makes lands as the host's root on disk, an id the mapping does not
// cover is nobody's, and the container's root, host uid 300000, owns nothing else.
TEST_F(Oci, AUserNamespacedPodsVolumeIsItsRootsAndWhatItWritesIsTheHostsRoots) {
  const std::string vol = scratch_.path() + "/vol";
  ASSERT_EQ(mkdir(vol.c_str(), 0755), 0);
  if (!IdMappable(vol)) GTEST_SKIP() << "this kernel cannot id-map the file system of " << vol;
  scratch_.Write("vol/root-file", "r\n");
  scratch_.Write("vol/user-file", "u\n");
  scratch_.Write("vol/outside-file", "o\n");
  ASSERT_EQ(chown((vol + "/user-file").c_str(), 1000, 1000), 0);
  ASSERT_EQ(chown((vol + "/outside-file").c_str(), 70000, 70000), 0);
  Config c = Cfg("idmap");
  c.namespaces.push_back("user");
  c.map_to = 300000;
  c.mounts.push_back({"/data", "bind", vol, {"rbind", "rprivate", "rw"}, 300000});
  c.args = {"sh", "-c",
            "stat -c '%n %u:%g' /data/root-file /data/user-file /data/outside-file /data; "
            "echo made > /data/new && mkdir /data/dir && echo wrote"};
  // The mount point exists: the image's root is the host's root's, which the container's
  // root may not write.
  auto with_point = [](const std::string& bundle) {
    mkdir((bundle + "/rootfs/data").c_str(), 0755);
    return bundle;
  };
  RunOutput r = Run({"run", "--bundle", with_point(Bundle(c, "idmap")), "idmap"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "/data/root-file 0:0\n/data/user-file 1000:1000\n/data/outside-file 65534:65534\n"
            "/data 0:0\nwrote\n")
      << r.err;
  for (const char* made : {"/new", "/dir"}) {
    struct stat st;
    ASSERT_EQ(lstat((vol + made).c_str(), &st), 0) << made;
    EXPECT_EQ(st.st_uid, 0u) << made << " is the host's root's on disk";
    EXPECT_EQ(st.st_gid, 0u) << made;
  }

  // runc's idmap option alone takes the container's own mappings; without the mount's
  // mappings and without them, the volume is no one's the container has, and its root may
  // not write there.
  c.mounts.back() = {"/data", "bind", vol, {"rbind", "idmap"}};
  c.args = {"sh", "-c", "stat -c '%u' /data/new; touch /data/idmap && echo wrote"};
  r = Run({"run", "--bundle", with_point(Bundle(c, "idmap-opt")), "idmap-opt"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\nwrote\n") << r.err;
  c.mounts.back() = {"/data", "bind", vol, {"rbind"}};
  c.args = {"sh", "-c", "stat -c '%u' /data/new; touch /data/plain 2>/dev/null || echo refused"};
  r = Run({"run", "--bundle", with_point(Bundle(c, "idmap-none")), "idmap-none"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "65534\nrefused\n") << r.err;

  // A container without a user namespace sees the mapping as the host does.
  Config host = Cfg("idmap-host");
  host.mounts.push_back({"/data", "bind", vol, {"rbind"}, 300000});
  host.args = {"stat", "-c", "%u:%g", "/data/root-file"};
  r = Run({"run", "--bundle", Bundle(host, "idmap-host"), "idmap-host"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "300000:300000\n") << r.err;
}

// An id-mapped mount is a bind mount, whose mappings are given or are the container's own:
// anything else is refused before anything is made.
TEST_F(Oci, AnIdmappedMountThatCannotBeIsRefused) {
  const std::string vol = scratch_.path() + "/refvol";
  ASSERT_EQ(mkdir(vol.c_str(), 0755), 0);
  struct Case {
    MountSpec mount;
    bool userns;
    const char* said;
  } cases[] = {
      {{"/data", "tmpfs", "tmpfs", {}, 300000},
       true,
       "].uidMappings: id-mapped mounts are only supported for bind mounts"},
      {{"/data", "bind", vol, {"rbind", "idmap"}},
       false,
       "].options: idmap without uidMappings takes the container's own user namespace's "
       "mappings"},
  };
  for (const Case& k : cases) {
    Config c = Cfg("idmapbad");
    if (k.userns) {
      c.namespaces.push_back("user");
      c.map_to = 300000;
    }
    c.mounts.push_back(k.mount);
    RunOutput r = Run({"create", "--bundle", Bundle(c, "idmapbad"), "idmapbad"});
    ExpectCleanFailure(r, "idmapbad");
    EXPECT_NE(r.err.find(k.said), std::string::npos) << r.err;
  }
}

// A process's terminal is its user's, with the devpts mount's group (runc's spec: tty, 5),
// as runc gives it: a user other than root could not use it otherwise.
TEST_F(Oci, ATerminalIsOwnedByItsProcesssUser) {
  Config c = Cfg("ttyown");
  c.terminal = true;
  c.uid = 1000;
  c.gid = 100;
  c.args = {"sh", "-c", "stat -c owner=%u:%g $(tty)"};
  RunOutput r = Run({"run", "ttyown"}, -1, Bundle(c, "ttyown"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("owner=1000:5"), std::string::npos) << r.out;

  pid_t pid = CreateAndStart(Cfg("ttyexec"), "ttyexec", "sleep");
  ASSERT_GT(pid, 0);
  RunOutput e = Run(
      {"exec", "--tty", "--user", "1001:100", "ttyexec", "sh", "-c", "stat -c owner=%u:%g $(tty)"});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("owner=1001:5"), std::string::npos) << e.out;
  EXPECT_EQ(Run({"delete", "--force", "ttyexec"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

// brig relays a foreground container's terminal as it relays brig run's, through the
// terminal filter: what the container writes to the caller's terminal cannot make it
// answer on its input, nor set its clipboard or title (design.md). script(1) gives brig a
// terminal.
TEST_F(Oci, AForegroundTerminalGoesThroughTheTerminalFilter) {
  if (!IsBrig()) GTEST_SKIP() << "brig's terminal filter; runc relays the bytes as they are";
  Config c = Cfg("fgfilter");
  c.terminal = true;
  c.args = {"sh", "-c", "printf '\\033[6n\\033]52;c;aGk=\\007\\033]0;title\\007'; echo filtered"};
  std::string bundle = Bundle(c, "fgfilter");
  RunOutput r =
      RunCommand({"script", "-qec",
                  RuntimeBinary() + " --root " + root_ + " run --bundle " + bundle + " fgfilter",
                  "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("filtered"), std::string::npos) << ::testing::PrintToString(r.out);
  for (const char* q : {"\x1b[6n", "\x1b]52", "\x1b]0;"}) {
    EXPECT_EQ(r.out.find(q), std::string::npos) << ::testing::PrintToString(r.out);
  }
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "run left its container";
}

// runc's events: --stats once, and the stream, which says {"type":"oom"} as soon as the
// kernel kills a process of the container for memory (engines and runc's suite wait for
// it), and ends with the container.
TEST_F(Oci, EventsGiveStatsAndAnOomKillAsItHappens) {
  Config c = Cfg("oom");
  c.resources_json = R"({"memory":{"limit":33554432,"swap":33554432}})";
  pid_t init = CreateAndStart(c, "oom", "sleep");
  ASSERT_GT(init, 0);
  RunOutput once = Run({"events", "--stats", "oom"});
  EXPECT_EQ(once.exit_code, 0) << once.err;
  EXPECT_EQ(once.out.rfind("{\"type\":\"stats\",\"id\":\"oom\",\"data\":{", 0), 0u) << once.out;
  EXPECT_EQ(Lines(once.out).size(), 1u) << once.out;

  // In the background, as the exec and delete below go on: Run reaps every child.
  const std::string stream = scratch_.path() + "/events.out";
  pid_t events = fork();
  if (events == 0) {
    int fd = open(stream.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0) _exit(98);
    execl(RuntimeBinary().c_str(), "brig", "--root", root_.c_str(), "events", "--interval", "200ms",
          "oom", nullptr);
    _exit(99);
  }
  ASSERT_GT(events, 0);
  NoteSpawned(events);
  ASSERT_TRUE(Eventually([&] { return !ReadFileOrEmpty(stream).empty(); })) << "no stats at once";
  RunOutput hog = Run({"exec", "oom", "sh", "-c", "tail /dev/zero"});
  EXPECT_EQ(hog.exit_code, 128 + SIGKILL) << hog.err;
  EXPECT_TRUE(Eventually([&] {
    return ReadFileOrEmpty(stream).find("{\"type\":\"oom\",\"id\":\"oom\"}\n") != std::string::npos;
  })) << ReadFileOrEmpty(stream);
  EXPECT_EQ(Run({"delete", "--force", "oom"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(events)) << "the stream outlived its container";
  EXPECT_TRUE(AwaitGone(init));
}

TEST_F(Oci, MemoryAndPidsLimitsAreInItsCgroups) {
  Config c = Cfg("res");
  c.resources_json = R"({"memory":{"limit":67108864},"pids":{"limit":42}})";
  pid_t pid = Create(c, "res");
  ASSERT_GT(pid, 0);
  std::string mem = ControllerDir("memory", CgroupPath("res"));
  std::string pids = ControllerDir("pids", CgroupPath("res"));
  ASSERT_FALSE(mem.empty()) << "no memory controller on this host";
  ASSERT_FALSE(pids.empty()) << "no pids controller on this host";
  bool v1 = Exists(mem + "/memory.limit_in_bytes");
  EXPECT_EQ(Trim(ReadFileOrEmpty(mem + (v1 ? "/memory.limit_in_bytes" : "/memory.max"))),
            "67108864");
  EXPECT_EQ(Trim(ReadFileOrEmpty(pids + "/pids.max")), "42");
  // update, its flags before the id or after it, as runc takes them (its suite puts them
  // after).
  RunOutput after = Run({"update", "res", "--pids-limit", "43"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(Trim(ReadFileOrEmpty(pids + "/pids.max")), "43");
  RunOutput before = Run({"update", "--pids-limit", "44", "res"});
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(Trim(ReadFileOrEmpty(pids + "/pids.max")), "44");
  // runc's -1: no memory limit any more.
  RunOutput unlimited = Run({"update", "--memory", "-1", "res"});
  EXPECT_EQ(unlimited.exit_code, 0) << unlimited.err;
  std::string limit = Trim(ReadFileOrEmpty(mem + (v1 ? "/memory.limit_in_bytes" : "/memory.max")));
  EXPECT_TRUE(limit == "max" || limit == "9223372036854771712") << limit;
  std::string procs = ReadFileOrEmpty(mem + "/cgroup.procs");
  EXPECT_EQ(Trim(procs), std::to_string(pid)) << "the container is not in its memory cgroup";
  EXPECT_EQ(Trim(ReadFileOrEmpty(pids + "/cgroup.procs")), std::to_string(pid));
  EXPECT_EQ(GroupsNotAt(pid, CgroupPath("res")), "") << "init is not in all its groups";
  EXPECT_EQ(Run({"delete", "res"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
  EXPECT_FALSE(Exists(mem)) << "delete left " << mem;
  EXPECT_FALSE(Exists(pids)) << "delete left " << pids;
}

// ---- attacks -------------------------------------------------------------------------

// The image makes a mount's destination a symlink to a host path: the mount and the
// directories made for it stay in the rootfs.
TEST_F(Oci, SymlinkedMountDestinationStaysInTheRootfs) {
  ScratchDir host;
  const std::string target = host.path() + "/newdir";
  Config c = Cfg("sym");
  c.mounts.push_back({"/mnt/evil", "tmpfs", "tmpfs", {"mode=755"}});
  std::string b = Bundle(c, "sym");
  ASSERT_EQ(symlink(target.c_str(), (b + "/rootfs/mnt/evil").c_str()), 0);
  pid_t pid = CreateFrom(b, "sym");
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ListDir(host.path()), std::vector<std::string>{}) << "the runtime wrote on the host";
  for (const std::string& line : Lines(ReadFileOrEmpty("/proc/self/mountinfo"))) {
    EXPECT_EQ(line.find(host.path()), std::string::npos) << "a mount on the host: " << line;
  }
  bool inside = false;
  for (const std::string& line :
       Lines(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/mountinfo"))) {
    std::istringstream f(line);
    std::string id, parent, devno, root, point;
    f >> id >> parent >> devno >> root >> point;
    if (point == target) inside = true;
  }
  EXPECT_TRUE(inside) << "no mount at " << target << " in the container's root";
  EXPECT_TRUE(Exists(b + "/rootfs" + target)) << "the mount point was not made in the rootfs";
  EXPECT_EQ(Run({"delete", "sym"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

TEST_F(Oci, NoHostFdLeaksIntoTheContainer) {
  ScratchDir host;
  int dir = open(host.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  Config c = Cfg("fds");
  c.args = {"ls", "/proc/self/fd"};
  // ls's own directory fd is 3.
  RunOutput r = Run({"run", "--bundle", Bundle(c, "fds"), "fds"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n1\n2\n3\n") << "fds open in the container's process";

  pid_t init = CreateAndStart(Cfg("fdx"), "fdx", "sleep");
  ASSERT_GT(init, 0);
  RunOutput e = Run({"exec", "fdx", "ls", "/proc/self/fd"}, dir);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out, "0\n1\n2\n3\n") << "fds open in an exec'd process";
  std::vector<std::string> init_fds = ListDir("/proc/" + std::to_string(init) + "/fd");
  EXPECT_EQ(init_fds, (std::vector<std::string>{"0", "1", "2"})) << "fds open in its init";
  close(dir);
  EXPECT_EQ(Run({"delete", "--force", "fdx"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(init));
}

// A sleeping process of the test's own with the pid `pid` (clone3 with set_tid), as pid
// reuse after a wrap-around would make; -1 if the pid is taken.
pid_t SpawnWithPid(pid_t pid) {
  struct clone_args args = {};
  args.exit_signal = SIGCHLD;
  args.set_tid = reinterpret_cast<uint64_t>(&pid);
  args.set_tid_size = 1;
  long r = syscall(SYS_clone3, &args, sizeof args);
  if (r == 0) {
    execl(kBusybox, "sleep", "1000000", nullptr);
    _exit(127);
  }
  return r > 0 ? static_cast<pid_t>(r) : -1;
}

// kill and delete of a container whose process exited signal nothing, not even a process
// that has its pid now (crun #1200: delete --force killed one after a pid wrap-around).
TEST_F(Oci, KillAndDeleteAfterExitSignalNothing) {
  Config c = Cfg("done");
  c.args = {"true"};
  pid_t pid = Create(c, "done");
  ASSERT_GT(pid, 0);
  std::optional<uint64_t> started = sys::StartTimeOf(pid);
  ASSERT_TRUE(started);
  RunOutput s = Run({"start", "done"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(AwaitGone(pid));
  EXPECT_EQ(StateOf("done").status, "stopped");
  // A process's start time counts clock ticks (USER_HZ): a decoy made in the tick its
  // process started in would be the same process to any runtime that reads it. The decoy
  // comes a tick later, as a reused pid would.
  const long hz = sysconf(_SC_CLK_TCK);
  for (;;) {
    struct timespec now;
    clock_gettime(CLOCK_BOOTTIME, &now);
    uint64_t ticks = static_cast<uint64_t>(now.tv_sec) * static_cast<uint64_t>(hz) +
                     static_cast<uint64_t>(now.tv_nsec) / (1000000000 / static_cast<uint64_t>(hz));
    if (ticks > *started) break;
    struct timespec tick = {0, 1000000000 / hz};
    nanosleep(&tick, nullptr);
  }
  pid_t decoy = SpawnWithPid(pid);
  ASSERT_EQ(decoy, pid) << "pid " << pid << " was taken meanwhile: " << strerror(errno);
  EXPECT_EQ(StateOf("done").status, "stopped") << "the runtime took the decoy for its process";
  for (std::vector<std::string> args : {std::vector<std::string>{"kill", "done", "KILL"},
                                        std::vector<std::string>{"kill", "done"}}) {
    RunOutput k = Run(args);
    EXPECT_NE(k.exit_code, 0) << "kill of a stopped container succeeded";
    EXPECT_NE(k.err.find("not running"), std::string::npos) << k.err;
  }
  // --all signals what the container's groups hold, which is nothing now (runc's kill -a
  // of a stopped container succeeds).
  for (const char* sig : {"0", "KILL"}) {
    RunOutput all = Run({"kill", "--all", "done", sig});
    EXPECT_EQ(all.exit_code, 0) << sig << ": " << all.err;
  }
  EXPECT_TRUE(Alive(decoy)) << "kill signalled the process that reused the container's pid";
  RunOutput d = Run({"delete", "--force", "done"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(Alive(decoy)) << "delete signalled the process that reused the container's pid";
  kill(decoy, SIGKILL);
  EXPECT_TRUE(AwaitGone(decoy));
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{});
}

TEST_F(Oci, DeleteOfACreatedContainerLeavesNothing) {
  pid_t pid = Create(Cfg("cr"), "cr");
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(GroupsOf("cr").empty()) << "no cgroup was made";
  RunOutput d = Run({"delete", "cr"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(AwaitGone(pid)) << "its process outlived delete";
  EXPECT_EQ(GroupsOf("cr"), std::vector<std::string>{});
  EXPECT_FALSE(StateOf("cr").ok);
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{});
}

// A namespace joined by path with a new pid namespace: a stage child joins it, makes the
// rest, and forks the container's pid 1 (the path engines take for a pod's containers).
TEST_F(Oci, AContainerJoiningANamespaceByPathGetsItsOwnPidOne) {
  pid_t pod = CreateAndStart(Cfg("pod"), "pod", "sleep");
  ASSERT_GT(pod, 0);
  Config c = Cfg("member");
  std::erase(c.namespaces, "network");
  c.namespaces.push_back("network=/proc/" + std::to_string(pod) + "/ns/net");
  c.args = {"sh", "-c", "echo $$ >/dev/shm/pid; exec sleep 1000000"};
  pid_t pid = CreateAndStart(c, "member", "sleep");
  ASSERT_GT(pid, 0);
  EXPECT_EQ(StateOf("member").pid, pid);
  EXPECT_EQ(StatOf(pid).second, getpid()) << "the created process is not the caller's child";
  EXPECT_EQ(NsOf(pid, "net"), NsOf(pod, "net"));
  EXPECT_NE(NsOf(pid, "pid"), NsOf(pod, "pid"));
  EXPECT_EQ(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/root/dev/shm/pid"), "1\n");

  EXPECT_EQ(Run({"delete", "--force", "member"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));

  // Failing after the stage child handed over, the init it forked goes too, and nothing of
  // the failed container is left.
  Config bad = c;
  bad.cwd = "/no-such-dir";
  RunOutput r = Run({"create", "--bundle", Bundle(bad, "bad"), "bad"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/no-such-dir"), std::string::npos) << r.err;
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{"pod"});
  EXPECT_EQ(GroupsOf("bad"), std::vector<std::string>{});
  EXPECT_EQ(LiveDescendants(), std::vector<pid_t>{pod}) << "a process was left";
  EXPECT_EQ(Run({"delete", "--force", "pod"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pod));
}

// ---- failures ------------------------------------------------------------------------

TEST_F(Oci, UnknownNamespaceFailsCleanly) {
  Config c = Cfg("ns");
  c.namespaces.push_back("foo");
  RunOutput r = Run({"create", "--bundle", Bundle(c), "ns"});
  ExpectCleanFailure(r, "ns");
  EXPECT_NE(r.err.find("namespace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("foo"), std::string::npos) << r.err;
  EXPECT_EQ(r.exit_code, 1) << "runc's status for a verb that failed";
}

// proc and sysfs go on an ordinary directory, never through a symlink the image put there
// (runc's rule and words): the masks over them are resolved by their own paths.
TEST_F(Oci, ProcOrSysThroughASymlinkIsRefused) {
  for (const std::string dir : {"proc", "sys"}) {
    Config c = Cfg("procln");
    std::string b = Bundle(c, "procln-" + dir);
    std::string at = b + "/rootfs/" + dir;
    ASSERT_TRUE(rmdir(at.c_str()) == 0 || errno == ENOENT) << at << ": " << strerror(errno);
    ASSERT_EQ(symlink("/elsewhere", at.c_str()), 0) << strerror(errno);
    RunOutput r = Run({"create", "--bundle", b, "procln"});
    ExpectCleanFailure(r, "procln");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("must be mounted on ordinary directory"), std::string::npos) << r.err;
  }
}

// A read-only /dev of the container's own still gets its devices and mount points, and is
// read-only once the container runs, as runc makes it (runc #3248).
TEST_F(Oci, AReadOnlyDevIsFilledThenMadeReadOnly) {
  Config c = Cfg("rodev");
  for (MountSpec& m : c.mounts) {
    if (m.destination == "/dev") m.options.push_back("ro");
  }
  c.args = {"sh", "-c",
            "grep '^tmpfs /dev ' /proc/mounts; touch /dev/x 2>/dev/null && echo wrote; "
            "test -c /dev/null && test -e /dev/pts/ptmx && echo filled; echo ok > /dev/shm/x && "
            "echo shm-writable"};
  RunOutput r = Run({"run", "--bundle", Bundle(c, "rodev"), "rodev"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tmpfs /dev tmpfs ro,", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filled\nshm-writable\n"), std::string::npos) << r.out;
  // With a terminal, /dev/console is made before /dev is made read-only.
  c.terminal = true;
  RunOutput t = Run({"run", "--bundle", Bundle(c, "rodev-tty"), "rodev"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("filled"), std::string::npos) << t.out;
}

TEST_F(Oci, MissingArgsFailsCleanly) {
  Config c = Cfg("args");
  c.args.clear();
  RunOutput r = Run({"create", "--bundle", Bundle(c), "args"});
  ExpectCleanFailure(r, "args");
  EXPECT_EQ(r.exit_code, 1);
  if (IsBrig()) {
    EXPECT_NE(r.err.find("process.args"), std::string::npos) << r.err;
  }
}

TEST_F(Oci, MissingRootfsFailsCleanly) {
  Config c = Cfg("rootfs");
  c.root_path = "no-such-rootfs";
  RunOutput r = Run({"create", "--bundle", Bundle(c), "rootfs"});
  ExpectCleanFailure(r, "rootfs");
  EXPECT_EQ(r.exit_code, 1);
  if (IsBrig()) {
    EXPECT_NE(r.err.find("root.path"), std::string::npos) << r.err;
  }
}

// A command that cannot be run fails create, in runc's words: Docker and podman make "no
// such file or directory" and "executable file not found" their 127, and "permission
// denied" their 126.
TEST_F(Oci, MissingCommandFailsAtCreate) {
  Config c = Cfg("nocmd");
  c.args = {"/bin/no-such-command"};
  RunOutput r = Run({"create", "--bundle", Bundle(c), "nocmd"});
  ExpectCleanFailure(r, "nocmd");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no such file or directory"), std::string::npos) << r.err;

  c.args = {"no-such-command"};
  RunOutput path = Run({"create", "--bundle", Bundle(c, "nocmd-path"), "nocmd"});
  ExpectCleanFailure(path, "nocmd");
  EXPECT_EQ(path.exit_code, 1);
  EXPECT_NE(path.err.find("executable file not found in $PATH"), std::string::npos) << path.err;
}

TEST_F(Oci, NonExecutableCommandFailsAtCreate) {
  Config c = Cfg("noexec");
  c.args = {"/etc/plain"};
  std::string b = Bundle(c);
  std::ofstream(b + "/rootfs/etc/plain") << "#!/bin/sh\necho ran\n";
  chmod((b + "/rootfs/etc/plain").c_str(), 0644);
  RunOutput r = Run({"create", "--bundle", b, "noexec"});
  ExpectCleanFailure(r, "noexec");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/etc/plain"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
}

// Until execve, container init is brig's own binary inside the container: a process the
// container runs meanwhile (an exec into a created container, as root there) can neither
// read that binary through /proc/1/exe nor follow init's descriptors (runc CVE-2019-5736:
// it would overwrite the runtime on the host).
TEST_F(Oci, TheRuntimeBinaryIsOutOfReachBeforeStart) {
  pid_t pid = Create(Cfg("exe"), "exe");
  ASSERT_GT(pid, 0);
  RunOutput e = Run({"exec", "exe", "sh", "-c",
                     "if cat /proc/1/exe >/dev/null 2>&1; then echo exe=read; else echo "
                     "exe=denied; fi; if readlink /proc/1/fd/0 >/dev/null 2>&1; then echo "
                     "fd=read; else echo fd=denied; fi"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("exe=denied"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("fd=denied"), std::string::npos) << e.out;
  EXPECT_EQ(Run({"delete", "exe"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

// Until `start`, pid 1 is brig's own process: its command line (the runtime's flags, the
// bundle's and the state directory's host paths) is not the container's to read.
TEST_F(Oci, TheRuntimesCommandLineIsNotShownBeforeStart) {
  pid_t pid = Create(Cfg("argv"), "argv");
  ASSERT_GT(pid, 0);
  RunOutput e = Run({"exec", "argv", "cat", "/proc/1/cmdline"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.find(scratch_.path()), std::string::npos) << "host paths in: " << e.out;
  EXPECT_EQ(e.out.find("--bundle"), std::string::npos) << e.out;
  EXPECT_EQ(Run({"delete", "argv"}).exit_code, 0);
  EXPECT_TRUE(AwaitGone(pid));
}

}  // namespace
}  // namespace brig::testing::oci
