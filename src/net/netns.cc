#include "net/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <set>
#include <thread>

#include "sys/fd.h"
#include "util/files.h"
#include "util/parse.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71  // linux >= 5.14
#endif

namespace brig::net {
namespace {

// linux/nsfs.h NS_GET_ID (linux >= 6.18): a namespace's id, which for a network namespace
// is its cookie. Older kernels answer ENOTTY, and a namespace's inode then has to do.
constexpr unsigned long kNsGetId = _IOR(0xb7, 0xd, uint64_t);

// The path is another process's descriptor or mount point, which may have become anything
// meanwhile: O_NONBLOCK so that a FIFO there cannot hold brig up.
uint64_t CookieOf(const std::string& ns_path) {
  sys::UniqueFd fd(open(ns_path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  uint64_t id = 0;
  if (!fd || ioctl(fd.get(), kNsGetId, &id) < 0) return 0;
  return id;
}

// The keys asked about, and which of them have been found alive so far.
class Search {
 public:
  explicit Search(const std::vector<NetnsKey>& keys) : keys_(keys), alive_(keys.size()) {
    left_ = keys.size();
  }
  // A namespace with inode `ino` is held at `path`. True once every key is found alive.
  bool Found(uint64_t ino, const std::string& path) {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (alive_[i] || keys_[i].ino != ino) continue;
      // The inode alone may be a newer namespace's; the cookie tells them apart where the
      // kernel says it (0: it cannot, so the namespace is taken as alive).
      uint64_t cookie = keys_[i].cookie ? CookieOf(path) : 0;
      if (cookie == 0 || cookie == keys_[i].cookie) {
        alive_[i] = true;
        --left_;
      }
    }
    return left_ == 0;
  }
  bool Done() const { return left_ == 0; }
  std::vector<NetnsKey> Gone() const {
    std::vector<NetnsKey> out;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!alive_[i]) out.push_back(keys_[i]);
    }
    return out;
  }

 private:
  std::vector<NetnsKey> keys_;
  std::vector<bool> alive_;
  size_t left_;
};

std::vector<std::string> Numbered(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] >= '0' && de->d_name[0] <= '9') out.push_back(de->d_name);
    }
    closedir(d);
  }
  return out;
}

// Calls `fn` for every entry of `dir` named by a number until it returns true.
bool Each(const std::string& dir, const std::function<bool(const std::string&)>& fn) {
  for (const auto& name : Numbered(dir)) {
    if (fn(name)) return true;
  }
  return false;
}

uint64_t InodeAt(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// "net:[4026531840]" -> 4026531840; 0 for anything else.
uint64_t NetLinkInode(std::string_view link) {
  constexpr std::string_view kPrefix = "net:[";
  if (link.substr(0, kPrefix.size()) != kPrefix || link.back() != ']') return 0;
  std::string_view digits = link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1);
  if (digits.empty() || digits.size() > 19) return 0;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// nsfs mounts of network namespaces in the mount namespace of process `pid`.
bool SearchMounts(Search& s, const std::string& pid) {
  auto text = util::ReadFile("/proc/" + pid + "/mountinfo");
  if (!text) return false;
  for (std::string_view line : util::Split(*text, '\n')) {
    size_t dash = line.find(" - nsfs ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> f = util::Split(line.substr(0, dash), ' ');
    if (f.size() < 5) continue;
    uint64_t ino = NetLinkInode(f[3]);
    if (ino && s.Found(ino, "/proc/" + pid + "/root" + util::UnescapeMountinfo(f[4]))) return true;
  }
  return false;
}

}  // namespace

Result<NetnsKey> CurrentNetns() {
  NetnsKey k;
  struct stat st;
  const char* self = "/proc/thread-self/ns/net";
  if (stat(self, &st) < 0) return SysError("stat", self);
  k.ino = static_cast<uint64_t>(st.st_ino);
  sys::UniqueFd s(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t len = sizeof k.cookie;
  if (!s || getsockopt(s.get(), SOL_SOCKET, SO_NETNS_COOKIE, &k.cookie, &len) < 0) k.cookie = 0;
  return k;
}

std::vector<NetnsKey> GoneOf(const std::vector<NetnsKey>& keys) {
  Search s(keys);
  if (keys.empty()) return {};
  std::vector<std::string> pids = Numbered("/proc");
  // Cheapest first: each process's namespace, its threads', the mounts of every mount
  // namespace, and last every open descriptor.
  for (const auto& pid : pids) {
    std::string path = "/proc/" + pid + "/ns/net";
    if (s.Found(InodeAt(path), path)) return {};
  }
  for (const auto& pid : pids) {
    std::string task = "/proc/" + pid + "/task/";
    if (Each(task, [&](const std::string& tid) {
          std::string path = task + tid + "/ns/net";
          return tid != pid && s.Found(InodeAt(path), path);
        })) {
      return {};
    }
  }
  std::set<uint64_t> mount_namespaces;
  for (const auto& pid : pids) {
    if (!mount_namespaces.insert(InodeAt("/proc/" + pid + "/ns/mnt")).second) continue;
    if (SearchMounts(s, pid)) return {};
  }
  for (const auto& pid : pids) {
    std::string fds = "/proc/" + pid + "/fd/";
    if (Each(fds, [&](const std::string& fd) {
          char link[64];
          ssize_t n = readlink((fds + fd).c_str(), link, sizeof link);
          if (n <= 0 || n == sizeof link) return false;
          uint64_t ino = NetLinkInode(std::string_view(link, static_cast<size_t>(n)));
          return ino && s.Found(ino, fds + fd);
        })) {
      return {};
    }
  }
  return s.Gone();
}

Status InNetns(int fd, const std::string& what, const std::function<Status()>& fn) {
  Status done;
  std::thread([&] {
    done = setns(fd, CLONE_NEWNET) < 0 ? Status(SysError("setns", what)) : fn();
  }).join();
  return done;
}

}  // namespace brig::net
