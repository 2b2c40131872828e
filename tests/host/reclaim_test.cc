// What a killed brig left is reclaimed by the next start (issue 14, item 6): a `brig run`
// removes the record, cgroups, address lease and nftables elements of every sandbox whose
// supervisor is gone, leaves a live sandbox's alone, and drops the records (and brig's
// state directory) of a network namespace that no longer exists, as brig gc does.
//
// Each sandbox is killed mid-run once its workload has printed a line, never after a sleep.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

std::string NetProfile() { return SourceRoot() + "/tests/host/profiles/network.textproto"; }

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

template <typename F>
bool Eventually(F done, std::chrono::milliseconds limit = 3s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The record's entries of one kind ("cgroup", "net").
std::vector<std::string> Entries(const std::string& record, const std::string& kind) {
  std::vector<std::string> out;
  std::istringstream in(record);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kind + " ", 0) == 0) out.push_back(line.substr(kind.size() + 1));
  }
  return out;
}

// The one record that is new since `before`.
std::string NewRecord(const Residue& before) {
  std::set<std::string> old(before.records.begin(), before.records.end());
  for (const auto& id : TakeResidue().records) {
    if (!old.count(id)) return id;
  }
  return "";
}

uint64_t InodeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

class Reclaim : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  }

  std::vector<std::string> RunArgs(const std::string& script) {
    return {"run", "--profile", NetProfile(), "--workspace", ws_.path(), "--",
            "sh",  "-c",       script};
  }

  // A workload that prints "started" and then sleeps under a name of its own.
  std::string Sleeper() {
    sleeper_ = "sleep " + std::to_string(100000 + getpid() * 10 + ++sleepers_);
    return "echo started; exec " + sleeper_;
  }
  // Waits for the workload's first line, then kills brig and waits for its sandbox to die.
  void KillOnceStarted(pid_t brig, const ScratchDir& dir, const std::function<int(pid_t)>& wait) {
    ASSERT_TRUE(Eventually(
        [&] { return Contains(ReadFileOrEmpty(dir.path() + "/stdout"), "started\n"); }, 15s))
        << ReadFileOrEmpty(dir.path() + "/stderr");
    size_t inits = FindProcesses("brig-init").size();
    ASSERT_EQ(kill(brig, SIGKILL), 0);
    EXPECT_EQ(wait(brig), 128 + SIGKILL);
    EXPECT_TRUE(Eventually([&] { return FindProcesses("brig-init").size() < inits; }))
        << "brig init outlived brig";
    EXPECT_TRUE(Eventually([&] { return FindProcesses(sleeper_).empty(); }))
        << "the workload outlived brig";
  }

  // What a test that saw brig fail must not leave for others: the record and its groups.
  static void ForceRemove(const std::string& id) {
    std::string record = ReadFileOrEmpty("/run/brig/sandboxes/" + id);
    for (const auto& g : Entries(record, "cgroup")) rmdir(g.c_str());
    unlink(("/run/brig/sandboxes/" + id).c_str());
  }

  ScratchDir ws_;
  std::string sleeper_;
  int sleepers_ = 0;
};

// The world's nftables ruleset, for the sandbox's elements (its address, its port).
// The world's ruleset, without the time a timed element has left (net/nft.h), which moves.
std::string Ruleset(const TestWorld& world) {
  return std::regex_replace(world.InWorld({"nft", "list", "ruleset"}).out,
                            std::regex(" expires [0-9dhms]+"), "");
}

