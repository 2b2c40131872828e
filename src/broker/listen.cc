#include "broker/listen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/netns.h"
#include "sys/syscalls.h"

namespace brig::broker {
namespace {

constexpr int kBacklog = 128;

}  // namespace

Status ListenUnix(const std::vector<Config>& brokers, Listeners& out) {
  out.local.resize(brokers.size());
  sys::UniqueFd dir;
  std::vector<std::pair<size_t, std::string>> trees;  // broker, socket name in `dir`
  for (size_t i = 0; i < brokers.size(); ++i) {
    const Config& c = brokers[i];
    if (c.unix_path.empty()) continue;
    std::string what = "broker " + c.name + ": unix socket";
    if (!dir) {
      dir = BRIG_TRY(fs::NewFs("tmpfs", {{"size", "64k"}, {"mode", "0755"}},
                               MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                               "broker sockets"));
    }
    std::string name = "s" + std::to_string(i);
    sys::UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) return SysError("socket", what);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::string at = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + name;
    at.copy(a.sun_path, sizeof a.sun_path - 1);
    if (bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return SysError("bind", what);
    // The workload's uid is unmapped on the host side of the inode: anyone may connect.
    if (fchmodat(dir.get(), name.c_str(), 0666, 0) < 0) return SysError("chmod", what);
    if (listen(s.get(), kBacklog) < 0) return SysError("listen", what);
    trees.push_back({i, name});
    out.local[i] = std::move(s);
  }
  if (!dir) return {};
  // Each socket is cloned from where the tmpfs is attached in a private namespace, all in
  // one: kernels before 6.15 clone only mounts of the caller's namespace.
  std::vector<sys::UniqueFd> cloned;
  BRIG_TRY_CTX(fs::InPrivateMountNs(dir.get(), "", [&]() -> Status {
                 for (const auto& [i, name] : trees) {
                   cloned.push_back(BRIG_TRY(sys::OpenTree(dir.get(), name, OPEN_TREE_CLONE)));
                 }
                 return {};
               }),
               "broker sockets");
  for (size_t k = 0; k < trees.size(); ++k) {
    const Config& b = brokers[trees[k].first];
    out.placed.push_back({b.unix_path, std::move(cloned[k]), SocketSource(b)});
  }
  return {};
}

Status ListenTcp(const std::vector<Config>& brokers, int netns, Listeners& out) {
  out.tcp.resize(brokers.size());
  bool any = false;
  for (const Config& c : brokers) any |= c.port != 0;
  if (!any) return {};
  auto listen_all = [&]() -> Status {
    for (size_t i = 0; i < brokers.size(); ++i) {
      const Config& c = brokers[i];
      if (c.port == 0) continue;
      std::string what =
          "broker " + c.name + ": 127.0.0.1:" + std::to_string(c.port) + " in the sandbox";
      sys::UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!s) return SysError("socket", what);
      int one = 1;
      (void)setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a = {};
      a.sin_family = AF_INET;
      a.sin_port = htons(c.port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
        return SysError("bind", what);
      }
      if (listen(s.get(), kBacklog) < 0) return SysError("listen", what);
      out.tcp[i] = std::move(s);
    }
    return {};
  };
  return netns >= 0 ? net::InNetns(netns, "the sandbox's network namespace", listen_all)
                    : listen_all();
}

}  // namespace brig::broker
