// The network tests' world (see test_world.h).
#include "host/test_world.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <sstream>

namespace brig::testing {
namespace {

// Runs `fn` on a thread of its own that has first joined network namespace `nsfd`
// (setns changes only the calling thread's namespace). Sockets keep the namespace they
// were made in, so the caller can use what `fn` opens from any thread.
bool InNetns(int nsfd, const std::function<void()>& fn) {
  bool ok = false;
  std::thread t([&] {
    if (setns(nsfd, CLONE_NEWNET) != 0) return;
    ok = true;
    fn();
  });
  t.join();
  return ok;
}

// A new network namespace, held by the returned descriptor (-1 on failure).
int NewNetns() {
  int fd = -1;
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) == 0) fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  });
  t.join();
  return fd;
}

uint64_t Inode(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

std::string Endpoint(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

bool InPath(const std::string& prog) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    if (access((std::string(dir) + "/" + prog).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string ErrnoName(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : std::to_string(e);
}

// Pids of processes whose network namespace is inode `ino`.
std::vector<pid_t> ProcessesInNetns(uint64_t ino) {
  std::vector<pid_t> found;
  std::string want = "net:[" + std::to_string(ino) + "]";
  DIR* d = opendir("/proc");
  if (!d) return found;
  while (struct dirent* de = readdir(d)) {
    pid_t pid = atoi(de->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    char buf[64];
    ssize_t n =
        readlink(("/proc/" + std::string(de->d_name) + "/ns/net").c_str(), buf, sizeof buf - 1);
    if (n > 0 && std::string(buf, static_cast<size_t>(n)) == want) found.push_back(pid);
  }
  closedir(d);
  return found;
}

}  // namespace

std::string Lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

// ---- CountingServer --------------------------------------------------------------------

CountingServer::CountingServer(int fd, bool tcp, std::string label)
    : fd_(fd), tcp_(tcp), label_(std::move(label)) {
  if (pipe2(stop_, O_CLOEXEC) < 0) abort();
  thread_ = std::thread([this] { Loop(); });
}

CountingServer::~CountingServer() {
  (void)!write(stop_[1], "x", 1);
  thread_.join();
  close(stop_[0]);
  close(stop_[1]);
  close(fd_);
}

std::vector<std::string> CountingServer::Hits() const {
  std::lock_guard<std::mutex> l(mu_);
  return hits_;
}

void CountingServer::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  hits_.clear();
}

void CountingServer::Loop() {
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    if (!p[0].revents) continue;
    std::string hit;
    if (tcp_) {
      sockaddr_in peer = {}, local = {};
      socklen_t pl = sizeof peer, ll = sizeof local;
      int c = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &pl, SOCK_CLOEXEC);
      if (c < 0) continue;
      getsockname(c, reinterpret_cast<sockaddr*>(&local), &ll);
      close(c);
      hit = "tcp " + Endpoint(peer) + " -> " + Endpoint(local);
    } else {
      char buf[2048], control[256];
      sockaddr_in peer = {};
      iovec iov = {buf, sizeof buf};
      msghdr m = {};
      m.msg_name = &peer;
      m.msg_namelen = sizeof peer;
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      if (recvmsg(fd_, &m, MSG_DONTWAIT) < 0) continue;
      std::string to = "?";
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
          in_pktinfo info;
          memcpy(&info, CMSG_DATA(c), sizeof info);
          char ip[INET_ADDRSTRLEN];
          inet_ntop(AF_INET, &info.ipi_addr, ip, sizeof ip);
          to = ip;
        }
      }
      hit = "udp " + Endpoint(peer) + " -> " + to;
    }
    std::lock_guard<std::mutex> l(mu_);
    hits_.push_back(hit);
  }
}

// ---- TestWorld -------------------------------------------------------------------------

