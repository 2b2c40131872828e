// Test helpers (see testlib.h).
#include "testlib/testlib.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace brig::testing {
namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

std::string ReadFd(int fd) {
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::vector<char*> Argv(const std::vector<std::string>& args, std::string& bin) {
  bin = BrigBinary();
  std::vector<char*> argv{bin.data()};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

std::vector<char*> PlainArgv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string NeedRoot() {
  if (geteuid() != 0) return "needs root (run the host tier as root)";
  return {};
}

std::string NeedUserns() {
  if (auto r = NeedRoot(); !r.empty()) return r;
  pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) == 0 ? 0
                                                                                             : 1);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "user/mount/pid/net namespaces unavailable";
  return {};
}

std::string BrigBinary() { return Env("BRIG_BINARY", "build/brig"); }
std::string ProbeBinary() { return Env("BRIG_PROBE", "build/tests/brig-probe"); }
std::string ProbeDir() {
  std::string p = ProbeBinary();
  return p.substr(0, p.rfind('/'));
}
std::string SourceRoot() { return Env("BRIG_SOURCE_ROOT", "."); }

RunOutput RunBrig(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BrigBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

RunOutput RunCommand(const std::vector<std::string>& command) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) abort();
  auto argv = PlainArgv(command);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(argv[0], argv.data());
    _exit(99);
  }
  NoteSpawned(pid);
  close(out[1]);
  close(err[1]);
  RunOutput r;
  // Drain both pipes without deadlock: stderr is small, read stdout first in a child-free
  // way by polling both.
  std::string o, e;
  struct pollfd_like {
    int fd;
    std::string* dst;
  } fds[] = {{out[0], &r.out}, {err[0], &r.err}};
  for (auto& f : fds) fcntl(f.fd, F_SETFL, O_NONBLOCK);
  int open_fds = 2;
  while (open_fds > 0) {
    fd_set set;
    FD_ZERO(&set);
    int maxfd = -1;
    for (auto& f : fds) {
      if (f.fd >= 0) {
        FD_SET(f.fd, &set);
        maxfd = std::max(maxfd, f.fd);
      }
    }
    if (select(maxfd + 1, &set, nullptr, nullptr, nullptr) < 0) continue;
    for (auto& f : fds) {
      if (f.fd < 0 || !FD_ISSET(f.fd, &set)) continue;
      char buf[8192];
      ssize_t n = read(f.fd, buf, sizeof buf);
      if (n > 0) {
        f.dst->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  r.exit_code = ExitCodeOf(status);
  return r;
}

pid_t SpawnQuiet(std::vector<std::string> argv, const std::string& err) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(e, 2);
    execvp(cargv[0], cargv.data());
    _exit(99);
  }
  NoteSpawned(pid);
  return pid;
}

pid_t SpawnBrig(const std::vector<std::string>& args, const std::string& dir) {
  return SpawnBrigIn(-1, args, dir);
}

pid_t SpawnBrigIn(int netns, const std::vector<std::string>& args, const std::string& dir) {
  std::string bin;
  auto argv = Argv(args, bin);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    int o = open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (netns >= 0 && setns(netns, CLONE_NEWNET) != 0) _exit(98);
    dup2(devnull, 0);
    dup2(o, 1);
    dup2(e, 2);
    execv(argv[0], argv.data());
    _exit(99);
  }
  NoteSpawned(pid);
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return ExitCodeOf(status);
}

ScratchDir::ScratchDir() {
  std::string tmpl = ScratchPrefix() + "XXXXXX";
  if (!mkdtemp(tmpl.data())) abort();
  path_ = tmpl;
  chmod(path_.c_str(), 0755);
}

ScratchDir::~ScratchDir() {
  std::string cmd = "rm -rf '" + path_ + "'";
  if (system(cmd.c_str()) != 0) fprintf(stderr, "could not remove %s\n", path_.c_str());
}

