#include "net/listeners.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

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

}  // namespace

Result<Listeners> Listeners::Open(Ipv4 gateway) {
  Listeners l;
  l.http_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.http), "listener");
  l.https_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.https), "listener");
  l.dns_tcp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.dns_tcp), "listener");
  l.dns_udp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_DGRAM, l.ports_.dns_udp), "listener");
  return l;
}

std::vector<int> Listeners::fds() const {
  return {http_.get(), https_.get(), dns_tcp_.get(), dns_udp_.get()};
}

void Listeners::Handle(int fd) {
  if (fd == dns_udp_.get()) {
    char buf[1500];
    sockaddr_in from = {};
    for (;;) {
      socklen_t len = sizeof from;
      ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) return;
      std::string reply = RefuseDnsQuery(std::string_view(buf, static_cast<size_t>(n)));
      if (!reply.empty()) {
        (void)sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    }
  }
  for (;;) {
    sys::UniqueFd conn(accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) return;
    // A reset, not a FIN: the client learns at once that it got nowhere.
    struct linger lg = {1, 0};
    (void)setsockopt(conn.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
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
