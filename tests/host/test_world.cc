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

#include <algorithm>
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


// A socket of namespace `nsfd` bound to addr:port (listening, for TCP), or -1. Every
// listener of the world may share its port with listeners on more specific addresses
// (SO_REUSEADDR, and SO_REUSEPORT for TCP): the kernel hands each connection or datagram
// to the most specific one.
int Listen(int nsfd, bool tcp, const char* addr, uint16_t port) {
  int fd = -1;
  InNetns(nsfd, [&] { fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0); });
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (tcp) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, addr, &sa.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 || (tcp && listen(fd, 64) < 0)) {
    close(fd);
    return -1;
  }
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

// The fake internet's web servers (TestWorld::BuildServices): python3's http.server, each
// spec "KIND,ADDR,PORT" (KIND https or http) on a thread, serving ROOT. Every connection,
// SNI, failed handshake and request is one line of LOG; "ready" once all listen. It makes
// no lookups of its own (http.server's bind would ask for the address's name).
constexpr char kWebServer[] = R"(import http.server, socket, socketserver, ssl, sys, threading
log_path, root, cert, key = sys.argv[1:5]
lock = threading.Lock()
log = open(log_path, "a", buffering=1)

def note(*words):
    with lock:
        log.write(" ".join(words) + "\n")

class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def send_head(self):
        host = self.headers.get("Host") or "-"
        note("request", self.server.kind, self.server.where, "host=" + host, "path=" + self.path)
        return super().send_head()

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        note("accept", self.kind, self.where, "from=" + client_address[0])
        if self.kind == "https":
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError) as e:
                note("tls_failed", self.kind, self.where, type(e).__name__)
                return
        try:
            super().finish_request(request, client_address)
        finally:
            request.close()

def serve(kind, addr, port):
    server = Server((addr, int(port)), Handler)
    server.kind, server.where = kind, addr + ":" + port
    if kind == "https":
        server.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.tls.load_cert_chain(cert, key)
        server.tls.sni_callback = lambda sock, name, ctx: note("sni", kind, server.where, name or "-")
    threading.Thread(target=server.serve_forever, daemon=True).start()

for spec in sys.argv[5:]:
    serve(*spec.split(","))
note("ready")
threading.Event().wait()
)";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A zone's key for a name: lower case, no trailing dot.
std::string ZoneKey(std::string name) {
  if (!name.empty() && name.back() == '.') name.pop_back();
  return Lower(name);
}

void Put16(std::string& out, unsigned v) {
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

// A name in DNS wire form (labels, no compression).
std::string WireName(const std::string& name) {
  std::string out;
  std::istringstream in(name);
  for (std::string label; std::getline(in, label, '.');) {
    if (label.empty()) continue;
    out.push_back(static_cast<char>(label.size()));
    out += label;
  }
  out.push_back('\0');
  return out;
}

// Reads a request head from `fd` (for at most 5 s) and sends `reply`.
void Respond(int fd, const std::string& reply) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
}

}  // namespace

int NewNetns() {
  int fd = -1;
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) == 0) fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  });
  t.join();
  return fd;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

// ---- CountingServer --------------------------------------------------------------------

