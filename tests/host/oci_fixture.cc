// The OCI host tests' fixture (oci_fixture.h).
#include "host/oci_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace brig::testing::oci {
namespace {

std::string Basename(const std::string& p) { return p.substr(p.rfind('/') + 1); }

std::string Q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Arr(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + Q(v[i]);
  return out + "]";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string ProcessJson(const Config& c) {
  std::ostringstream o;
  std::string gids;
  for (uint32_t g : c.additional_gids) gids += (gids.empty() ? "" : ",") + std::to_string(g);
  o << "{\"terminal\":" << Bool(c.terminal) << ",\"user\":{\"uid\":" << c.uid
    << ",\"gid\":" << c.gid << ",\"additionalGids\":[" << gids << "]},";
  if (!c.args.empty()) o << "\"args\":" << Arr(c.args) << ",";
  o << "\"env\":" << Arr(c.env) << ",\"cwd\":" << Q(c.cwd)
    << ",\"capabilities\":{\"bounding\":" << Arr(c.bounding)
    << ",\"effective\":" << Arr(c.effective) << ",\"inheritable\":" << Arr(c.inheritable)
    << ",\"permitted\":" << Arr(c.permitted) << ",\"ambient\":" << Arr(c.ambient)
    << "},\"rlimits\":[";
  for (size_t i = 0; i < c.rlimits.size(); ++i) {
    const Rlimit& r = c.rlimits[i];
    o << (i ? "," : "") << "{\"type\":" << Q(r.type) << ",\"hard\":" << r.hard
      << ",\"soft\":" << r.soft << "}";
  }
  o << "],\"noNewPrivileges\":" << Bool(c.no_new_privileges) << "}";
  return o.str();
}

// "uidMappings":[...],"gidMappings":[...]: ids 0..65535 to `to`...
std::string IdMappings(uint32_t to) {
  std::string map = "[{\"containerID\":0,\"hostID\":" + std::to_string(to) + ",\"size\":65536}]";
  return "\"uidMappings\":" + map + ",\"gidMappings\":" + map;
}

std::string LinuxJson(const Config& c) {
  std::ostringstream o;
  o << "{";
  if (!c.cgroups_path.empty()) o << "\"cgroupsPath\":" << Q(c.cgroups_path) << ",";
  if (!c.resources_json.empty()) o << "\"resources\":" << c.resources_json << ",";
  if (!c.seccomp_json.empty()) o << "\"seccomp\":" << c.seccomp_json << ",";
  if (!c.sysctl.empty()) {
    o << "\"sysctl\":{";
    for (auto it = c.sysctl.begin(); it != c.sysctl.end(); ++it) {
      o << (it == c.sysctl.begin() ? "" : ",") << Q(it->first) << ":" << Q(it->second);
    }
    o << "},";
  }
  if (c.map_to != 0) o << IdMappings(c.map_to) << ",";
  o << "\"namespaces\":[";
  for (size_t i = 0; i < c.namespaces.size(); ++i) {
    const std::string& n = c.namespaces[i];
    size_t eq = n.find('=');
    o << (i ? "," : "") << "{\"type\":" << Q(n.substr(0, eq));
    if (eq != std::string::npos) o << ",\"path\":" << Q(n.substr(eq + 1));
    o << "}";
  }
  o << "],\"maskedPaths\":" << Arr(c.masked) << ",\"readonlyPaths\":" << Arr(c.readonly_paths)
    << "}";
  return o.str();
}

// Directories under `dir`, deepest first.
void SubdirsDeepestFirst(const std::string& dir, std::vector<std::string>& out) {
  for (const std::string& n : ListDir(dir)) {
    std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      SubdirsDeepestFirst(p, out);
      out.push_back(p);
    }
  }
}

// Empties a group under the test's parent (its processes are the test's) and removes it.
void RemoveGroup(const std::string& dir) {
  std::istringstream procs(ReadFileOrEmpty(dir + "/cgroup.procs"));
  for (pid_t p; procs >> p;) kill(p, SIGKILL);
  Eventually([&] {
    ReapExited();
    return Trim(ReadFileOrEmpty(dir + "/cgroup.procs")).empty();
  });
  EXPECT_EQ(rmdir(dir.c_str()), 0) << dir << ": " << strerror(errno);
}

const std::vector<std::string>& Applets() {
  static const std::vector<std::string> applets = [] {
    std::vector<std::string> out;
    for (const std::string& a : Lines(RunCommand({kBusybox, "--list"}).out)) {
      if (!a.empty() && a != "busybox") out.push_back(a);
    }
    return out;
  }();
  return applets;
}

}  // namespace

