// An OCI container's cgroups on this host's real hierarchies (hybrid here: v1 controllers
// and a cgroup2 mount; pure v2 in the vm tier): made under a parent the test makes in
// every hierarchy and removes at the end, limits read back from the kernel, a process
// entered, frozen, counted and killed, and the v2 device filter in force. No group the
// test did not make is written to.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "cgroup/cgroup.h"
#include "cgroup/device_filter.h"
#include "host/host_fixture.h"
#include "log/log.h"
#include "oci/cgroups.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::testing {
namespace {

using cgroup::Groups;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Trimmed(const std::string& path) {
  std::string s = ReadFileOrEmpty(path);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The state letter of /proc/PID/stat (R running, S sleeping, D uninterruptible...).
char StateOf(pid_t pid) {
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// A child that, once `Started` says it is in its groups, touches 4 MiB of new memory
// (charged to the group it is in now) and then keeps a CPU busy until the test ends it:
// frozen, it is no longer running.
class SpinningChild {
 public:
  // Born in the v2 group of `cg` and joining its v1 groups itself, as create's init does.
  explicit SpinningChild(const Groups& cg) {
    int go[2], ready[2];
    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0) return;
    auto tasks = cg.OpenV1Tasks();
    if (!tasks) return;
    sys::CloneArgs ca;
    ca.exit_signal = SIGCHLD;
    if (cg.v2_fd() >= 0) {
      ca.flags |= CLONE_INTO_CGROUP;
      ca.cgroup_fd = cg.v2_fd();
    }
    auto pid = sys::Clone3(ca);
    if (!pid) return;
    pid_ = *pid;
    if (pid_ == 0) {
      if (!cgroup::JoinV1(*tasks)) _exit(1);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1);
      static char memory[4 << 20];
      memset(memory, 1, sizeof memory);
      if (write(ready[1], "r", 1) != 1) _exit(1);
      volatile unsigned long n = 0;
      for (;;) n = n + 1;
    }
    close(go[0]);
    close(ready[1]);
    go_.Reset(go[1]);
    ready_.Reset(ready[0]);
  }
  pid_t pid() const { return pid_; }
  // Lets it go on, and returns once its memory is touched.
  bool Started() {
    char c;
    return write(go_.get(), "g", 1) == 1 && read(ready_.get(), &c, 1) == 1;
  }

 private:
  pid_t pid_ = -1;
  sys::UniqueFd go_, ready_;
};

// Waits for `pid` (a child of the test) and returns the signal that ended it, or 0.
int EndingSignal(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

class OciCgroups : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    auto layout = cgroup::ProbeLayout();
    ASSERT_TRUE(layout) << layout.error().Render();
    layout_ = *layout;
    // The parent, in every hierarchy: the test's own, made here and removed at the end.
    for (const auto& h : layout_.v1) {
      std::string dir = h.at.mount + parent_;
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
      made_.push_back(dir);
      if (std::find(h.controllers.begin(), h.controllers.end(), "cpuset") != h.controllers.end()) {
        for (const char* f : {"/cpuset.cpus", "/cpuset.mems"}) {
          ASSERT_TRUE(util::WriteFile(dir + f, Trimmed(h.at.mount + f)));
        }
      }
    }
    if (layout_.v2) {
      std::string dir = layout_.v2->mount + parent_;
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
      made_.push_back(dir);
    }
  }

  void TearDown() override {
    for (pid_t p : children_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    // Empty by now, or the test failed to clean up: then the rmdir says so.
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      EXPECT_EQ(rmdir(it->c_str()), 0) << *it << ": " << strerror(errno);
    }
    HostTest::TearDown();
  }

  oci::Spec SpecAt(const std::string& path) {
    oci::Spec spec;
    spec.mutable_linux()->set_cgroups_path(path);
    return spec;
  }

  Result<std::unique_ptr<Groups>> Create(const oci::Spec& spec) {
    return oci::CreateCgroups(spec, "c1", [this](const std::vector<Groups::Noted>& dirs) -> Status {
      ++note_calls_;
      for (const auto& d : dirs) {
        notes_.push_back({d.dir, d.owned});
        // Noted before it is made: a crash after the mkdir leaves it in the record.
        if (d.owned && Exists(d.dir)) made_before_noted_.push_back(d.dir);
      }
      return {};
    });
  }