std::string TestWorld::Unavailable() {
  if (auto r = NeedRoot(); !r.empty()) return r;
  for (const char* prog : {"ip", "nft", "nsenter", "sysctl"}) {
    if (!InPath(prog)) return std::string("no ") + prog + " on this host";
  }
  if (RunCommand({"nft", "list", "tables"}).exit_code != 0) return "nft cannot list tables here";
  return {};
}

std::string TestWorld::NsPath(Where w) const {
  return "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(Fd(w));
}

std::string TestWorld::StateDir() const { return "/run/brig/net/" + std::to_string(world_ino_); }

std::vector<std::string> TestWorld::Leases() const {
  std::vector<std::string> out;
  if (DIR* d = opendir((StateDir() + "/addr").c_str())) {
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] != '.') out.push_back(de->d_name);
    }
    closedir(d);
  }
  return out;
}

RunOutput TestWorld::Run(Where w, const std::vector<std::string>& command) const {
  std::vector<std::string> argv = {"nsenter", "--net=" + NsPath(w)};
  argv.insert(argv.end(), command.begin(), command.end());
  return RunCommand(argv);
}

RunOutput TestWorld::Brig(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {BrigBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return InWorld(argv);
}

pid_t TestWorld::SpawnBrig(const std::vector<std::string>& args, const std::string& dir) {
  // nsenter enters the network namespace and execs brig (it forks only to enter a pid
  // namespace), so the pid is brig's own.
  std::vector<std::string> argv = {"nsenter", "--net=" + NsPath(kWorld), BrigBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::string out = dir + "/stdout", err = dir + "/stderr";
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(devnull, 0);
    dup2(o, 1);
    dup2(e, 2);
    execvp(cargv[0], cargv.data());
    _exit(99);
  }
  if (pid > 0) spawned_.insert(pid);
  return pid;
}

int TestWorld::Wait(pid_t pid) {
  spawned_.erase(pid);
  return WaitExit(pid);
}

CountingServer* TestWorld::Serve(Where w, bool tcp, uint16_t port) {
  int fd = -1;
  InNetns(Fd(w), [&] { fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0); });
  if (fd < 0) return nullptr;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (!tcp) setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 || (tcp && listen(fd, 64) < 0)) {
    close(fd);
    return nullptr;
  }
  std::string label = std::string(w == kWorld ? "world" : "internet") + (tcp ? " tcp/" : " udp/") +
                      std::to_string(port);
  servers_.push_back(std::make_unique<CountingServer>(fd, tcp, label));
  return servers_.back().get();
}

std::vector<std::string> TestWorld::AllHits() const {
  std::vector<std::string> out;
  for (const auto& s : servers_) {
    for (const auto& h : s->Hits()) out.push_back(s->label() + ": " + h);
  }
  return out;
}

void TestWorld::ClearHits() {
  for (auto& s : servers_) s->Clear();
}

