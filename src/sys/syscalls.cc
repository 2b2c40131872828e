// Raw system call wrappers. Nothing here decides policy; callers do.
#include "sys/syscalls.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace brig::sys {

CloneArgs CloneArgs::Held(uint64_t flags, int* pidfd, int cgroup_fd) {
  CloneArgs ca{.flags = flags | CLONE_PIDFD, .pidfd = pidfd, .exit_signal = SIGCHLD};
  if (cgroup_fd >= 0) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup_fd = cgroup_fd;
  }
  return ca;
}

Result<pid_t> Clone3(const CloneArgs& args) {
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = args.flags;
  ca.pidfd = reinterpret_cast<uint64_t>(args.pidfd);
  ca.exit_signal = static_cast<uint64_t>(args.exit_signal);
  if (args.cgroup_fd >= 0) ca.cgroup = static_cast<uint64_t>(args.cgroup_fd);
  long rc = syscall(SYS_clone3, &ca, sizeof ca);
  if (rc < 0) return SysError("clone3");
  return static_cast<pid_t>(rc);
}

Result<UniqueFd> Openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve,
                         uint64_t mode) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = resolve;
  long fd;
  do {
    fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return SysError("openat2", path);
  return UniqueFd(static_cast<int>(fd));
}

Status EnterDirInRoot(const std::string& path, const std::string& subject) {
  UniqueFd root = BRIG_TRY_CTX(Openat2(AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0), subject);
  auto dir = Openat2(root.get(), path, O_PATH | O_DIRECTORY,
                     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (!dir && dir.error().err == ELOOP) {
    return Fail(subject, path,
                "goes through a /proc link to a descriptor, cwd or root, which brig never "
                "follows, or a symlink loop");
  }
  if (!dir) return std::move(dir).error().Wrap(subject);
  if (fchdir(dir->get()) < 0) return SysError("chdir", subject + " " + path);
  char cwd[PATH_MAX];
  if (syscall(SYS_getcwd, cwd, sizeof cwd) < 0) return SysError("getcwd", subject + " " + path);
  if (cwd[0] != '/') return Fail(subject, path, "refused: it is outside the container's root");
  return {};
}

Result<UniqueFd> OpenTree(int dirfd, const std::string& path, unsigned flags) {
  long fd = syscall(SYS_open_tree, dirfd, path.c_str(), flags | OPEN_TREE_CLOEXEC);
  if (fd < 0) return SysError("open_tree", path);
  return UniqueFd(static_cast<int>(fd));
}

Status MoveMount(int from_dirfd, const std::string& from_path, int to_dirfd,
                 const std::string& to_path, unsigned flags) {
  if (syscall(SYS_move_mount, from_dirfd, from_path.c_str(), to_dirfd, to_path.c_str(), flags) <
      0) {
    return SysError("move_mount", to_path);
  }
  return {};
}

Status MountSetattr(int dirfd, const std::string& path, unsigned flags, uint64_t attr_set,
                    uint64_t attr_clr, const std::string& subject) {
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = attr_set;
  attr.attr_clr = attr_clr;
  if (syscall(SYS_mount_setattr, dirfd, path.c_str(), flags, &attr, sizeof attr) < 0) {
    return SysError("mount_setattr", subject);
  }
  return {};
}

Result<UniqueFd> FsOpen(const std::string& fstype) {
  long fd = syscall(SYS_fsopen, fstype.c_str(), FSOPEN_CLOEXEC);
  if (fd < 0) return SysError("fsopen", fstype);
  return UniqueFd(static_cast<int>(fd));
}

Status FsConfigString(int fsfd, const std::string& key, const std::string& value) {
  if (syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, key.c_str(), value.c_str(), 0) < 0) {
    return SysError("fsconfig", key + "=" + value);
  }
  return {};
}

Status FsConfigCreate(int fsfd, const std::string& fstype) {
  if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) {
    return SysError("fsconfig create", fstype);
  }
  return {};
}

Result<UniqueFd> FsMount(int fsfd, uint64_t attrs, const std::string& subject) {
  long fd = syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC, attrs);
  if (fd < 0) return SysError("fsmount", subject);
  return UniqueFd(static_cast<int>(fd));
}

Status FsConfigFlag(int fsfd, const std::string& key, const std::string& subject) {
  if (syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_FLAG, key.c_str(), nullptr, 0) < 0) {
    return SysError("fsconfig", subject + " " + key);
  }
  return {};
}

Status MountSetIdmap(int tree, unsigned flags, int userns_fd, const std::string& subject) {
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | flags, &attr, sizeof attr) < 0) {
    return SysError("mount_setattr", subject);
  }
  return {};
}

Status PivotRoot(const std::string& new_root, const std::string& put_old) {
  if (syscall(SYS_pivot_root, new_root.c_str(), put_old.c_str()) < 0) {
    return SysError("pivot_root", new_root);
  }
  return {};
}

Status PidfdSendSignal(int pidfd, int sig) {
  if (syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) < 0) {
    return SysError("pidfd_send_signal", strsignal(sig));
  }
  return {};
}

Result<UniqueFd> PidfdOpen(pid_t pid, const std::string& subject) {
  long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return SysError("pidfd_open", subject);
  return UniqueFd(static_cast<int>(fd));
}

Status WaitidPidfd(int pidfd, siginfo_t& info, int options) {
  info = {};
  if (syscall(SYS_waitid, P_PIDFD, pidfd, &info, options, nullptr) < 0) {
    return SysError("waitid", "pidfd");
  }
  return {};
}