TEST_F(Reclaim, TheNextRunRemovesWhatAKilledBrigLeft) {
  TestWorld world;
  ASSERT_EQ(world.Build(), "");
  ScratchDir dir;
  Residue before = TakeResidue();
  pid_t brig = world.SpawnBrig(RunArgs(Sleeper()), dir.path());
  KillOnceStarted(brig, dir, [&](pid_t p) { return world.Wait(p); });
  std::string id = NewRecord(before);
  ASSERT_NE(id, "");
  std::string record = ReadFileOrEmpty("/run/brig/sandboxes/" + id);
  auto groups = Entries(record, "cgroup");
  auto nets = Entries(record, "net");
  ASSERT_FALSE(groups.empty()) << record;
  ASSERT_EQ(nets.size(), 1u) << record;
  // "NETNS,ID,PORT,ADDR,...": the sandbox's address is the fourth field.
  std::vector<std::string> fields;
  std::istringstream in(nets[0]);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  ASSERT_GE(fields.size(), 4u) << nets[0];
  std::string addr = fields[3];
  // All of it is still there, or the checks below prove nothing.
  ASSERT_EQ(world.Leases().size(), 1u);
  ASSERT_TRUE(Contains(Ruleset(world), addr)) << addr;
  for (const auto& g : groups) ASSERT_TRUE(Exists(g)) << g;

  auto next = world.Brig({"run", "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "");
  EXPECT_EQ(next.err, "");
  EXPECT_FALSE(Exists("/run/brig/sandboxes/" + id)) << "the dead run's record is left";
  for (const auto& g : groups) EXPECT_FALSE(Exists(g)) << "its cgroup is left: " << g;
  EXPECT_EQ(Lines(world.Leases()), "") << "its address lease is left";
  EXPECT_FALSE(Contains(Ruleset(world), addr)) << "its nftables elements are left";
  world.Brig({"gc"});
  ForceRemove(id);
  EXPECT_EQ(world.TearDown(), "");
}

// A brig killed between taking an address and noting it in the lease leaves an empty file
// that no record names (issue 27, item 7): the next run and brig gc remove it; a lease some
// process holds stays, empty or not.
TEST_F(Reclaim, AnAddressLeaseAKilledBrigNeverNotedIsRemoved) {
  TestWorld world;
  ASSERT_EQ(world.Build(), "");
  auto first = world.Brig({"run", "--profile", NetProfile(), "--", "true"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string addr = world.StateDir() + "/addr/";
  ASSERT_TRUE(Exists(addr)) << "no lease directory after a run with a network";
  auto make = [&](const std::string& name) {
    return sys::UniqueFd(open((addr + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  };
  ASSERT_TRUE(make("10.213.255.1"));
  sys::UniqueFd held = make("10.213.255.2");
  ASSERT_TRUE(held);
  ASSERT_EQ(flock(held.get(), LOCK_EX | LOCK_NB), 0);
  auto next = world.Brig({"run", "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(Exists(addr + "10.213.255.1")) << "the next run left an empty unheld lease";
  EXPECT_TRUE(Exists(addr + "10.213.255.2")) << "a held lease was removed";
  ASSERT_TRUE(make("10.213.255.3"));
  auto gc = world.Brig({"gc"});
  EXPECT_TRUE(Contains(gc.out, "removed " + addr +
                                   "10.213.255.3 (its brig was killed before it used the "
                                   "address)"))
      << gc.out << gc.err;
  EXPECT_FALSE(Exists(addr + "10.213.255.3"));
  EXPECT_TRUE(Exists(addr + "10.213.255.2"));
  held.Reset();
  unlink((addr + "10.213.255.2").c_str());
  EXPECT_EQ(world.TearDown(), "");
}

TEST_F(Reclaim, ALiveSandboxIsLeftAlone) {
  TestWorld world;
  ASSERT_EQ(world.Build(), "");
  ScratchDir dir;
  Residue before = TakeResidue();
  pid_t brig = world.SpawnBrig(
      RunArgs("echo started; while [ ! -e /workspace/stop ]; do sleep 0.05; done; "
              "ip -4 -o addr show dev eth0"),
      dir.path());
  ASSERT_TRUE(Eventually(
      [&] { return Contains(ReadFileOrEmpty(dir.path() + "/stdout"), "started\n"); }, 15s))
      << ReadFileOrEmpty(dir.path() + "/stderr");
  std::string id = NewRecord(before);
  ASSERT_NE(id, "");
  std::string record = ReadFileOrEmpty("/run/brig/sandboxes/" + id);
  auto leases = world.Leases();
  std::string rules = Ruleset(world);

  // Runs in the world and on the host, and a gc, all while it runs.
  EXPECT_EQ(world.Brig({"run", "--", "true"}).exit_code, 0);
  EXPECT_EQ(RunBrig({"run", "--", "true"}).exit_code, 0);
  EXPECT_FALSE(Contains(world.Brig({"gc"}).out, id));

  EXPECT_EQ(ReadFileOrEmpty("/run/brig/sandboxes/" + id), record);
  for (const auto& g : Entries(record, "cgroup")) EXPECT_TRUE(Exists(g)) << g;
  EXPECT_EQ(world.Leases(), leases);
  EXPECT_EQ(Ruleset(world), rules);
  ws_.Write("stop", "");
  EXPECT_EQ(world.Wait(brig), 0) << ReadFileOrEmpty(dir.path() + "/stderr");
  EXPECT_TRUE(Contains(ReadFileOrEmpty(dir.path() + "/stdout"), "inet 10.213."))
      << ReadFileOrEmpty(dir.path() + "/stdout");
  EXPECT_EQ(world.TearDown(), "");
}

// A new namespace can get the inode of one that is gone, and with it the gone one's state
// directory. The directory notes its namespace's cookie; a run that finds another there
// drops the dead namespace's leases and claims the directory.
TEST_F(Reclaim, AReusedInodeDoesNotInheritTheGoneNamespacesLeases) {
  TestWorld world;
  ASSERT_EQ(world.Build(), "");
  ASSERT_EQ(RunCommand({"mkdir", "-p", world.StateDir() + "/addr"}).exit_code, 0);
  ScratchDir scratch;
  std::string dead = world.StateDir() + "/addr/10.213.0.9";
  ASSERT_EQ(RunCommand({"cp", scratch.Write("lease", "left by a namespace that is gone"), dead})
                .exit_code,
            0);
  ASSERT_EQ(RunCommand({"cp", scratch.Write("cookie", "1"), world.StateDir() + "/netns"})
                .exit_code,
            0);
  auto r = world.Brig(RunArgs("true"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Exists(dead)) << "the gone namespace's lease was kept";
  std::string cookie = ReadFileOrEmpty(world.StateDir() + "/netns");
  EXPECT_NE(cookie, "1");
  EXPECT_NE(cookie, "");
  EXPECT_EQ(Lines(world.Leases()), "");
  EXPECT_EQ(world.TearDown(), "");
}

// A sandbox of a network namespace held by nothing but the test's descriptor: killed, then
// the namespace goes. Returns the dead run's id and the namespace's inode.
class GoneNetns : public Reclaim {
 protected:
  std::pair<std::string, uint64_t> KillInDoomedNetns() {
    int ns = NewNetns();
    EXPECT_GE(ns, 0);
    uint64_t ino = InodeOf(ns);
    ScratchDir dir;
    Residue before = TakeResidue();
    pid_t brig = SpawnBrigIn(ns, RunArgs(Sleeper()), dir.path());
    KillOnceStarted(brig, dir, [](pid_t p) { return WaitExit(p); });
    std::string id = NewRecord(before);
    EXPECT_NE(id, "") << ReadFileOrEmpty(dir.path() + "/stderr");
    EXPECT_EQ(Entries(ReadFileOrEmpty("/run/brig/sandboxes/" + id), "net").size(), 1u);
    EXPECT_TRUE(Exists("/run/brig/net/" + std::to_string(ino)));
    close(ns);
    return {id, ino};
  }
};

TEST_F(GoneNetns, BrigGcDropsTheRecord) {
  auto [id, ino] = KillInDoomedNetns();
  ASSERT_NE(id, "");
  auto gc = RunBrig({"gc"});
  EXPECT_FALSE(Contains(gc.err, id)) << gc.err;
  // Exit 1 only for what it reports, which is never this record (others' may be there).
  EXPECT_EQ(gc.exit_code, gc.err.empty() ? 0 : 1) << gc.err;
  EXPECT_FALSE(Exists("/run/brig/sandboxes/" + id)) << "gc kept the record:\n" << gc.err;
  EXPECT_FALSE(Exists("/run/brig/net/" + std::to_string(ino))) << "gc kept its state directory";
  // Nothing of it is reported again: a second gc has nothing to say about it.
  auto again = RunBrig({"gc"});
  EXPECT_FALSE(Contains(again.out + again.err, id)) << again.out << again.err;
  ForceRemove(id);
  RunCommand({"rm", "-rf", "--one-file-system", "/run/brig/net/" + std::to_string(ino)});
}

TEST_F(GoneNetns, TheNextRunDropsTheRecord) {
  auto [id, ino] = KillInDoomedNetns();
  ASSERT_NE(id, "");
  auto next = RunBrig({"run", "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.err, "");
  EXPECT_FALSE(Exists("/run/brig/sandboxes/" + id)) << "the next run kept the record";
  EXPECT_FALSE(Exists("/run/brig/net/" + std::to_string(ino)))
      << "the next run kept its state directory";
  ForceRemove(id);
  RunCommand({"rm", "-rf", "--one-file-system", "/run/brig/net/" + std::to_string(ino)});
}

}  // namespace
}  // namespace brig::testing