  // The container's group in the hierarchy mounted at `mount`, or empty.
  static std::string DirIn(const Groups& cg, const std::string& mount) {
    for (const auto& d : cg.dirs()) {
      if (util::PathWithin(d, mount)) return d;
    }
    return "";
  }
  // The mount of the hierarchy that has `controller`: v1, or else the cgroup2 one.
  std::string MountOf(const std::string& controller) {
    for (const auto& h : layout_.v1) {
      if (std::find(h.controllers.begin(), h.controllers.end(), controller) !=
          h.controllers.end()) {
        return h.at.mount;
      }
    }
    return layout_.v2 ? layout_.v2->mount : "";
  }
  bool OnV1(const std::string& controller) {
    return !layout_.v2 || MountOf(controller) != layout_.v2->mount;
  }

  oci::Container Record() {
    oci::Container c;
    for (const auto& [dir, owned] : notes_) {
      *(owned ? c.add_cgroups() : c.add_joined_cgroups()) = dir;
    }
    return c;
  }

  cgroup::Layout layout_;
  std::string parent_ = "/brig-oci-test-" + std::to_string(getpid());
  std::vector<std::string> made_;
  std::vector<std::pair<std::string, bool>> notes_;
  int note_calls_ = 0;
  std::vector<std::string> made_before_noted_;
  std::vector<pid_t> children_;
};