std::string ScratchDir::Write(const std::string& name, const std::string& data,
                              mode_t mode) const {
  std::string p = path_ + "/" + name;
  std::ofstream(p) << data;
  chmod(p.c_str(), mode);
  return p;
}

std::string ReadFileOrEmpty(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string s = ReadFd(fd);
  close(fd);
  return s;
}

std::vector<std::string> PathsIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string HostNs(const std::string& name) {
  char buf[256];
  ssize_t n = readlink(("/proc/self/ns/" + name).c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

namespace {

// The parent pid from /proc/PID/stat, 0 if the process is gone; `zombie` says whether it
// is one.
pid_t ParentOf(pid_t pid, bool* zombie = nullptr) {
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || stat.size() < paren + 5) return 0;
  if (zombie) *zombie = stat[paren + 2] == 'Z';
  return static_cast<pid_t>(atoi(stat.c_str() + paren + 4));
}

std::string Comm(pid_t pid) {
  std::string comm = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  if (DIR* d = opendir("/proc")) {
    while (struct dirent* de = readdir(d)) {
      if (pid_t pid = atoi(de->d_name); pid > 0) pids.push_back(pid);
    }
    closedir(d);
  }
  return pids;
}

// A brig-init whose brig was killed is adopted by this process (a subreaper, see
// main.cc); reap it once it has died, so that it is not counted as left behind. Only
// brig-init: every other child of this process was forked by a test that waits for it.
void ReapAdoptedInits() {
  for (pid_t pid : AllPids()) {
    bool zombie = false;
    if (ParentOf(pid, &zombie) == getpid() && zombie && Comm(pid) == "brig-init") {
      (void)waitpid(pid, nullptr, WNOHANG);
    }
  }
}

}  // namespace

bool IsOwnDescendant(pid_t pid) {
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    pid = ParentOf(pid);
    if (pid == getpid()) return true;
  }
  return false;
}

std::vector<pid_t> FindProcesses(const std::string& needle) {
  ReapAdoptedInits();
  std::vector<pid_t> found;
  for (pid_t pid : AllPids()) {
    // A zombie is not running; whether its parent reaps it is the host's business.
    bool zombie = false;
    if (pid == getpid() || ParentOf(pid, &zombie) == 0 || zombie) continue;
    std::string cmd = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline");
    while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if ((cmd == needle || Comm(pid) == needle) && IsOwnDescendant(pid)) found.push_back(pid);
  }
  return found;
}

void SettleUntilGone(const std::string& needle) {
  auto end = std::chrono::steady_clock::now() + kSettleLimit;
  while (!FindProcesses(needle).empty() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

void FindBrigGroups(const std::string& dir, int depth, std::vector<std::string>& out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (struct dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (de->d_type != DT_DIR || n == "." || n == "..") continue;
    if (n.rfind("brig-", 0) == 0) out.push_back(dir + "/" + n);
    if (depth > 0) FindBrigGroups(dir + "/" + n, depth - 1, out);
  }
  closedir(d);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] != '.') out.push_back(de->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> BrigCgroups() {
  std::vector<std::string> out;
  FindBrigGroups("/sys/fs/cgroup", 5, out);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The pid holding a lock on the file with this inode (from /proc/locks), 0 if none.
pid_t LockHolder(ino_t ino) {
  std::istringstream locks(ReadFileOrEmpty("/proc/locks"));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream f(line);
    std::string n, type, mode, access, dev;
    pid_t pid = 0;
    f >> n >> type >> mode >> access >> pid >> dev;
    size_t colon = dev.rfind(':');
    if (colon != std::string::npos && strtoull(dev.c_str() + colon + 1, nullptr, 10) == ino) {
      return pid;
    }
  }
  return 0;
}

std::mutex spawned_mutex;
std::set<pid_t> spawned;  // NoteSpawned's pids, since the last ForgetSpawned

bool WasSpawned(pid_t pid) {
  std::lock_guard<std::mutex> lock(spawned_mutex);
  return spawned.count(pid) > 0;
}

// The brig_pid a record notes (session.cc's "about brig_pid=N"), 0 if none.
pid_t BrigPidOf(const std::string& record) {
  std::istringstream lines(record);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("about brig_pid=", 0) == 0) {
      return atoi(line.c_str() + strlen("about brig_pid="));
    }
  }
  return 0;
}

