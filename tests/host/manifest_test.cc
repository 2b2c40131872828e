// The enforcement manifest (issue 16, item 10): a real run's manifest checked against what
// its sandbox has (mountinfo, nftables elements, seccomp), a dry run that makes nothing,
// and no secret in the manifest or the audit.
#include <google/protobuf/util/json_util.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "host/host_fixture.h"
#include "host/test_world.h"
#include "proto/brig.pb.h"
#include "security/seccomp_cache.h"
#include "util/digest.h"

namespace brig::testing {
namespace {

constexpr char kSecret[] = "sk-brig-manifest-test-secret-31337";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

v1::Manifest ParseManifest(const std::string& json) {
  v1::Manifest m;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &m).ok()) << json;
  return m;
}


// Mount point -> its per-mount options ("ro,nosuid,..."), from mountinfo text.
std::map<std::string, std::string> MountOptions(const std::string& mountinfo) {
  std::map<std::string, std::string> out;
  std::istringstream in(mountinfo);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    if (f >> id >> parent >> dev >> root >> point >> opts) out[point] = opts;
  }
  return out;
}

bool HasFlag(const v1::ManifestMount& m, const std::string& flag) {
  for (const auto& f : m.flags()) {
    if (f == flag) return true;
  }
  return false;
}

// Every mount the manifest lists is in the sandbox's mountinfo, read-only where it says.
void ExpectMountsMatch(const v1::Manifest& m, const std::string& mountinfo) {
  auto mounts = MountOptions(mountinfo);
  int checked = 0;
  for (const auto& mount : m.mounts()) {
    const std::string& k = mount.kind();
    if (k != "bind" && k != "tmpfs" && k != "proc" && k != "devpts" && k != "protect") continue;
    auto it = mounts.find(mount.target());
    ASSERT_NE(it, mounts.end()) << mount.target() << " is not mounted\n" << mountinfo;
    bool ro = it->second.rfind("ro", 0) == 0;
    if (HasFlag(mount, "ro")) {
      EXPECT_TRUE(ro) << mount.target() << " " << it->second;
    }
    if (HasFlag(mount, "rw")) {
      EXPECT_FALSE(ro) << mount.target() << " " << it->second;
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

class Manifest : public HostTest {};

// The secret only in brig's environment, as an operator's key would be.
class SecretEnv {
 public:
  SecretEnv() { setenv("BRIG_MANIFEST_TEST_KEY", kSecret, 1); }
  ~SecretEnv() { unsetenv("BRIG_MANIFEST_TEST_KEY"); }
};

TEST_F(Manifest, ARealRunsManifestIsWhatItsSandboxHas_NoSecretAndTheAuditHasItsDigest) {
  SecretEnv env;
  ScratchDir out, ws;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string manifest = out.path() + "/manifest.json", log = out.path() + "/audit.jsonl";
  auto r = RunBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(), "--manifest",
                    manifest, "--audit-log", log, "--env", "VISIBLE_NAME=" + std::string(kSecret),
                    "--broker",
                    "model=port=8080,to=http://127.0.0.1:9,"
                    "header=x-api-key:env:BRIG_MANIFEST_TEST_KEY,methods=POST,paths=/v1/",
                    "--attempt", "3", "--", "sh", "-c",
                    "cat /proc/self/mountinfo; grep '^Seccomp:' /proc/self/status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string json = ReadFileOrEmpty(manifest);
  v1::Manifest m = ParseManifest(json);
  EXPECT_FALSE(m.dry_run());
  ExpectMountsMatch(m, r.out);
  EXPECT_TRUE(Contains(r.out, "Seccomp:\t2")) << r.out;
  EXPECT_EQ(m.seccomp().policy(), "default");
  // The program the policy compiles to, compiled here without the cache: the supervisor's,
  // from the cache or not, is the same bytes. (Reading back what the kernel holds,
  // PTRACE_SECCOMP_GET_FILTER, would need the workload stopped under ptrace.)
  auto compiled = security::CompileSeccompFile(m.seccomp().path(), "");
  ASSERT_TRUE(compiled) << compiled.error().Render();
  EXPECT_EQ(m.seccomp().bpf_sha256(),
            util::Sha256Hex(std::string_view(reinterpret_cast<const char*>(compiled->insns.data()),
                                             compiled->insns.size() * sizeof(sock_filter))));
  EXPECT_EQ(m.seccomp().policy_sha256(),
            util::Sha256Hex(ReadFileOrEmpty(m.seccomp().path())));
  EXPECT_EQ(m.profile().sha256(), util::Sha256Hex(ReadFileOrEmpty(RwProfile())));
  ASSERT_EQ(m.brokers_size(), 1);
  EXPECT_EQ(m.brokers(0).header_names(0), "x-api-key");
  EXPECT_EQ(m.attempt(), 3u);
  bool named = false;
  for (const auto& n : m.env_names()) named |= n == "VISIBLE_NAME";
  EXPECT_TRUE(named);
  // Never a value: not in the manifest, not in the audit.
  EXPECT_FALSE(Contains(json, kSecret)) << json;
  EXPECT_FALSE(Contains(ReadFileOrEmpty(log), kSecret));
  auto events = ReadAuditEvents(log);
  ASSERT_EQ(events.size(), 2u);
  const v1::SandboxStart& s = events[0].sandbox_start();
  EXPECT_EQ(s.manifest_sha256(), util::Sha256Hex(json)) << "the digest is of the file's bytes";
  EXPECT_EQ(s.posture(), v1::POSTURE_NONE);
  ASSERT_EQ(s.brokers_size(), 1);
  EXPECT_EQ(s.brokers(0).name(), "model");
  EXPECT_EQ(s.brokers(0).target(), "http://127.0.0.1:9");
  EXPECT_EQ(s.attempt(), 3u);
}

// The manifest names the cgroups a run makes (issue 32, item 6): under --cgroup-parent,
// one per hierarchy, each named after the sandbox; a dry run makes none of them, nor the
// parent.
TEST_F(Manifest, ADryRunListsTheCgroupsItWouldMakeAndMakesNone) {
  const std::string parent = "/brig-manifest-test-" + std::to_string(getpid());
  auto r = RunBrig({"run", "--dry-run", "--cgroup-parent", parent, "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Manifest m = ParseManifest(r.out);
  ASSERT_GT(m.limits().cgroups_size(), 0) << r.out;
  for (const std::string& dir : m.limits().cgroups()) {
    EXPECT_EQ(dir.rfind("/sys/fs/cgroup/", 0), 0u) << dir;
    EXPECT_TRUE(Contains(dir, parent + "/" + m.sandbox_id())) << dir;
    EXPECT_EQ(dir.substr(dir.size() - m.sandbox_id().size()), m.sandbox_id()) << dir;
    std::string made = dir.substr(0, dir.find(parent) + parent.size());
    EXPECT_NE(access(made.c_str(), F_OK), 0) << made << " was made by a dry run";
  }
}

// A planning step holds no secret (issue 32, item 7): a dry run whose broker's variable is
// unset still gets its manifest, the header named as unread there and on stderr; a run
// refuses it.
TEST_F(Manifest, ADryRunWithABrokersVariableUnsetNamesItAndPlansAnyway) {
  const std::string broker =
      "model=port=8080,to=http://127.0.0.1:9,header=x-api-key:env:BRIG_TEST_UNSET_KEY";
  auto r = RunBrig({"run", "--dry-run", "--broker", broker, "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Manifest m = ParseManifest(r.out);
  ASSERT_EQ(m.brokers_size(), 1);
  ASSERT_EQ(m.brokers(0).unread_headers_size(), 1);
  EXPECT_EQ(m.brokers(0).unread_headers(0), "header x-api-key: $BRIG_TEST_UNSET_KEY is not set");
  EXPECT_TRUE(Contains(r.err,
                       "brig: broker model: header x-api-key: $BRIG_TEST_UNSET_KEY is not "
                       "set"))
      << r.err;
  auto run = RunBrig({"run", "--broker", broker, "--", "true"});
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_TRUE(Contains(run.err, "$BRIG_TEST_UNSET_KEY is not set")) << run.err;
}

// The hidden paths a workspace holds are in its manifest whatever the workspace's mode
// (issue 32, item 7: a copy's were not).
TEST_F(Manifest, TheHiddenPathsFoundAreListedForACopyAsForABoundWorkspace) {
  ScratchDir ws;
  ws.Write(".env", "SECRET=1\n");
  ws.Write("id.pem", "KEY\n");
  ASSERT_EQ(RunCommand({"chown", "-R", "1234:1234", ws.path()}).exit_code, 0);
  for (const char* profile : {"untrusted-code-read", "untrusted-code-write"}) {
    auto r =
        RunBrig({"run", "--dry-run", "--profile", profile, "--workspace", ws.path(), "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    v1::Manifest m = ParseManifest(r.out);
    std::vector<std::string> hidden(m.hidden().begin(), m.hidden().end());
    EXPECT_EQ(hidden, (std::vector<std::string>{"/workspace/.env", "/workspace/id.pem"}))
        << profile;
  }
}

TEST_F(Manifest, ADryRunRefusesBadInputAsARunDoes) {
  ScratchDir out;
  auto r = RunBrig({"run", "--dry-run", "--memory", "lots", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = RunBrig({"run", "--dry-run", "--workspace", out.path() + "/absent", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(Manifest, TheManifestPathIsCheckedAsTheResultsIs) {
  ScratchDir out;
  std::string victim = out.Write("victim", "precious\n");
  std::string link = out.path() + "/manifest.json";
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  auto r = RunBrig({"run", "--manifest", link, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "--manifest")) << r.err;
  EXPECT_EQ(ReadFileOrEmpty(victim), "precious\n");
}

// With an interface: the elements the manifest lists are the ones nft shows while the
// sandbox runs (it waits for the test's word), and the address is the sandbox's own.
class ManifestNet : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(world_.Build(), "");
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
    }
    HostTest::TearDown();
  }
  TestWorld world_;
};

TEST_F(ManifestNet, TheSetElementsAreTheOnesInstalled) {
  ScratchDir ws, out, dir;
  std::string manifest = out.path() + "/manifest.json";
  pid_t pid = world_.SpawnBrig(
      {"run", "--profile", SourceRoot() + "/tests/host/profiles/egress.textproto",
       "--workspace", ws.path(), "--manifest", manifest, "--", "sh", "-c",
       "ip -o -4 addr show dev eth0 2>/dev/null || cat /proc/net/fib_trie; echo up; "
       "while [ ! -e /workspace/go ]; do sleep 0.02; done"},
      dir.path());
  ASSERT_TRUE(Eventually([&] { return Contains(ReadFileOrEmpty(dir.path() + "/stdout"), "up"); }))
      << ReadFileOrEmpty(dir.path() + "/stderr");
  v1::Manifest m = ParseManifest(ReadFileOrEmpty(manifest));
  const std::string& addr = m.network().address();
  EXPECT_TRUE(Contains(ReadFileOrEmpty(dir.path() + "/stdout"), addr)) << addr;
  ASSERT_EQ(m.network().nft_sets_size(), 6);
  for (const auto& s : m.network().nft_sets()) {
    bool map = s.elements_size() > 0 && Contains(s.elements(0), " : ");
    auto listed =
        world_.InWorld({"nft", "list", map ? "map" : "set", s.family(), s.table(), s.set()});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    // Where the kernel expires elements at a sandbox's end, they carry a timeout that is
    // never reached (net/nft.h): nft prints it and the time left, the manifest does not.
    std::string elements =
        std::regex_replace(listed.out, std::regex(" timeout [0-9dhms]+ expires [0-9dhms]+"), "");
    for (const auto& e : s.elements()) {
      EXPECT_TRUE(Contains(elements, e)) << s.set() << ": " << e << " not in\n" << listed.out;
    }
  }
  ws.Write("go", "");
  EXPECT_EQ(world_.Wait(pid), 0) << ReadFileOrEmpty(dir.path() + "/stderr");
}

// /run/brig's tree, as names.
std::set<std::string> RunBrigTree() {
  std::set<std::string> names;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator("/run/brig", ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    names.insert(it->path().string());
  }
  return names;
}

// What a dry run could make. Other work on this host makes and removes sandboxes meanwhile:
// the world's links and tables, the named network namespaces and the test's own directories
// must not change at all; in /run/brig and the cgroups nothing may appear that names the
// dry run's sandbox or the world, nor any seccomp cache entry.
struct HostState {
  std::set<std::string> run_brig;
  std::vector<std::string> cgroups;
  std::string netns, links, tables, workspace, copy_dir;
};

HostState Take(const TestWorld& world, const std::string& ws, const std::string& copy_dir) {
  auto ls = [](const std::string& dir) {
    return RunCommand({"find", dir, "-printf", "%P %y %m %U:%G %s %T@\\n"}).out;
  };
  return {RunBrigTree(),
          BrigCgroups(),
          RunCommand({"ip", "netns"}).out,
          world.InWorld({"ip", "-o", "link"}).out,
          world.InWorld({"nft", "list", "tables"}).out,
          ls(ws),
          ls(copy_dir)};
}

// Empty if `after` holds nothing the dry run `id` in `world` could have made since `before`.
std::string MadeByDryRun(const HostState& before, const HostState& after, const std::string& id,
                         const TestWorld& world) {
  std::string made;
  if (before.netns != after.netns) made += "ip netns: " + after.netns;
  if (before.links != after.links) made += "links: " + after.links;
  if (before.tables != after.tables) made += "nft tables: " + after.tables;
  if (before.workspace != after.workspace) made += "workspace: " + after.workspace;
  if (before.copy_dir != after.copy_dir) made += "--copy-dir: " + after.copy_dir;
  std::string ino = std::to_string(world.WorldInode());
  for (const auto& p : after.run_brig) {
    bool ours = Contains(p, id.substr(5)) || Contains(p, "/net/" + ino) ||
                p.rfind("/run/brig/seccomp/", 0) == 0;
    if (ours && !before.run_brig.count(p)) made += "made " + p + "\n";
  }
  for (const auto& c : after.cgroups) {
    if (Contains(c, id)) made += "cgroup " + c + "\n";
  }
  return made;
}

TEST_F(ManifestNet, ADryRunPlansEverythingAndMakesNothing) {
  SecretEnv env;
  ScratchDir ws, copy_dir;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  // --copy-dir needs a file system that holds an unnamed image file (the vm tier's /tmp,
  // overlayfs on 9p, does not): a tmpfs of the test's own.
  ASSERT_EQ(mount("tmpfs", copy_dir.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m"), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{copy_dir.path()};
  std::string egress = SourceRoot() + "/tests/host/profiles/egress.textproto";
  std::string broker = "model=unix=/run/model.sock,to=http://127.0.0.1:9,"
                       "header=x-api-key:env:BRIG_MANIFEST_TEST_KEY";
  const std::vector<std::vector<std::string>> runs = {
      {"--profile", egress, "--allow-host", "extra.test", "--broker", broker},
      // A read-write workspace's protected paths (.git is absent: a real run puts a
      // placeholder there) and a copy's scratch and disk image under --copy-dir.
      {"--profile", "trusted-code-write"},
      {"--profile", "trusted-code-write", "--workspace-mode", "copy", "--copy-dir",
       copy_dir.path(), "--disk-size", "64M"},
  };
  for (const auto& flags : runs) {
    HostState before = Take(world_, ws.path(), copy_dir.path());
    std::vector<std::string> args = {"run", "--dry-run", "--workspace", ws.path()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "true"});
    auto r = world_.Brig(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    v1::Manifest m = ParseManifest(r.out);
    EXPECT_EQ(MadeByDryRun(before, Take(world_, ws.path(), copy_dir.path()), m.sandbox_id(),
                           world_),
              "")
        << "a dry run changed the host: " << flags[1];
    EXPECT_TRUE(m.dry_run());
    EXPECT_FALSE(Contains(r.out, kSecret));
    EXPECT_GT(m.mounts_size(), 10) << r.out;
    EXPECT_EQ(m.seccomp().bpf_sha256().size(), 64u);
  }
  auto r = world_.Brig({"run", "--dry-run", "--profile", egress, "--allow-host", "extra.test",
                        "--", "true"});
  v1::Manifest m = ParseManifest(r.out);
  EXPECT_TRUE(Contains(m.network().address(), "not allocated")) << r.out;
  EXPECT_EQ(m.network().nft_sets_size(), 0);
  ASSERT_EQ(m.network().allow_hosts_size(), 3);
  EXPECT_EQ(m.network().allow_hosts(2), "extra.test");
}

}  // namespace
}  // namespace brig::testing