Status Faccessat(int dirfd, const std::string& path, int mode, const std::string& subject) {
  if (syscall(SYS_faccessat, dirfd, path.c_str(), mode) < 0) return SysError("faccessat", subject);
  return {};
}

Status JoinSessionKeyring() {
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0) {
    return SysError("keyctl", "join a session keyring");
  }
  return {};
}

Result<int> SeccompSetFilter(unsigned flags, const struct sock_fprog& prog) {
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (rc < 0) return SysError("seccomp", "load filter");
  return flags & SECCOMP_FILTER_FLAG_NEW_LISTENER ? static_cast<int>(rc) : -1;
}

Status SendWithFd(int sock, struct iovec* iov, size_t iovlen, int pass, std::string_view what) {
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = iov;
  mh.msg_iovlen = iovlen;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass >= 0) {
    memset(control, 0, sizeof control);
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pass, sizeof pass);
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SysError("sendmsg", std::string(what));
  return {};
}

Result<size_t> RecvWithFd(int sock, void* buf, size_t len, int flags, UniqueFd& fd, bool* cut) {
  struct iovec iov = {buf, len};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SysError("recvmsg");
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int got;
      memcpy(&got, CMSG_DATA(c), sizeof got);
      fd = UniqueFd(got);
    }
  }
  if (cut) *cut = mh.msg_flags & MSG_CTRUNC;
  return static_cast<size_t>(n);
}

Result<UniqueFd> ConnectUnix(const std::string& path, const std::string& what) {
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return BadInput(what, path, "path too long for a unix socket");
  }
  memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return SysError("socket", what);
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    return SysError("connect", what + " " + path);
  }
  return s;
}

Result<long> Bpf(int cmd, union bpf_attr& attr, const std::string& subject) {
  long r = syscall(SYS_bpf, cmd, &attr, sizeof attr);
  if (r < 0) return SysError("bpf", subject);
  return r;
}

int ReadAllAndReap(int fd, pid_t pid, std::string& out) {
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

Status RunProgram(const std::string& path, const std::vector<std::string>& args,
                  const std::string& subject, int fd3) {
  UniqueFd high;
  if (fd3 >= 0) {
    // Above 3, so that the dup2 below cannot meet the pipe's ends.
    high.Reset(fcntl(fd3, F_DUPFD_CLOEXEC, 10));
    if (!high) return SysError(path, subject);
  }
  FdPair errors = BRIG_TRY(FdPair::Pipe(true, path + " " + subject));
  UniqueFd r = errors.TakeParentEnd(), w = errors.TakeChildEnd();
  std::vector<char*> argv = {const_cast<char*>(path.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* env[] = {nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, w.get(), 2);
  if (high) posix_spawn_file_actions_adddup2(&fa, high.get(), 3);
  pid_t pid;
  int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv.data(), env);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return SysError("run", path);
  }
  w.Reset();
  std::string err;
  int st = ReadAllAndReap(r.get(), pid, err);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return {};
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  err = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  return Fail(path, subject,
              err.empty() ? "exited with status " + std::to_string(WEXITSTATUS(st)) : err);
}

std::optional<int> ReadExecError(int fd) {
  int e = 0;
  ssize_t n;
  do {
    n = read(fd, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof e) return e;
  return std::nullopt;
}

bool PeerClosed(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) < 0 || (p.revents & (POLLRDHUP | POLLHUP)) != 0;
}

Status BecomeSubreaper() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    return SysError("prctl", "PR_SET_CHILD_SUBREAPER");
  }
  return {};
}

Status DropSupplementaryGroups() {
  if (getgroups(0, nullptr) != 0 && setgroups(0, nullptr) < 0) {
    return SysError("setgroups", "brig's supplementary groups");
  }
  return {};
}

Status CloseRangeCloexec(unsigned first) {
  if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    return SysError("close_range");
  }
  return {};
}

Status CloseAllExcept(std::vector<int> kept, unsigned first) {
  std::sort(kept.begin(), kept.end());
  unsigned next = first;
  for (int fd : kept) {
    if (fd < 0 || static_cast<unsigned>(fd) < next) continue;
    if (static_cast<unsigned>(fd) > next && syscall(SYS_close_range, next, fd - 1, 0) < 0) {
      return SysError("close_range");
    }
    next = static_cast<unsigned>(fd) + 1;
  }
  if (syscall(SYS_close_range, next, ~0U, 0) < 0) return SysError("close_range");
  return {};
}

Status EpollWatch(int ep, int fd) {
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) return SysError("epoll_ctl");
  return {};
}

void EpollInterest(int ep, int fd, uint64_t token, uint32_t& current, uint32_t want) {
  if (want == current || fd < 0) return;
  epoll_event ev = {};
  ev.events = want;
  ev.data.u64 = token;
  int op = current == 0 ? EPOLL_CTL_ADD : want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
  if (epoll_ctl(ep, op, fd, &ev) == 0) current = want;
}

Result<bool> IsOwnNamespace(const std::string& path, std::string_view proc_name) {
  std::string own = "/proc/self/ns/" + std::string(proc_name);
  struct ::stat joined, mine;
  if (::stat(path.c_str(), &joined) < 0) return SysError("stat", "linux.namespaces " + path);
  if (::stat(own.c_str(), &mine) < 0) return SysError("stat", own);
  return joined.st_dev == mine.st_dev && joined.st_ino == mine.st_ino;
}

}  // namespace brig::sys