std::string RuntimeBinary() {
  const char* r = getenv("BRIG_OCI_RUNTIME");
  return r && *r ? r : BrigBinary();
}

bool IsBrig() { return Basename(RuntimeBinary()) == Basename(BrigBinary()); }

Config::Config() {
  env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"};
  bounding = effective = permitted = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  mounts = {
      {"/proc", "proc", "proc", {}},
      {"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
      {"/dev/pts",
       "devpts",
       "devpts",
       {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
      {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
      {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}},
      {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}},
  };
  masked = {"/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
            "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
            "/sys/firmware",       "/proc/scsi"};
  readonly_paths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
}

std::string Config::ProcessJson() const { return oci::ProcessJson(*this); }

std::string Config::Json() const {
  std::ostringstream o;
  o << "{\"ociVersion\":\"1.0.2\",";
  if (has_process) o << "\"process\":" << ProcessJson() << ",";
  o << "\"root\":{\"path\":" << Q(root_path) << ",\"readonly\":" << Bool(readonly)
    << "},\"hostname\":" << Q(hostname) << ",\"mounts\":[";
  for (size_t i = 0; i < mounts.size(); ++i) {
    const MountSpec& m = mounts[i];
    o << (i ? "," : "") << "{\"destination\":" << Q(m.destination) << ",\"type\":" << Q(m.type)
      << ",\"source\":" << Q(m.source) << ",\"options\":" << Arr(m.options);
    if (m.idmap_to != 0) o << "," << IdMappings(m.idmap_to);
    o << "}";
  }
  o << "],";
  if (!hooks_json.empty()) o << "\"hooks\":" << hooks_json << ",";
  if (!annotations.empty()) {
    o << "\"annotations\":{";
    for (auto it = annotations.begin(); it != annotations.end(); ++it) {
      o << (it == annotations.begin() ? "" : ",") << Q(it->first) << ":" << Q(it->second);
    }
    o << "},";
  }
  o << "\"linux\":" << LinuxJson(*this) << "}";
  return o.str();
}

State ParseState(const std::string& json) {
  State s;
  s.raw = json;
  google::protobuf::Struct st;
  if (!google::protobuf::util::JsonStringToMessage(json, &st).ok()) return s;
  const auto& f = st.fields();
  auto str = [&](const char* k) { return f.count(k) ? f.at(k).string_value() : std::string(); };
  s.ok = true;
  s.status = str("status");
  s.id = str("id");
  s.bundle = str("bundle");
  if (f.count("pid")) s.pid = static_cast<pid_t>(f.at("pid").number_value());
  return s;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* de = readdir(d)) {
      std::string n = de->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Trim(std::string s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::map<std::string, std::string> Fields(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : Lines(text)) {
    size_t sep = line.find_first_of("=:");
    if (sep == std::string::npos) continue;
    std::istringstream words(line.substr(sep + 1));
    std::string value, w;
    while (words >> w) value += (value.empty() ? "" : " ") + w;
    out[line.substr(0, sep)] = value;
  }
  return out;
}

std::pair<char, pid_t> StatOf(pid_t pid) {
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || stat.size() < paren + 5) return {0, 0};
  return {stat[paren + 2], static_cast<pid_t>(atoi(stat.c_str() + paren + 4))};
}

bool Alive(pid_t pid) {
  char state = StatOf(pid).first;
  return state != 0 && state != 'Z' && state != 'X';
}

std::string Comm(pid_t pid) {
  return Trim(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/comm"));
}

std::string NsOf(pid_t pid, const std::string& name) {
  char buf[256];
  ssize_t n =
      readlink(("/proc/" + std::to_string(pid) + "/ns/" + name).c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

void ReapExited() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

bool AwaitGone(pid_t pid) {
  return Eventually([pid] {
    ReapExited();
    return !Alive(pid);
  });
}

std::vector<CgroupMount> CgroupMounts() {
  std::vector<CgroupMount> out;
  for (const std::string& line : Lines(ReadFileOrEmpty("/proc/self/mountinfo"))) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream left(line.substr(0, dash)), right(line.substr(dash + 3));
    std::string id, parent, devno, root, point, type, source, options;
    left >> id >> parent >> devno >> root >> point;
    right >> type >> source >> options;
    if (type != "cgroup" && type != "cgroup2") continue;
    CgroupMount m;
    m.point = point;
    m.v2 = type == "cgroup2";
    std::string list = m.v2 ? ReadFileOrEmpty(point + "/cgroup.controllers") : options;
    std::replace(list.begin(), list.end(), ',', ' ');
    std::istringstream words(list);
    for (std::string w; words >> w;) m.controllers.insert(w);
    out.push_back(std::move(m));
  }
  return out;
}

std::string GroupsNotAt(pid_t pid, const std::string& path) {
  std::string out;
  std::istringstream lines(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) return "unreadable: " + line;
    std::string controllers = line.substr(first + 1, second - first - 1);
    if (controllers.rfind("name=", 0) == 0) continue;
    if (line.substr(second + 1) != path) out += line + "\n";
  }
  return out;
}

std::string ControllerDir(const std::string& controller, const std::string& path) {
  std::vector<CgroupMount> mounts = CgroupMounts();
  for (bool v2 : {false, true}) {
    for (const CgroupMount& m : mounts) {
      if (m.v2 == v2 && m.controllers.count(controller)) return m.point + path;
    }
  }
  return "";
}

ConsoleSocket::ConsoleSocket(const std::string& path)
    : listener_(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      listen(listener_.get(), 4) < 0) {
    listener_.Reset();
  }
}

sys::UniqueFd ConsoleSocket::ReceiveFd() {
  struct pollfd p = {listener_.get(), POLLIN, 0};
  int limit = static_cast<int>(std::chrono::milliseconds(kSettleLimit).count());
  if (poll(&p, 1, limit) != 1) return {};
  sys::UniqueFd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn.valid()) return {};
  char data[4096];
  struct iovec iov = {data, sizeof data};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC) < 0) return {};
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      memcpy(&fd, CMSG_DATA(c), sizeof fd);
      return sys::UniqueFd(fd);
    }
  }
  return {};
}