std::vector<std::string> TestWorld::Links(const std::string& prefix) const {
  std::vector<std::string> out;
  std::istringstream in(InWorld({"ip", "-o", "link", "show"}).out);
  for (std::string line; std::getline(in, line);) {
    // "7: bv0123456789ab@if2: <BROADCAST,..."
    size_t a = line.find(": ");
    if (a == std::string::npos) continue;
    std::string name = line.substr(a + 2, line.find_first_of(":@", a + 2) - (a + 2));
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

std::string TestWorld::Connect(Where from, const std::string& addr, uint16_t port) const {
  int fd = -1;
  InNetns(Fd(from), [&] { fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); });
  if (fd < 0) return "socket: " + ErrnoName(errno);
  timeval tv = {3, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  std::string r =
      connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 ? "ok" : ErrnoName(errno);
  close(fd);
  return r;
}

std::string TestWorld::Build() {
  world_fd_ = NewNetns();
  internet_fd_ = NewNetns();
  if (world_fd_ < 0 || internet_fd_ < 0) return "cannot make network namespaces";
  world_ino_ = Inode(world_fd_);
  internet_ino_ = Inode(internet_fd_);
  // brig's state of a namespace that had this inode before and is gone (no live namespace
  // shares it): stale, and it would show up as this world's leases.
  RunCommand({"rm", "-rf", "--one-file-system", StateDir()});
  std::string w = NsPath(kWorld), i = NsPath(kInternet);
  const std::vector<std::pair<Where, std::vector<std::string>>> steps = {
      {kWorld, {"ip", "link", "set", "lo", "up"}},
      {kInternet, {"ip", "link", "set", "lo", "up"}},
      {kWorld, {"ip", "link", "add", "wi0", "type", "veth", "peer", "name", "eth0", "netns", i}},
      {kWorld, {"ip", "addr", "add", std::string(kWorldAddr) + "/24", "dev", "wi0"}},
      {kWorld, {"ip", "link", "set", "wi0", "up"}},
      {kInternet, {"ip", "addr", "add", std::string(kInternetHost) + "/24", "dev", "eth0"}},
      {kInternet, {"ip", "link", "set", "eth0", "up"}},
      {kInternet, {"ip", "route", "add", "default", "via", kWorldAddr}},
      {kWorld, {"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"}},
  };
  for (const auto& [where, cmd] : steps) {
    auto r = Run(where, cmd);
    if (r.exit_code != 0) {
      std::string text;
      for (const auto& c : cmd) text += c + " ";
      return "building the world: " + text + "failed: " + r.err;
    }
  }
  for (Where where : {kWorld, kInternet}) {
    for (uint16_t port : {53, 80, 443, 8080}) {
      if (!Serve(where, true, port)) return "cannot serve TCP " + std::to_string(port);
    }
    for (uint16_t port : {53, 8080}) {
      if (!Serve(where, false, port)) return "cannot serve UDP " + std::to_string(port);
    }
  }
  // The wiring works both ways (and the servers count), or no assertion below means much.
  if (auto r = Connect(kWorld, kInternetHost, 8080); r != "ok") {
    return std::string("the world cannot reach the internet host: ") + r;
  }
  if (auto r = Connect(kInternet, kWorldAddr, 8080); r != "ok") {
    return std::string("the internet host cannot reach the world: ") + r;
  }
  for (int i = 0; i < 100 && AllHits().size() < 2; ++i) usleep(10000);
  if (AllHits().size() != 2)
    return "the servers did not see the wiring check:\n" + Lines(AllHits());
  ClearHits();
  return {};
}

std::string TestWorld::TearDown() {
  std::string problems;
  bool killed_brig = false;
  for (pid_t pid : spawned_) {
    kill(pid, SIGKILL);
    WaitExit(pid);
    problems += "brig (pid " + std::to_string(pid) + ") was still running; killed it\n";
    killed_brig = true;
  }
  spawned_.clear();
  // A brig killed here leaves its record, cgroups and rules to brig gc (which must run in
  // the world). The workload dies with brig; give it a moment.
  if (killed_brig && world_fd_ >= 0) {
    for (int i = 0; i < 100 && !FindProcesses("brig-init").empty(); ++i) usleep(20000);
    Brig({"gc"});
  }
  for (uint64_t ino : {world_ino_, internet_ino_}) {
    if (ino == 0) continue;
    for (pid_t pid : ProcessesInNetns(ino)) {
      // Only what this test started can be in its own namespaces.
      problems += "process " + std::to_string(pid) + " was left in the world; killed it\n";
      kill(pid, SIGKILL);
    }
  }
  servers_.clear();
  if (world_ino_ != 0) {
    // brig keeps its lock and leases per network namespace; this one is about to go.
    RunCommand({"rm", "-rf", "--one-file-system", StateDir()});
  }
  for (int* fd : {&world_fd_, &internet_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  world_ino_ = internet_ino_ = 0;
  return problems;
}

}  // namespace brig::testing