TEST_F(OciCgroups, LimitsHoldAndTheContainerIsFrozenCountedAndKilled) {
  oci::Spec spec = SpecAt(parent_ + "/c1");
  auto* r = spec.mutable_linux()->mutable_resources();
  // memory+swap where v1 accounts swap (the order of an update's writes matters there).
  bool memsw = OnV1("memory") && Exists(MountOf("memory") + "/memory.memsw.limit_in_bytes");
  r->mutable_memory()->set_limit(64 << 20);
  if (memsw) r->mutable_memory()->set_swap(96 << 20);
  r->mutable_pids()->set_limit(16);
  r->mutable_cpu()->set_quota(50000);
  r->mutable_cpu()->set_period(100000);
  auto created = Create(spec);
  ASSERT_TRUE(created) << created.error().Render();
  Groups& cg = **created;
  ASSERT_FALSE(cg.dirs().empty());
  for (const auto& d : cg.dirs()) {
    EXPECT_TRUE(Exists(d)) << d;
    EXPECT_TRUE(std::count(notes_.begin(), notes_.end(), std::pair(d, true)) == 1)
        << d << " was not noted as made";
  }
  EXPECT_EQ(notes_.size(), cg.dirs().size()) << "the parent existed: joined, not noted";
  EXPECT_EQ(note_calls_, 1) << "one record write for every group";
  EXPECT_TRUE(made_before_noted_.empty()) << made_before_noted_.front() << " made before noted";
  EXPECT_EQ(cg.v2_fd() >= 0, layout_.v2.has_value());

  // The limits, as the kernel now has them.
  std::string memory = DirIn(cg, MountOf("memory")), pids = DirIn(cg, MountOf("pids")),
              cpu = DirIn(cg, MountOf("cpu"));
  if (OnV1("memory")) {
    EXPECT_EQ(Trimmed(memory + "/memory.limit_in_bytes"), "67108864");
  } else {
    EXPECT_EQ(Trimmed(memory + "/memory.max"), "67108864");
  }
  EXPECT_EQ(Trimmed(pids + "/pids.max"), "16");
  if (OnV1("cpu")) {
    EXPECT_EQ(Trimmed(cpu + "/cpu.cfs_quota_us"), "50000");
    EXPECT_EQ(Trimmed(cpu + "/cpu.cfs_period_us"), "100000");
  } else {
    EXPECT_EQ(Trimmed(cpu + "/cpu.max"), "50000 100000");
  }

  SpinningChild spinner(cg);
  pid_t child = spinner.pid();
  ASSERT_GT(child, 0);
  children_.push_back(child);
  ASSERT_TRUE(spinner.Started()) << "it could not join its groups";
  auto listed = cg.Pids();
  ASSERT_TRUE(listed) << listed.error().Render();
  EXPECT_EQ(*listed, std::vector<pid_t>{child});
  for (const auto& d : cg.dirs()) {
    EXPECT_EQ(Trimmed(d + "/cgroup.procs"), std::to_string(child)) << "in every group: " << d;
  }

  ASSERT_TRUE(Eventually([&] { return StateOf(child) == 'R'; })) << StateOf(child);
  auto frozen = cg.Freeze(true);
  ASSERT_TRUE(frozen) << frozen.error().Render();
  EXPECT_TRUE(cg.Frozen());
  EXPECT_NE(StateOf(child), 'R') << "a frozen process does not run";
  auto thawed = cg.Freeze(false);
  ASSERT_TRUE(thawed) << thawed.error().Render();
  EXPECT_FALSE(cg.Frozen());
  EXPECT_TRUE(Eventually([&] { return StateOf(child) == 'R'; })) << "thawed, it runs again";

  cgroup::Stats stats = cg.ReadStats();
  EXPECT_GT(stats.memory_usage.value_or(0), 0u);
  EXPECT_EQ(stats.memory_limit, 64u << 20);
  EXPECT_EQ(stats.pids_current, 1u);
  EXPECT_EQ(stats.pids_limit, 16u);
  EXPECT_GT(stats.cpu_usage_ns.value_or(0), 0u);
  std::string json = oci::StatsJson("c1", stats);
  EXPECT_NE(json.find("\"pids\":{\"current\":1,\"limit\":16}"), std::string::npos) << json;

  // The record's view of the same groups, and an update through it: both memory limits
  // raised (memory+swap must go first on v1, or the kernel refuses the new limit).
  auto again = oci::CgroupsOf(Record());
  EXPECT_EQ(again->dirs(), cg.dirs());
  oci::Resources more;
  more.mutable_memory()->set_limit(256 << 20);
  if (memsw) more.mutable_memory()->set_swap(512 << 20);
  more.mutable_pids()->set_limit(32);
  auto updated = again->Update(more);
  ASSERT_TRUE(updated) << updated.error().Render();
  EXPECT_EQ(Trimmed(pids + "/pids.max"), "32");
  EXPECT_EQ(Trimmed(memory + (OnV1("memory") ? "/memory.limit_in_bytes" : "/memory.max")),
            "268435456");
  if (memsw) {
    EXPECT_EQ(Trimmed(memory + "/memory.memsw.limit_in_bytes"), "536870912");
  }
  EXPECT_EQ(Trimmed(cpu + (OnV1("cpu") ? "/cpu.cfs_quota_us" : "/cpu.max")),
            OnV1("cpu") ? "50000" : "50000 100000")
      << "what the update does not set stays";

  auto destroyed = cg.Destroy();
  ASSERT_TRUE(destroyed) << destroyed.error().Render();
  EXPECT_EQ(EndingSignal(child), SIGKILL);
  children_.clear();
  for (const auto& [dir, owned] : notes_) EXPECT_FALSE(Exists(dir)) << dir << " is left";
  for (const auto& d : made_) EXPECT_TRUE(Exists(d)) << "the joined parent " << d << " is kept";
  EXPECT_TRUE(cg.Destroy()) << "a second destroy finds nothing to do";
  EXPECT_TRUE(again->Destroy());
}

