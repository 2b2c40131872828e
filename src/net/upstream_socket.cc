#include "net/upstream_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace brig::net {
namespace {

uint32_t g_mark = 0;

}  // namespace

void SetUpstreamMark(uint32_t mark) { g_mark = mark; }

int UpstreamSocket(int domain, int type) {
  int fd = socket(domain, type, 0);
  if (fd < 0 || g_mark == 0 || domain == AF_UNIX) return fd;
  if (setsockopt(fd, SOL_SOCKET, SO_MARK, &g_mark, sizeof g_mark) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace brig::net
