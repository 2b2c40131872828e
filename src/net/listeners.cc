#include "net/listeners.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace brig::net {
namespace {

Result<sys::UniqueFd> Bind(Ipv4 addr, int type, uint16_t& port) {
  sys::UniqueFd fd(socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return SysError("socket");
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr.v);
  sa.sin_port = htons(port);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    return SysError("bind", addr.Str());
  }
  if (type == SOCK_STREAM && listen(fd.get(), 128) < 0) return SysError("listen", addr.Str());
  socklen_t len = sizeof sa;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) < 0) {
    return SysError("getsockname");
  }
  port = ntohs(sa.sin_port);
  return fd;
}

}  // namespace

Result<Listeners> Listeners::Open(Ipv4 gateway, ListenerPorts ports) {
  Listeners l;
  l.ports_ = ports;
  l.http_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.http), "listener");
  l.https_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.https), "listener");
  l.dns_tcp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_STREAM, l.ports_.dns_tcp), "listener");
  l.dns_udp_ = BRIG_TRY_CTX(Bind(gateway, SOCK_DGRAM, l.ports_.dns_udp), "listener");
  return l;
}

}  // namespace brig::net