TEST_F(OciCgroups, WithoutCgroupV2TheV1FreezerFreezesAndKills) {
  if (MountOf("freezer").empty() || !OnV1("freezer")) GTEST_SKIP() << "no v1 freezer here";
  auto created = Create(SpecAt(parent_ + "/c1"));
  ASSERT_TRUE(created) << created.error().Render();
  // The same groups as a record without the v2 one names them: a host with no cgroup2.
  oci::Container v1_only;
  for (const auto& d : (*created)->dirs()) {
    struct statfs fs;
    if (statfs(d.c_str(), &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC) *v1_only.add_cgroups() = d;
  }
  auto v1 = oci::CgroupsOf(v1_only);
  EXPECT_EQ(v1->v2_fd(), -1);
  SpinningChild spinner(**created);
  pid_t child = spinner.pid();
  ASSERT_GT(child, 0);
  children_.push_back(child);
  ASSERT_TRUE(spinner.Started());
  ASSERT_TRUE(Eventually([&] { return StateOf(child) == 'R'; }));
  auto frozen = v1->Freeze(true);
  ASSERT_TRUE(frozen) << frozen.error().Render();
  EXPECT_EQ(Trimmed(DirIn(*v1, MountOf("freezer")) + "/freezer.state"), "FROZEN");
  EXPECT_TRUE(v1->Frozen());
  EXPECT_NE(StateOf(child), 'R');
  auto destroyed = v1->Destroy();  // frozen: the kill goes through the freezer
  ASSERT_TRUE(destroyed) << destroyed.error().Render();
  EXPECT_EQ(EndingSignal(child), SIGKILL);
  children_.clear();
  for (const auto& d : v1->dirs()) EXPECT_FALSE(Exists(d)) << d;
  EXPECT_TRUE((*created)->Destroy());
  for (const auto& [dir, owned] : notes_) EXPECT_FALSE(Exists(dir)) << dir << " is left";
}

TEST_F(OciCgroups, ALimitTheKernelRefusesIsNamedAndNothingIsLeft) {
  oci::Spec spec = SpecAt(parent_ + "/deeper/c1");
  // Below the kernel's 1 ms floor for a CFS quota.
  spec.mutable_linux()->mutable_resources()->mutable_cpu()->set_quota(500);
  auto created = Create(spec);
  ASSERT_FALSE(created);
  std::string file = OnV1("cpu") ? "cpu.cfs_quota_us" : "cpu.max";
  EXPECT_EQ(created.error().Render(),
            "linux.resources.cpu.quota: write " + file + ": Invalid argument");
  ASSERT_FALSE(notes_.empty()) << "groups were made before the write";
  for (const auto& [dir, owned] : notes_) {
    EXPECT_TRUE(owned);
    EXPECT_FALSE(Exists(dir)) << dir << " is left";
  }
}

TEST_F(OciCgroups, GroupsACreateDidNotKeepGoWithTheirProcesses) {
  auto created = Create(SpecAt(parent_ + "/c1"));
  ASSERT_TRUE(created) << created.error().Render();
  SpinningChild spinner(**created);
  pid_t child = spinner.pid();
  ASSERT_GT(child, 0);
  children_.push_back(child);
  ASSERT_TRUE(spinner.Started()) << "it could not join its groups";
  created = Error{};  // a create that failed after its groups and process were made
  EXPECT_EQ(EndingSignal(child), SIGKILL);
  children_.clear();
  ASSERT_FALSE(notes_.empty());
  for (const auto& [dir, owned] : notes_) EXPECT_FALSE(Exists(dir)) << dir << " is left";

  notes_.clear();
  auto kept = Create(SpecAt(parent_ + "/c2"));
  ASSERT_TRUE(kept) << kept.error().Render();
  (*kept)->Keep();
  std::vector<std::string> dirs = (*kept)->dirs();
  kept = Error{};
  for (const auto& d : dirs) EXPECT_TRUE(Exists(d)) << d << " was kept";
  // Groups the container made inside its own (runc's suite: delete --force with
  // subcgroups) go with them, deepest first.
  for (const auto& d : dirs) {
    ASSERT_EQ(mkdir((d + "/sub").c_str(), 0755), 0) << d << ": " << strerror(errno);
    ASSERT_EQ(mkdir((d + "/sub/deeper").c_str(), 0755), 0) << d << ": " << strerror(errno);
  }
  EXPECT_TRUE(oci::CgroupsOf(Record())->Destroy());
  for (const auto& d : dirs) EXPECT_FALSE(Exists(d)) << d << " is left";
}

TEST_F(OciCgroups, AnExistingGroupIsJoinedAndKept) {
  auto created = Create(SpecAt(parent_));
  ASSERT_TRUE(created) << created.error().Render();
  ASSERT_FALSE(notes_.empty());
  for (const auto& [dir, owned] : notes_) EXPECT_FALSE(owned) << dir;
  oci::Spec limited = SpecAt(parent_);
  limited.mutable_linux()->mutable_resources()->mutable_pids()->set_limit(5);
  auto refused = Create(limited);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().Render().find("linux.resources.pids.limit: the group "),
            std::string::npos)
      << refused.error().Render();
  ASSERT_TRUE((*created)->Destroy());
  for (const auto& d : made_) EXPECT_TRUE(Exists(d)) << d;
}

