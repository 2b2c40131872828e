// Helpers shared by brig's test suites: skips with a reason, running the built brig
// binary, scratch directories that clean up after themselves, and a snapshot of what a
// run could leave behind on the host.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace brig::testing {

// Empty if the requirement holds, otherwise why not (for GTEST_SKIP() << ...).
std::string NeedRoot();
std::string NeedUserns();

// Path of the brig binary under test (BRIG_BINARY, set by meson).
std::string BrigBinary();
// Path of the probe helper (BRIG_PROBE), and the directory holding it.
std::string ProbeBinary();
std::string ProbeDir();
std::string SourceRoot();

struct RunOutput {
  int exit_code = -1;  // 128+N if brig itself died of signal N
  std::string out, err;
  std::chrono::milliseconds elapsed{0};
};

// Runs brig with `args`, stdin from /dev/null, collecting stdout and stderr separately.
RunOutput RunBrig(const std::vector<std::string>& args);
// The same for any program (looked up in PATH).
RunOutput RunCommand(const std::vector<std::string>& command);

// Starts brig in the background (stdout/stderr to files in `dir`); returns its pid.
pid_t SpawnBrig(const std::vector<std::string>& args, const std::string& dir);
// The same, with brig in the network namespace of the descriptor `netns`.
pid_t SpawnBrigIn(int netns, const std::vector<std::string>& args, const std::string& dir);
// Waits for a pid started by SpawnBrig; returns its exit code as RunBrig does.
int WaitExit(pid_t pid);
// Starts `argv` (looked up in PATH) in the background, stdin and stdout /dev/null, stderr
// to the file `err`: a server a test runs beside brig. Returns its pid, or -1.
pid_t SpawnQuiet(std::vector<std::string> argv, const std::string& err);

// A mkdtemp directory under /tmp, removed (recursively) when it goes out of scope.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& data, mode_t mode = 0644) const;

 private:
  std::string path_;
};

// What a sandbox started by this test could leave on the host: mounts under the test's
// scratch directories or /run/brig, brig-init processes, cgroups named brig-* in any
// hierarchy under /sys/fs/cgroup, and sandbox records (/run/brig/sandboxes). Only what this
// test made counts; the host is shared, and other work makes and leaves the same kinds of
// things. A record is the test's while a process the test started holds its lock, and
// after its brig is gone if the brig_pid it notes is one the test spawned (NoteSpawned); a
// cgroup is the test's if a process the test started is in it or a record of the test's
// is named after it. A brig-* cgroup that no record names, another's record and other
// mounts belong to other work on the host. brig writes nothing under /tmp on the host.
struct Residue {
  std::string mounts;
  std::vector<std::string> processes;
  std::vector<std::string> cgroups;
  std::vector<std::string> records;
};
// Every cgroup directory named brig-* under /sys/fs/cgroup, whoever made it.
std::vector<std::string> BrigCgroups();
Residue TakeResidue();
// Human-readable difference, empty if none.
std::string DiffResidue(const Residue& before, const Residue& after);
// Notes a process this test started that is brig or execs it. RunCommand, RunBrig and the
// Spawn functions note theirs; a test that forks brig itself calls it. ForgetSpawned, at
// the start of each test, drops the pids of the tests before, which the host may reuse.
void NoteSpawned(pid_t pid);
void ForgetSpawned();

// Whether `pid` descends from this process. The test process is a child subreaper
// (main.cc), so a sandbox whose brig died is still its descendant.
bool IsOwnDescendant(pid_t pid);
// Processes started by this test (descendants) whose whole command line (arguments joined
// by spaces) or whose comm is `needle`.
std::vector<pid_t> FindProcesses(const std::string& needle);
// How long SettleUntilGone waits: only a failing test waits that long, and a loaded
// machine may take seconds to reap what a sandbox's end killed.
inline constexpr std::chrono::seconds kSettleLimit{60};
// Waits up to `limit` for `done`, checking every 20 ms; returns its last value. A bound
// that only a failing test reaches, never a measure of speed.
template <typename F>
bool Eventually(F done, std::chrono::milliseconds limit = kSettleLimit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}
// Waits up to kSettleLimit for every process matching `needle` to be gone.
void SettleUntilGone(const std::string& needle);
// The prefix of this test process's ScratchDirs: /tmp/brig-test.PID.
std::string ScratchPrefix();

std::string ReadFileOrEmpty(const std::string& path);
// The paths of `dir`'s entries that do not begin with a dot, sorted; none if it is missing.
std::vector<std::string> PathsIn(const std::string& dir);

// The test process's own namespace of that kind, as readlink(/proc/self/ns/NAME) says.
std::string HostNs(const std::string& name);

}  // namespace brig::testing
