#include "net/listeners.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "sys/syscalls.h"

namespace brig::net {
namespace {

Result<sys::UniqueFd> Bind(Ipv4 addr, int type, uint16_t& port) {
  sys::UniqueFd fd(socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return SysError("socket");
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr.v);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    return SysError("bind", addr.Str());
  }
  if (type == SOCK_STREAM && listen(fd.get(), 64) < 0) return SysError("listen", addr.Str());
  socklen_t len = sizeof sa;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) < 0) {
    return SysError("getsockname");
  }
  port = ntohs(sa.sin_port);
  return fd;
}

constexpr char kHttpRefusal[] =
    "HTTP/1.1 403 Forbidden\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 72\r\n"
    "Connection: close\r\n"
    "\r\n"
    "brig: this version of brig has no egress proxy; nothing leaves the host\n";
// A TLS record: alert (21), version 3.1, length 2, level fatal (2), access_denied (49).
constexpr char kTlsRefusal[] = {0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31};

}  // namespace

std::string_view HttpRefusal() { return {kHttpRefusal, sizeof kHttpRefusal - 1}; }
std::string_view TlsRefusal() { return {kTlsRefusal, sizeof kTlsRefusal}; }

Result<Listeners> Listeners::Open(Ipv4 gateway, Ipv4 sandbox) {
  Listeners l;
  l.sandbox_ = sandbox;
  l.epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!l.epoll_) return SysError("epoll_create1");
  l.http_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.http), "listener");
  l.https_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.https), "listener");
  l.dns_tcp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.dns_tcp), "listener");
  l.dns_udp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_DGRAM, l.ports_.dns_udp), "listener");
  for (int fd : {l.http_.get(), l.https_.get(), l.dns_tcp_.get(), l.dns_udp_.get()}) {
    BRIG_TRY(sys::EpollWatch(l.epoll_.get(), fd));
  }
  return l;
}

void Listeners::Handle() {
  struct epoll_event evs[16];
  int n = epoll_wait(epoll_.get(), evs, 16, 0);
  for (int i = 0; i < n; ++i) {
    int fd = evs[i].data.fd;
    if (fd == dns_udp_.get()) {
      char buf[1500];
      sockaddr_in from = {};
      for (;;) {
        socklen_t len = sizeof from;
        ssize_t got = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (got < 0) break;
        if (ntohl(from.sin_addr.s_addr) != sandbox_.v) continue;
        std::string reply = RefuseDnsQuery(std::string_view(buf, static_cast<size_t>(got)));
        if (!reply.empty()) {
          (void)sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
        }
      }
    } else if (fd == http_.get() || fd == https_.get() || fd == dns_tcp_.get()) {
      Accept(fd);
    } else {
      Drain(fd);
    }
  }
}

void Listeners::Accept(int listener) {
  for (;;) {
    sockaddr_in peer = {};
    socklen_t len = sizeof peer;
    sys::UniqueFd conn(accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len,
                               SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) return;
    if (ntohl(peer.sin_addr.s_addr) != sandbox_.v) continue;  // not this sandbox: closed
    std::string_view say = listener == http_.get()    ? HttpRefusal()
                           : listener == https_.get() ? TlsRefusal()
                                                      : std::string_view();
    (void)!send(conn.get(), say.data(), say.size(), MSG_NOSIGNAL);
    // A FIN after the refusal; the socket stays until the client closes too, so what the
    // client sent meanwhile cannot turn the close into a reset that loses the refusal.
    (void)shutdown(conn.get(), SHUT_WR);
    if (!sys::EpollWatch(epoll_.get(), conn.get())) continue;
    if (conns_.size() >= kMaxRefusedConnections) conns_.pop_front();
    conns_.push_back(std::move(conn));
  }
}

void Listeners::Drain(int conn) {
  char buf[4096];
  ssize_t n;
  while ((n = recv(conn, buf, sizeof buf, 0)) > 0) {
  }
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
    auto it = std::find_if(conns_.begin(), conns_.end(),
                           [&](const sys::UniqueFd& c) { return c.get() == conn; });
    if (it != conns_.end()) conns_.erase(it);  // closing removes it from the epoll set
  }
}

std::string RefuseDnsQuery(std::string_view query) {
  // The header is 12 bytes; only a query (QR clear) gets an answer.
  if (query.size() < 12 || (static_cast<uint8_t>(query[2]) & 0x80) != 0) return {};
  std::string r(query);
  // QR set, opcode and RD kept, AA and TC clear; RA and Z clear, RCODE 5 (REFUSED).
  r[2] = static_cast<char>(0x80 | (static_cast<uint8_t>(query[2]) & 0x79));
  r[3] = 5;
  return r;
}

}  // namespace brig::net