// As runc: a frozen group is never joined, since the container's process would freeze as
// it joined and nothing of brig's would thaw it (a create used to wait for it for ever); a
// group that holds processes already is joined with a warning.
TEST_F(OciCgroups, AFrozenGroupIsNeverJoinedAndABusyOneIsJoinedWithAWarning) {
  std::string state = MountOf("freezer") + parent_ + "/freezer.state";
  std::string frozen = "FROZEN", thawed = "THAWED";
  if (!OnV1("freezer"))
    state = MountOf("freezer") + parent_ + "/cgroup.freeze", frozen = "1", thawed = "0";
  ASSERT_TRUE(Exists(state)) << "no freezer for " << parent_;
  ASSERT_TRUE(util::WriteFile(state, frozen));
  auto refused = Create(SpecAt(parent_));
  ASSERT_TRUE(util::WriteFile(state, thawed));
  ASSERT_FALSE(refused) << "a frozen group was joined";
  EXPECT_NE(refused.error().Render().find("container's cgroup unexpectedly frozen"),
            std::string::npos)
      << refused.error().Render();

  auto first = Create(SpecAt(parent_));
  ASSERT_TRUE(first) << first.error().Render();
  SpinningChild spinner(**first);
  ASSERT_GT(spinner.pid(), 0);
  children_.push_back(spinner.pid());
  ScratchDir d;
  const std::string log_file = d.path() + "/log";
  ASSERT_TRUE(log::Configure(false, log_file, log::Format::kText));
  auto busy = Create(SpecAt(parent_));
  ASSERT_TRUE(log::Configure(false, "", log::Format::kText));
  ASSERT_TRUE(busy) << busy.error().Render();
  EXPECT_NE(ReadFileOrEmpty(log_file).find("container's cgroup is not empty: 1 processes"),
            std::string::npos)
      << ReadFileOrEmpty(log_file);
}

TEST_F(OciCgroups, TheV2DeviceFilterDeniesWhatTheRulesDeny) {
  if (!layout_.v2) GTEST_SKIP() << "no cgroup2 mount";
  std::string dir = layout_.v2->mount + parent_ + "/dev";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << strerror(errno);
  made_.push_back(dir);
  sys::UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  // Deny all but /dev/zero.
  auto list = cgroup::EmulateDevices({cgroup::DeviceAccess{false, 'a', -1, -1, cgroup::kDevAll},
                                      cgroup::DeviceAccess{true, 'c', 1, 5, cgroup::kDevAll}});
  auto attached = cgroup::AttachDeviceFilter(fd.get(), cgroup::DeviceProgram(list));
  ASSERT_TRUE(attached) << attached.error().Render();

  // A child in the group opens /dev/zero and /dev/null and says which it could.
  auto opens = [&]() {
    int go[2], result[2];
    EXPECT_EQ(pipe2(go, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(result, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1);
      char out[2] = {open("/dev/zero", O_RDONLY) >= 0 ? 'y' : 'n',
                     open("/dev/null", O_RDONLY) >= 0 ? 'y' : 'n'};
      _exit(write(result[1], out, 2) == 2 ? 0 : 1);
    }
    close(go[0]);
    close(result[1]);
    EXPECT_TRUE(util::WriteFile(dir + "/cgroup.procs", std::to_string(pid)));
    EXPECT_EQ(write(go[1], "g", 1), 1);
    close(go[1]);
    char out[3] = {};
    EXPECT_EQ(read(result[0], out, 2), 2);
    close(result[0]);
    EXPECT_EQ(EndingSignal(pid), 0);
    return std::string(out);
  };
  EXPECT_EQ(opens(), "yn") << "/dev/zero allowed, /dev/null denied";

  // A second filter replaces the first.
  auto all = cgroup::EmulateDevices({cgroup::DeviceAccess{true, 'a', -1, -1, cgroup::kDevAll}});
  attached = cgroup::AttachDeviceFilter(fd.get(), cgroup::DeviceProgram(all));
  ASSERT_TRUE(attached) << attached.error().Render();
  EXPECT_EQ(opens(), "yy") << "the first filter is gone";
}

}  // namespace
}  // namespace brig::testing