// Whether the sandbox record `id` is this test's: its lock is held by a process this test
// started, or nobody holds it (its brig is gone) and its brig was one this test spawned.
bool OwnRecord(const std::string& id) {
  std::string path = "/run/brig/sandboxes/" + id;
  struct stat st;
  if (stat(path.c_str(), &st) < 0) return false;
  pid_t holder = LockHolder(st.st_ino);
  if (holder != 0 && ParentOf(holder) != 0) return IsOwnDescendant(holder);
  pid_t brig = BrigPidOf(ReadFileOrEmpty(path));
  return brig != 0 && WasSpawned(brig);
}

// Whether the cgroup `dir` is this test's: a process in it was started by this test, or it
// is named after one of the test's records (`own`). Another brig's group, or an empty
// brig-* parent another tool made, is neither.
bool OwnGroup(const std::string& dir, const std::set<std::string>& own) {
  std::istringstream procs(ReadFileOrEmpty(dir + "/cgroup.procs"));
  for (pid_t pid; procs >> pid;) {
    if (IsOwnDescendant(pid)) return true;
  }
  return own.count(dir.substr(dir.rfind('/') + 1)) > 0;
}

// Mount points this test could have made: under its own scratch directories, or under
// brig's state in /run/brig. Other work on the host mounts and unmounts as it pleases.
bool OwnMount(const std::string& line) {
  std::istringstream f(line);
  std::string devno, root, point;
  f >> devno >> root >> point;
  return point.rfind(ScratchPrefix(), 0) == 0 || point.rfind("/run/brig", 0) == 0;
}

}  // namespace

std::string ScratchPrefix() { return "/tmp/brig-test." + std::to_string(getpid()) + "."; }

Residue TakeResidue() {
  Residue r;
  std::istringstream mi(ReadFileOrEmpty("/proc/self/mountinfo"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(mi, line);) {
    // Drop the mount id and parent id, which are not stable identities.
    std::istringstream ls(line);
    std::string id, parent, rest;
    ls >> id >> parent;
    std::getline(ls, rest);
    if (OwnMount(rest)) lines.push_back(rest);
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) r.mounts += l + "\n";
  for (pid_t p : FindProcesses("brig-init")) r.processes.push_back(std::to_string(p));
  for (auto& id : ListDir("/run/brig/sandboxes")) {
    if (OwnRecord(id)) r.records.push_back(std::move(id));
  }
  std::set<std::string> own(r.records.begin(), r.records.end());
  for (auto& g : BrigCgroups()) {
    if (OwnGroup(g, own)) r.cgroups.push_back(std::move(g));
  }
  return r;
}

void NoteSpawned(pid_t pid) {
  if (pid <= 0) return;
  std::lock_guard<std::mutex> lock(spawned_mutex);
  spawned.insert(pid);
}

void ForgetSpawned() {
  std::lock_guard<std::mutex> lock(spawned_mutex);
  spawned.clear();
}

std::string DiffResidue(const Residue& before, const Residue& after) {
  std::string diff;
  if (before.mounts != after.mounts) diff += "mounts changed\n";
  std::set<std::string> ran(before.processes.begin(), before.processes.end());
  for (const auto& p : after.processes) {
    if (!ran.count(p)) diff += "process left: brig-init pid " + p + "\n";
  }
  std::set<std::string> groups(before.cgroups.begin(), before.cgroups.end());
  for (const auto& g : after.cgroups) {
    if (!groups.count(g)) diff += "cgroup left: " + g + "\n";
  }
  std::set<std::string> records(before.records.begin(), before.records.end());
  for (const auto& r : after.records) {
    if (!records.count(r)) diff += "sandbox record left: /run/brig/sandboxes/" + r + "\n";
  }
  return diff;
}

}  // namespace brig::testing