std::string ReadUntil(int fd, const std::string& needle) {
  std::string got;
  auto end = std::chrono::steady_clock::now() + kSettleLimit;
  while (got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) != 1) continue;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

void Oci::SetUp() {
  HostTest::SetUp();
  if (IsSkipped()) return;
  if (access(kBusybox, X_OK) != 0) GTEST_SKIP() << "needs " << kBusybox << " (busybox-static)";
  if (access(RuntimeBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no runtime at " << RuntimeBinary();
  }
  root_ = scratch_.path() + "/root";
  parent_ = "/brig-oci-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
  devices_ = HostDevices();
}

std::vector<std::string> HostDevices() {
  std::vector<std::string> out;
  for (const char* d : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                        "/dev/tty"}) {
    struct stat st;
    if (stat(d, &st) < 0) continue;
    out.push_back(std::string(d) + " " + std::to_string(st.st_uid) + ":" +
                  std::to_string(st.st_gid) + " mode " + std::to_string(st.st_mode) + " ctime " +
                  std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec));
  }
  return out;
}

void Oci::TearDown() {
  if (IsSkipped()) return;
  std::vector<std::string> left = ListDir(root_);
  EXPECT_TRUE(left.empty()) << "containers left under --root: " << left.size();
  for (const std::string& id : left) (void)Run({"delete", "--force", id});
  ReapExited();
  std::vector<pid_t> procs = LiveDescendants();
  EXPECT_TRUE(procs.empty()) << "processes left: " << procs.size() << " (first "
                             << (procs.empty() ? "" : Comm(procs[0])) << ")";
  for (pid_t p : procs) kill(p, SIGKILL);
  for (pid_t p : procs) AwaitGone(p);
  for (const CgroupMount& m : CgroupMounts()) {
    std::string dir = m.point + parent_;
    if (!Exists(dir)) continue;
    std::vector<std::string> subs;
    SubdirsDeepestFirst(dir, subs);
    EXPECT_TRUE(subs.empty()) << "cgroup left: " << subs.front();
    subs.push_back(dir);
    for (const std::string& s : subs) RemoveGroup(s);
  }
  EXPECT_EQ(HostDevices(), devices_) << "a host device node was changed (owner, mode or ctime)";
  HostTest::TearDown();
}

Config Oci::Cfg(const std::string& id) const {
  Config c;
  c.cgroups_path = CgroupPath(id);
  return c;
}

