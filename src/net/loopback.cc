// Loopback up with one ioctl: no netlink library is needed for a single flag.
#include "net/loopback.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "sys/fd.h"

namespace brig::net {

Status BringUpLoopback() {
  sys::UniqueFd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return SysError("socket", "AF_INET");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) return SysError("SIOCGIFFLAGS", "lo");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s.get(), SIOCSIFFLAGS, &ifr) < 0) return SysError("SIOCSIFFLAGS", "lo");
  return {};
}

}  // namespace brig::net
