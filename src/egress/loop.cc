#include "egress/loop.h"

#include <arpa/inet.h>
#include <sys/epoll.h>

#include "net/link.h"
#include "sys/syscalls.h"

namespace brig::egress {

Status Loop::Open() {
  ep_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!ep_) return SysError("epoll_create1", "egress");
  return {};
}

Status Loop::Add(int fd, uint64_t token) {
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = token;
  if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return SysError("epoll_ctl", "egress");
  return {};
}

void Loop::Interest(int fd, uint64_t token, uint32_t& current, uint32_t want) {
  sys::EpollInterest(ep_.get(), fd, token, current, want);
}

std::string Ip(uint32_t host_order) { return net::Ipv4{host_order}.Str(); }

sockaddr_in Sockaddr(uint32_t addr, uint16_t port) {
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr);
  sa.sin_port = htons(port);
  return sa;
}

uint32_t Millis(Clock::duration d) {
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

uint32_t Micros(Clock::duration d) {
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace brig::egress