std::string Oci::Bundle(const Config& c, const std::string& name) {
  std::string bundle = scratch_.path() + "/" + name;
  std::string rootfs = bundle + "/rootfs";
  for (const char* d :
       {"", "/rootfs", "/rootfs/bin", "/rootfs/etc", "/rootfs/proc", "/rootfs/dev", "/rootfs/sys",
        "/rootfs/tmp", "/rootfs/mnt", "/rootfs/home", "/rootfs/home/user"}) {
    mkdir((bundle + d).c_str(), 0755);
  }
  EXPECT_EQ(chown((rootfs + "/home/user").c_str(), 1000, 1000), 0);
  {
    std::ifstream in(kBusybox, std::ios::binary);
    std::ofstream out(rootfs + "/bin/busybox", std::ios::binary);
    out << in.rdbuf();
  }
  chmod((rootfs + "/bin/busybox").c_str(), 0755);
  for (const std::string& applet : Applets()) {
    (void)symlink("busybox", (rootfs + "/bin/" + applet).c_str());
  }
  std::ofstream(rootfs + "/etc/passwd") << "root:x:0:0:root:/:/bin/sh\n"
                                           "user:x:1000:1000::/home/user:/bin/sh\n";
  std::ofstream(rootfs + "/etc/group") << "root:x:0:\nuser:x:1000:\n";
  std::ofstream(bundle + "/config.json") << c.Json();
  return bundle;
}

RunOutput Oci::Run(const std::vector<std::string>& args, int fd7, const std::string& cwd) {
  const std::string base = scratch_.path() + "/io." + std::to_string(++calls_);
  const std::string out_path = base + ".out", err_path = base + ".err";
  std::vector<std::string> argv = {RuntimeBinary(), "--root", root_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    // A session of its own: a runtime that signals pid 0 (a stopped container's, in its
    // state) hits itself, not the test.
    setsid();
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(98);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (fd7 == 7 && fcntl(7, F_SETFD, 0) < 0) _exit(98);
    if (fd7 >= 0 && fd7 != 7 && dup2(fd7, 7) < 0) _exit(98);
    if (!cwd.empty() && chdir(cwd.c_str()) < 0) _exit(98);
    execv(cargv[0], cargv.data());
    _exit(99);
  }
  int status = 0;
  for (;;) {
    pid_t w = waitpid(-1, &status, 0);
    if (w == pid || (w < 0 && errno != EINTR)) break;
  }
  RunOutput r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFileOrEmpty(out_path);
  r.err = ReadFileOrEmpty(err_path);
  return r;
}

State Oci::StateOf(const std::string& id) {
  RunOutput r = Run({"state", id});
  State s = ParseState(r.out);
  s.ok = s.ok && r.exit_code == 0;
  return s;
}

pid_t Oci::CreateFrom(const std::string& bundle, const std::string& id,
                      const std::vector<std::string>& extra) {
  std::string pid_file = scratch_.path() + "/" + id + ".pid";
  std::vector<std::string> args = {"create", "--bundle", bundle, "--pid-file", pid_file};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(id);
  RunOutput r = Run(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return static_cast<pid_t>(atoi(ReadFileOrEmpty(pid_file).c_str()));
}

pid_t Oci::CreateAndStart(const Config& c, const std::string& id, const std::string& comm) {
  pid_t pid = Create(c, id);
  if (pid <= 0) return pid;
  RunOutput s = Run({"start", id});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(Eventually([&] { return Comm(pid) == comm; })) << "now " << Comm(pid);
  return pid;
}

std::vector<std::string> Oci::GroupsOf(const std::string& id) const {
  std::vector<std::string> out;
  for (const CgroupMount& m : CgroupMounts()) {
    if (Exists(m.point + CgroupPath(id))) out.push_back(m.point + CgroupPath(id));
  }
  return out;
}

std::vector<pid_t> Oci::LiveDescendants() {
  std::vector<pid_t> out;
  for (const std::string& n : ListDir("/proc")) {
    pid_t p = atoi(n.c_str());
    if (p > 0 && p != getpid() && Alive(p) && IsOwnDescendant(p)) out.push_back(p);
  }
  return out;
}

void Oci::ExpectCleanFailure(const RunOutput& r, const std::string& id) {
  EXPECT_NE(r.exit_code, 0) << "create succeeded";
  EXPECT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  if (IsBrig()) {
    EXPECT_EQ(r.err.rfind("brig: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "left under --root";
  EXPECT_EQ(GroupsOf(id), std::vector<std::string>{}) << "a cgroup was left";
  ReapExited();
  EXPECT_EQ(LiveDescendants(), std::vector<pid_t>{}) << "a process was left";
}

}  // namespace brig::testing::oci