CountingServer::CountingServer(int fd, bool tcp, std::string label, std::string reply)
    : fd_(fd), tcp_(tcp), label_(std::move(label)), reply_(std::move(reply)) {
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
      if (!reply_.empty()) Respond(c, reply_);
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

// ---- RecordingServer -------------------------------------------------------------------

RecordingServer::RecordingServer(int fd) : fd_(fd) {
  if (pipe2(stop_, O_CLOEXEC) < 0) abort();
  thread_ = std::thread([this] { Loop(); });
}

RecordingServer::~RecordingServer() {
  (void)!write(stop_[1], "x", 1);
  thread_.join();
  for (int fd : {stop_[0], stop_[1], fd_}) close(fd);
}

std::vector<std::string> RecordingServer::Received() const {
  std::lock_guard<std::mutex> l(mu_);
  return received_;
}

void RecordingServer::Loop() {
  static constexpr char kReply[] =
      "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nrecorded\n";
  int conn = -1;
  std::string got;
  for (;;) {
    pollfd p[2] = {{conn >= 0 ? conn : fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) break;
    if (conn < 0) {
      conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      got.clear();
      continue;
    }
    char buf[4096];
    ssize_t n = read(conn, buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      received_.push_back(got);
    }
    (void)!write(conn, kReply, sizeof kReply - 1);
    close(conn);
    conn = -1;
  }
  if (conn >= 0) close(conn);
}

// ---- ZoneServer ------------------------------------------------------------------------

ZoneServer::ZoneServer(int udp_fd, int tcp_fd) : udp_(udp_fd), tcp_(tcp_fd) {
  if (pipe2(stop_, O_CLOEXEC) < 0) abort();
  thread_ = std::thread([this] { Loop(); });
}

ZoneServer::~ZoneServer() {
  (void)!write(stop_[1], "x", 1);
  thread_.join();
  for (int fd : {stop_[0], stop_[1], udp_, tcp_}) close(fd);
}

void ZoneServer::SetA(const std::string& name, const std::vector<std::string>& addresses) {
  std::vector<uint32_t> v;
  for (const auto& a : addresses) {
    in_addr ia = {};
    if (inet_pton(AF_INET, a.c_str(), &ia) == 1) v.push_back(ia.s_addr);
  }
  std::lock_guard<std::mutex> l(mu_);
  a_[ZoneKey(name)] = v;
}

void ZoneServer::SetCname(const std::string& name, const std::string& target) {
  std::lock_guard<std::mutex> l(mu_);
  cname_[ZoneKey(name)] = ZoneKey(target);
}

void ZoneServer::SetTruncatedOverUdp(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  truncated_.insert(ZoneKey(name));
}

std::vector<std::string> ZoneServer::Queries() const {
  std::lock_guard<std::mutex> l(mu_);
  return queries_;
}

void ZoneServer::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  queries_.clear();
}

std::string ZoneServer::Answer(const std::string& q, const char* transport) {
  if (q.size() < 12 || (q[2] & 0x80) != 0) return "";  // too short, or a response
  if (q[4] != 0 || q[5] != 1) return "";               // one question, as every client asks
  std::string name;
  size_t at = 12;
  while (at < q.size() && q[at] != 0) {
    auto len = static_cast<unsigned char>(q[at]);
    if (len > 63 || at + 1 + len >= q.size()) return "";
    if (!name.empty()) name += '.';
    name += q.substr(at + 1, len);
    at += 1 + len;
  }
  if (at + 5 > q.size()) return "";
  size_t question_end = at + 5;
  unsigned qtype =
      (static_cast<unsigned char>(q[at + 1]) << 8) | static_cast<unsigned char>(q[at + 2]);
  std::string type = qtype == 1    ? "A"
                     : qtype == 28 ? "AAAA"
                     : qtype == 5  ? "CNAME"
                                   : std::to_string(qtype);
  std::lock_guard<std::mutex> l(mu_);
  queries_.push_back(std::string(transport) + " " + type + " " + name);

  // The chain of CNAMEs from the name, then its A records.
  std::string records;
  unsigned count = 0;
  std::string owner = "\xc0\x0c", key = ZoneKey(name);
  bool known = a_.count(key) || cname_.count(key);
  for (int hops = 0; known && cname_.count(key) && hops < 8; ++hops) {
    const std::string& target = cname_[key];
    std::string rdata = WireName(target);
    records += owner;
    Put16(records, 5);
    Put16(records, 1);
    records += std::string("\0\0\0\x1e", 4);  // TTL 30 s
    Put16(records, static_cast<unsigned>(rdata.size()));
    records += rdata;
    ++count;
    owner = rdata;
    key = target;
    known = a_.count(key) || cname_.count(key);
  }
  if (known && qtype == 1 && a_.count(key)) {
    for (uint32_t addr : a_[key]) {
      records += owner;
      Put16(records, 1);
      Put16(records, 1);
      records += std::string("\0\0\0\x1e", 4);
      Put16(records, 4);
      records.append(reinterpret_cast<const char*>(&addr), 4);
      ++count;
    }
  }
  bool truncate = transport == std::string("udp") && truncated_.count(ZoneKey(name));
  if (truncate) {
    records.clear();
    count = 0;
  }
  std::string reply = q.substr(0, 2);
  // QR and AA (and TC), the client's RD, RCODE NOERROR or NXDOMAIN.
  reply.push_back(static_cast<char>(0x84 | (truncate ? 0x02 : 0) | (q[2] & 0x01)));
  reply.push_back(static_cast<char>(known ? 0 : 3));
  Put16(reply, 1);
  Put16(reply, count);
  Put16(reply, 0);
  Put16(reply, 0);
  reply += q.substr(12, question_end - 12);
  return reply + records;
}

void ZoneServer::Loop() {
  // TCP connections, each with what it has sent that is not yet a whole message.
  std::vector<std::pair<int, std::string>> conns;
  for (;;) {
    std::vector<pollfd> p = {{stop_[0], POLLIN, 0}, {udp_, POLLIN, 0}, {tcp_, POLLIN, 0}};
    for (const auto& c : conns) p.push_back({c.first, POLLIN, 0});
    if (poll(p.data(), p.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    if (p[1].revents) {
      char buf[4096];
      sockaddr_in peer = {};
      socklen_t pl = sizeof peer;
      ssize_t n =
          recvfrom(udp_, buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&peer), &pl);
      if (n > 0) {
        std::string reply = Answer(std::string(buf, static_cast<size_t>(n)), "udp");
        if (!reply.empty()) {
          sendto(udp_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&peer), pl);
        }
      }
    }
    if (p[2].revents) {
      int conn = accept4(tcp_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (conn >= 0) conns.emplace_back(conn, "");
    }
    for (size_t i = 3; i < p.size(); ++i) {
      if (!p[i].revents) continue;
      auto& [fd, pending] = conns[i - 3];
      char buf[4096];
      ssize_t n = read(fd, buf, sizeof buf);
      bool keep = n > 0 || (n < 0 && errno == EAGAIN);
      if (n > 0) pending.append(buf, static_cast<size_t>(n));
      // Each whole message (two bytes of length, then the message) gets its reply.
      while (keep && pending.size() >= 2) {
        size_t len =
            (static_cast<unsigned char>(pending[0]) << 8) | static_cast<unsigned char>(pending[1]);
        if (pending.size() < 2 + len) break;
        std::string reply = Answer(pending.substr(2, len), "tcp");
        pending.erase(0, 2 + len);
        std::string framed;
        Put16(framed, static_cast<unsigned>(reply.size()));
        framed += reply;
        keep = !reply.empty() &&
               write(fd, framed.data(), framed.size()) == static_cast<ssize_t>(framed.size());
      }
      if (!keep) {
        close(fd);
        fd = -1;
      }
    }
    std::erase_if(conns, [](const auto& c) { return c.first < 0; });
  }
  for (const auto& c : conns) close(c.first);
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

RunOutput TestWorld::Brig(const std::vector<std::string>& args,
                          const std::vector<std::string>& as) const {
  std::vector<std::string> argv = as;
  argv.push_back(BrigBinary());
  argv.insert(argv.end(), args.begin(), args.end());
  return InWorld(argv);
}

pid_t TestWorld::SpawnBrig(const std::vector<std::string>& args, const std::string& dir,
                           const std::vector<std::string>& as) {
  // nsenter enters the network namespace and execs brig (it forks only to enter a pid
  // namespace), and setpriv and env exec too, so the pid is brig's own.
  std::vector<std::string> argv = {"nsenter", "--net=" + NsPath(kWorld)};
  argv.insert(argv.end(), as.begin(), as.end());
  argv.push_back(BrigBinary());
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
  NoteSpawned(pid);
  return pid;
}

int TestWorld::Wait(pid_t pid) {
  spawned_.erase(pid);
  return WaitExit(pid);
}

CountingServer* TestWorld::Serve(Where w, bool tcp, uint16_t port) {
  int fd = Listen(Fd(w), tcp, "0.0.0.0", port);
  if (fd < 0) return nullptr;
  int one = 1;
  if (!tcp) setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  std::string label = std::string(w == kWorld ? "world" : "internet") + (tcp ? " tcp/" : " udp/") +
                      std::to_string(port);
  servers_.push_back(std::make_unique<CountingServer>(fd, tcp, label));
  return servers_.back().get();
}

RecordingServer* TestWorld::Record(const std::string& addr, uint16_t port) {
  if (Run(kInternet, {"ip", "addr", "add", addr + "/32", "dev", "eth0"}).exit_code != 0) {
    return nullptr;
  }
  int fd = Listen(Fd(kInternet), true, addr.c_str(), port);
  if (fd < 0) return nullptr;
  recorders_.push_back(std::make_unique<RecordingServer>(fd));
  return recorders_.back().get();
}

CountingServer* TestWorld::ServeHttp(Where w, const std::string& addr, uint16_t port,
                                     const std::string& body) {
  int fd = Listen(Fd(w), true, addr.c_str(), port);
  if (fd < 0) return nullptr;
  std::string label = std::string(w == kWorld ? "world" : "internet") + " http " + addr + ":" +
                      std::to_string(port);
  std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n" + body;
  servers_.push_back(std::make_unique<CountingServer>(fd, true, label, reply));
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
  Eventually([&] { return AllHits().size() >= 2; });
  if (AllHits().size() != 2)
    return "the servers did not see the wiring check:\n" + Lines(AllHits());
  ClearHits();
  return {};
}

std::string TestWorld::BuildServices(const std::vector<std::string>& cert_names) {
  for (const char* prog : {"openssl", "git"}) {
    if (!InPath(prog)) return std::string("no ") + prog + " on this host";
  }
  if (access("/usr/bin/python3", X_OK) != 0) return "no /usr/bin/python3 for the web servers";
  for (const char* addr : {kDnsHost, kWebHost, kWrongHost}) {
    auto r = Run(kInternet, {"ip", "addr", "add", std::string(addr) + "/24", "dev", "eth0"});
    if (r.exit_code != 0) return std::string("adding ") + addr + ": " + r.err;
  }
  int udp = Listen(internet_fd_, false, kDnsHost, 53),
      tcp = Listen(internet_fd_, true, kDnsHost, 53);
  if (udp < 0 || tcp < 0) {
    if (udp >= 0) close(udp);
    if (tcp >= 0) close(tcp);
    return std::string("cannot listen on ") + kDnsHost + ":53";
  }
  dns_ = std::make_unique<ZoneServer>(udp, tcp);

  // The test CA, and one certificate it signs for every name.
  services_dir_ = std::make_unique<ScratchDir>();
  const std::string d = services_dir_->path();
  std::string sans = "subjectAltName=";
  for (size_t i = 0; i < cert_names.size(); ++i) sans += (i ? ",DNS:" : "DNS:") + cert_names[i];
  services_dir_->Write("server.ext", sans +
                                         "\nbasicConstraints=critical,CA:FALSE\n"
                                         "keyUsage=critical,digitalSignature\n"
                                         "extendedKeyUsage=serverAuth\n");
  const std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", d + "/ca.key", "-out", d + "/ca.crt", "-days", "2", "-subj", "/CN=brig test CA",
       "-addext", "basicConstraints=critical,CA:TRUE"},
      {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", d + "/server.key", "-out", d + "/server.csr", "-subj",
       "/CN=" + (cert_names.empty() ? std::string("server.test") : cert_names[0])},
      {"openssl", "x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.crt", "-CAkey",
       d + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile", d + "/server.ext", "-out",
       d + "/server.crt"},
      {"git", "-C", d + "/work", "init", "-q", "-b", "main"},
      {"git", "-C", d + "/work", "add", "README"},
      {"git", "-C", d + "/work", "-c", "user.name=brig test", "-c", "user.email=test@allowed.test",
       "commit", "-q", "-m", "the fake internet's repository"},
      {"git", "clone", "-q", "--bare", d + "/work", d + "/www/repo.git"},
      {"git", "-C", d + "/www/repo.git", "update-server-info"},
  };
  // The web root: a file, and a repository for git's dumb HTTP.
  mkdir((d + "/www").c_str(), 0755);
  mkdir((d + "/work").c_str(), 0755);
  services_dir_->Write("www/hello.txt", "hello from the fake internet\n");
  services_dir_->Write("work/README", "a repository of the fake internet\n");
  for (const auto& cmd : steps) {
    auto r = RunCommand(cmd);
    if (r.exit_code != 0) return cmd[0] + " " + cmd[1] + " failed: " + r.err;
  }

  // The web servers, a python3 of their own in the internet's namespace.
  std::string script = services_dir_->Write("web.py", kWebServer);
  std::string log = services_dir_->Write("web.log", "");
  std::vector<std::string> argv = {"nsenter",
                                   "--net=" + NsPath(kInternet),
                                   "/usr/bin/python3",
                                   script,
                                   log,
                                   d + "/www",
                                   d + "/server.crt",
                                   d + "/server.key"};
  const std::string web = kWebHost, wrong = kWrongHost;
  for (const std::string& spec :
       {"https," + web + ",443", "http," + web + ",80", "https," + wrong + ",443"}) {
    argv.push_back(spec);
  }
  std::string err = d + "/web.err";
  web_pid_ = SpawnQuiet(argv, err);
  if (web_pid_ < 0) return "cannot fork the web servers";
  bool died = false;
  Eventually([&] {
    died = waitpid(web_pid_, nullptr, WNOHANG) == web_pid_;
    return died || ReadFileOrEmpty(log).find("ready\n") != std::string::npos;
  });
  if (died) {
    web_pid_ = -1;
    return "the web servers died: " + ReadFileOrEmpty(err);
  }
  if (ReadFileOrEmpty(log).find("ready\n") == std::string::npos) {
    return "the web servers did not start: " + ReadFileOrEmpty(err);
  }
  ClearWebLog();
  return {};
}

std::string TestWorld::StopWebServers() {
  if (web_pid_ <= 0) return {};
  std::string problems;
  kill(web_pid_, SIGTERM);
  int status = 0;
  pid_t got = 0;
  Eventually([&] { return (got = waitpid(web_pid_, &status, WNOHANG)) != 0; });
  if (got == 0) {
    problems = "the web servers did not end on SIGTERM; killed them\n";
    kill(web_pid_, SIGKILL);
    waitpid(web_pid_, &status, 0);
  }
  web_pid_ = -1;
  return problems;
}

std::string TestWorld::CaPem() const {
  return services_dir_ ? services_dir_->path() + "/ca.crt" : "";
}

std::vector<std::string> TestWorld::WebLog() const {
  std::vector<std::string> out;
  if (!services_dir_) return out;
  std::istringstream in(ReadFileOrEmpty(services_dir_->path() + "/web.log"));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void TestWorld::ClearWebLog() {
  if (services_dir_) truncate((services_dir_->path() + "/web.log").c_str(), 0);
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
  // the world). The workload dies with brig, and the record's lock with it.
  if (killed_brig && world_fd_ >= 0) {
    SettleUntilGone("brig-init");
    Brig({"gc"});
  }
  problems += StopWebServers();
  dns_.reset();
  services_dir_.reset();
  for (uint64_t ino : {world_ino_, internet_ino_}) {
    if (ino == 0) continue;
    for (pid_t pid : ProcessesInNetns(ino)) {
      // Only what this test started can be in its own namespaces.
      problems += "process " + std::to_string(pid) + " was left in the world; killed it\n";
      kill(pid, SIGKILL);
    }
  }
  servers_.clear();
  recorders_.clear();
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
