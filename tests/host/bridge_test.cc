// Sandboxes keep their network while others come and go (issue 14, item 14). A bridge
// without an address of its own takes the lowest MAC among its ports, so it changed each
// time a sandbox whose port sorts lowest came or went; a running sandbox that had learnt
// the gateway's MAC meanwhile then sent its DNS queries and new connections to an address
// no one had any more, until its neighbour entry expired (10 s or more). brig's bridge has
// an address of its own (addr_assign_type 3, set by user) that no port changes.
//
// The sequence, in a test world of the test's own (test_world.h): sandbox A runs; sandbox
// B starts and its port gets the lowest MAC there is (02:00:00:00:00:01: the kernel gives a
// veth a random one, the test makes it the lowest); A resolves (and learns the gateway's
// MAC); B ends; A resolves again, and must get its answer.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <thread>

#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kLowestMac[] = "02:00:00:00:00:01";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class Bridge : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"/usr/bin/getent", "/usr/bin/python3", "/usr/bin/unshare"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << "no " << tool;
    }
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({"allowed.test"}), "");
    world_.Dns().SetA("allowed.test", {kWebHost});
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
    }
    HostTest::TearDown();
  }

  std::vector<std::string> RunArgs(const std::string& script) {
    return {"run",         "--profile", SourceRoot() + "/tests/host/profiles/egress.textproto",
            "--workspace", ws_.path(),  "--dns-upstream",
            kDnsHost,      "--env",     "RES_OPTIONS=timeout:2 attempts:1",
            "--",          "sh",        "-c",
            script};
  }

  // A link's MAC address in the world ("" if it has none).
  std::string Mac(const std::string& link) {
    auto r = world_.InWorld({"ip", "-o", "link", "show", "dev", link});
    std::smatch m;
    static const std::regex ether("link/ether ([0-9a-f:]{17})");
    return std::regex_search(r.out, m, ether) ? m[1].str() : "";
  }

  // The bridge's addr_assign_type (0 permanent, 1 random, 2 stolen, 3 set by user), read
  // from a sysfs of the world's own, mounted in a mount namespace of the command's own.
  std::string AssignType() {
    auto r =
        world_.InWorld({"unshare", "-m", "sh", "-c",
                        "mount -t sysfs sysfs /sys && cat /sys/class/net/brig0/addr_assign_type"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // Lets the sandbox waiting on `name` go on: makes the workspace's file NAMEN for its Nth
  // wait (a FIFO would do, but brig holds the workspace's FIFOs out of the sandbox's reach).
  void Tell(const std::string& name) { ws_.Write(name + std::to_string(++told_[name]), ""); }

  bool Says(const ScratchDir& dir, const std::string& what) {
    return Eventually([&] { return Contains(ReadFileOrEmpty(dir.path() + "/stdout"), what); });
  }

  TestWorld world_;
  ScratchDir ws_;
  std::map<std::string, int> told_;
};

// The sandbox's side of Tell: waits until the workspace holds the file $1.
constexpr char kWaitFor[] = "wait_for() { while [ ! -e /workspace/$1 ]; do sleep 0.02; done; }; ";

TEST_F(Bridge, ASandboxKeepsItsGatewayWhileAnotherWithTheLowestMacComesAndGoes) {
  // A: up, then a lookup each time the test says so.
  ScratchDir a_dir, b_dir;
  pid_t a = world_.SpawnBrig(
      RunArgs(std::string(kWaitFor) + "echo up; for phase in 1 2 3; do wait_for a$phase; "
              "if getent hosts allowed.test >/dev/null; then echo \"phase $phase ok\"; "
              "else echo \"phase $phase failed\"; fi; done"),
      a_dir.path());
  ASSERT_TRUE(Says(a_dir, "up")) << ReadFileOrEmpty(a_dir.path() + "/stderr");
  Tell("a");  // phase 1: A alone
  ASSERT_TRUE(Says(a_dir, "phase 1")) << ReadFileOrEmpty(a_dir.path() + "/stderr");
  const std::string mac = Mac("brig0");
  ASSERT_FALSE(mac.empty());
  EXPECT_EQ(AssignType(), "3\n") << "brig's bridge has no address of its own";
  auto ports = world_.Links("bv");
  ASSERT_EQ(ports.size(), 1u);

  // B, whose port gets the lowest MAC there is.
  pid_t b = world_.SpawnBrig(RunArgs(std::string(kWaitFor) + "echo up; wait_for b1"), b_dir.path());
  ASSERT_TRUE(Says(b_dir, "up")) << ReadFileOrEmpty(b_dir.path() + "/stderr");
  std::string b_port;
  for (const auto& p : world_.Links("bv")) {
    if (p != ports[0]) b_port = p;
  }
  ASSERT_FALSE(b_port.empty());
  auto set = world_.InWorld({"ip", "link", "set", "dev", b_port, "address", kLowestMac});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(Mac("brig0"), mac) << "a port that joined changed the bridge's address";
  // A's neighbour entry for the gateway goes, as it does whenever it expires (15 to 45 s
  // after it was last confirmed): A learns the gateway's MAC again now, while B runs.
  std::string init =
      ReadFileOrEmpty("/proc/" + std::to_string(a) + "/task/" + std::to_string(a) + "/children");
  ASSERT_FALSE(init.empty()) << "brig " << a << " has no child";
  auto flush = RunCommand({"nsenter", "-t", init.substr(0, init.find(' ')), "-n", "ip", "neigh",
                           "flush", "dev", "eth0"});
  ASSERT_EQ(flush.exit_code, 0) << flush.err;
  Tell("a");  // phase 2: while B runs
  ASSERT_TRUE(Says(a_dir, "phase 2")) << ReadFileOrEmpty(a_dir.path() + "/stderr");

  Tell("b");
  EXPECT_EQ(world_.Wait(b), 0) << ReadFileOrEmpty(b_dir.path() + "/stderr");
  // The sandbox's namespace, and with it its veth, goes asynchronously.
  ASSERT_TRUE(Eventually([&] { return world_.Links("bv").size() == 1; }))
      << Lines(world_.Links("bv"));
  EXPECT_EQ(Mac("brig0"), mac) << "a port that left changed the bridge's address";
  Tell("a");  // phase 3: after B
  EXPECT_EQ(world_.Wait(a), 0) << ReadFileOrEmpty(a_dir.path() + "/stderr");
  std::string out = ReadFileOrEmpty(a_dir.path() + "/stdout");
  EXPECT_EQ(out, "up\nphase 1 ok\nphase 2 ok\nphase 3 ok\n");
}

// A bridge an older brig made, whose address the kernel chose: brig gives it one of its own.
TEST_F(Bridge, ABridgeWithoutAnAddressOfItsOwnGetsOne) {
  auto add = world_.InWorld({"ip", "link", "add", "brig0", "type", "bridge"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  ASSERT_NE(AssignType(), "3\n");
  auto r = world_.Brig(RunArgs("true"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(AssignType(), "3\n");
  std::string mac = Mac("brig0");
  ASSERT_EQ(mac.size(), 17u);
  // Locally administered, unicast.
  EXPECT_EQ(std::stoi(mac.substr(0, 2), nullptr, 16) & 3, 2) << mac;
}

}  // namespace
}  // namespace brig::testing
