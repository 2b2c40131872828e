// The host tier's shared helpers that are more than a line (host_fixture.h).
#include "host/host_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <linux/mount.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "fs/idmap.h"
#include "proto/brig.pb.h"

namespace brig::testing {

namespace {

constexpr char kSuidDumpable[] = "/proc/sys/fs/suid_dumpable";

bool WriteKnob(const std::string& v) {
  int fd = open(kSuidDumpable, O_WRONLY | O_CLOEXEC);
  bool ok = fd >= 0 && write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size());
  if (fd >= 0) close(fd);
  return ok;
}

}  // namespace

std::vector<std::string> SuidDumpableSettings() {
  const char* own = getenv("BRIG_OWN_KERNEL");
  if (own && std::string(own) == "1") return {"", "1"};
  return {""};
}

ScopedSuidDumpable::ScopedSuidDumpable(const std::string& value) {
  if (value.empty()) return;
  was_ = ReadFileOrEmpty(kSuidDumpable);
  ok_ = WriteKnob(value);
}

ScopedSuidDumpable::~ScopedSuidDumpable() {
  if (!was_.empty()) (void)WriteKnob(was_);
}

bool KernelUpdatesElementExpiry() {
  auto r = RunCommand(
      {"unshare", "--net", "sh", "-c",
       "nft add table inet t && nft add set inet t s '{ type ipv4_addr; flags timeout; }' && "
       "nft add element inet t s '{ 10.0.0.1 timeout 1d }' && "
       "nft add element inet t s '{ 10.0.0.1 timeout 1d expires 1ms }' && "
       "nft list set inet t s"});
  return r.exit_code == 0 && r.out.find("expires 23h") == std::string::npos;
}

bool IdMappable(const std::string& dir) {
  sys::UniqueFd tree(static_cast<int>(
      syscall(SYS_open_tree, AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (!tree) return false;
  fs::IdMapper mapper;
  auto mapped = mapper.Map(tree.get(), fs::IdMap{1234, 2345, 1879048192, 1879048192}, dir);
  return mapped && *mapped;
}

std::vector<v1::AuditEvent> ReadAuditEvents(const std::string& path) {
  std::vector<v1::AuditEvent> events;
  std::istringstream in(ReadFileOrEmpty(path));
  for (std::string line; std::getline(in, line);) {
    v1::AuditEvent e;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e).ok()) << line;
    events.push_back(e);
  }
  return events;
}

HostIpc::HostIpc(const std::string& dir, const std::string& socket, const std::string& fifo) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock = dir + "/" + socket;
  if (sock.size() >= sizeof addr.sun_path) return;
  memcpy(addr.sun_path, sock.c_str(), sock.size());
  sys::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener || bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener.get(), 8) != 0 || chmod(sock.c_str(), 0777) != 0) {
    return;
  }
  std::string path = dir + "/" + fifo;
  if (mkfifo(path.c_str(), 0666) != 0 || chmod(path.c_str(), 0666) != 0) return;
  reader_.Reset(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  listener_ = std::move(listener);
}

bool HostIpc::Connected() {
  sys::UniqueFd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  return static_cast<bool>(conn);
}

bool HostIpc::Written() {
  char byte;
  return read(reader_.get(), &byte, 1) > 0;
}

void AsRootOrUser::GiveToUser(const std::string& dir) const {
  if (AsUser()) EXPECT_EQ(chown(dir.c_str(), user_.uid(), user_.uid()), 0) << dir;
}

OrdinaryUser::~OrdinaryUser() {
  if (!runtime_.empty()) RunCommand({"rm", "-rf", "--one-file-system", runtime_});
}

std::string OrdinaryUser::Make() {
  for (uid_ = 61000 + static_cast<uid_t>(getpid() % 997); getpwuid(uid_) != nullptr; ++uid_) {
  }
  if (!Processes().empty()) return "uid " + std::to_string(uid_) + " has processes";
  RunOutput userns =
      RunCommand({"setpriv", "--reuid=" + std::to_string(uid_), "--regid=" + std::to_string(uid_),
                  "--clear-groups", "unshare", "--user", "--mount", "true"});
  if (userns.exit_code != 0) {
    return "an ordinary user cannot make a user namespace here: " + userns.err;
  }
  char run[] = "/run/brig-rootless-test.XXXXXX";
  if (mkdtemp(run) == nullptr) return std::string("mkdtemp: ") + strerror(errno);
  runtime_ = run;
  if (chown(runtime_.c_str(), uid_, uid_) != 0) return std::string("chown: ") + strerror(errno);
  return "";
}

std::vector<std::string> OrdinaryUser::Prefix(const std::string& home, bool xdg,
                                              const std::string& groups) const {
  std::vector<std::string> cmd = {"setpriv",
                                  "--reuid=" + std::to_string(uid_),
                                  "--regid=" + std::to_string(uid_),
                                  groups,
                                  "env",
                                  "-i",
                                  "PATH=/usr/bin:/bin",
                                  "HOME=" + home};
  if (xdg) cmd.push_back("XDG_RUNTIME_DIR=" + runtime_);
  return cmd;
}

std::string OrdinaryUser::Processes() const {
  std::string pids;
  DIR* d = opendir("/proc");
  if (!d) return "cannot read /proc";
  while (dirent* e = readdir(d)) {
    struct stat st;
    std::string p = std::string("/proc/") + e->d_name;
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || stat(p.c_str(), &st) != 0) continue;
    if (st.st_uid == uid_) pids += (pids.empty() ? "" : " ") + std::string(e->d_name);
  }
  closedir(d);
  return pids;
}

std::string OrdinaryUser::Records() const {
  std::string left;
  for (const char* dir : {"/brig/sandboxes", "/brig/oci"}) {
    if (DIR* d = opendir((runtime_ + dir).c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') left += std::string(dir) + "/" + e->d_name + " ";
      }
      closedir(d);
    }
  }
  return left;
}

}  // namespace brig::testing
