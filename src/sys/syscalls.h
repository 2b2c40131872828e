// One thin wrapper per raw system call that glibc 2.36 does not wrap (or wraps badly).
// Each retries EINTR where that is safe and returns an Error naming the op and subject.
#pragma once

#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::sys {

struct CloneArgs {
  uint64_t flags = 0;
  int* pidfd = nullptr;
  int exit_signal = 0;
  int cgroup_fd = -1;  // with CLONE_INTO_CGROUP

  // A child held by its pidfd (sys::Child; the fd is written to *pidfd) that sends SIGCHLD
  // when it exits, made with `flags` and born in the v2 group `cgroup_fd` where there is
  // one (CLONE_INTO_CGROUP: the group's limits hold from its first instruction).
  static CloneArgs Held(uint64_t flags, int* pidfd, int cgroup_fd = -1);
};

// clone3 without a new stack: returns like fork (0 in the child). The caller must be
// single-threaded. ENOSYS means the kernel predates 5.3.
Result<pid_t> Clone3(const CloneArgs& args);

// Adds `fd` to epoll set `ep` for readability, with the fd itself as the event's data.
Status EpollWatch(int ep, int fd);
// Makes `fd`'s events in epoll set `ep` be `want` (0: out of the set), with `token` as the
// event's data; `current` is what they are now, and is updated when epoll_ctl succeeds.
// Nothing wanted means out of the set: a hung-up socket would otherwise be reported again
// and again while its direction waits for the other side.
void EpollInterest(int ep, int fd, uint64_t token, uint32_t& current, uint32_t want);

Result<UniqueFd> Openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve,
                         uint64_t mode = 0);
Result<UniqueFd> OpenTree(int dirfd, const std::string& path, unsigned flags);
Status MoveMount(int from_dirfd, const std::string& from_path, int to_dirfd,
                 const std::string& to_path, unsigned flags);
Status MountSetattr(int dirfd, const std::string& path, unsigned flags, uint64_t attr_set,
                    uint64_t attr_clr, const std::string& subject);
Result<UniqueFd> FsOpen(const std::string& fstype);
Status FsConfigString(int fsfd, const std::string& key, const std::string& value);
Status FsConfigCreate(int fsfd, const std::string& fstype);
Result<UniqueFd> FsMount(int fsfd, uint64_t attrs, const std::string& subject);
Status FsConfigFlag(int fsfd, const std::string& key, const std::string& subject);
Status PivotRoot(const std::string& new_root, const std::string& put_old);
// MOUNT_ATTR_IDMAP on the detached tree `tree` (flags: AT_RECURSIVE or 0), mapped as the
// user namespace `userns_fd` maps. The Error's err is the kernel's (EINVAL or EOPNOTSUPP:
// the filesystem cannot be mapped).
Status MountSetIdmap(int tree, unsigned flags, int userns_fd, const std::string& subject);
// Makes `path` the working directory, resolved inside this process's root as the kernel
// resolves it for the root's own processes (openat2 RESOLVE_IN_ROOT), never through a
// /proc magic link (RESOLVE_NO_MAGICLINKS: /proc/self/fd/N, /proc/PID/cwd and /root), and
// checks after the change that the directory is inside the root (getcwd(2) names one
// outside it "(unreachable)..."): a descriptor of a host directory, or a link planted by
// a container to one, can never become the cwd of a process started in it (runc
// CVE-2024-21626). Errors name `subject`.
Status EnterDirInRoot(const std::string& path, const std::string& subject);
Status PidfdSendSignal(int pidfd, int sig);
// Whether `path`, a namespace file, is the namespace brig runs in of the kind /proc/self/ns/
// names `proc_name` ("net", "ipc"...): the host's, for a namespace a container would join.
// An error if either cannot be looked at.
Result<bool> IsOwnNamespace(const std::string& path, std::string_view proc_name);
Result<UniqueFd> PidfdOpen(pid_t pid, const std::string& subject);
// waitid(P_PIDFD, ...): `info.si_pid` stays 0 if, with WNOHANG, nothing is waitable.
Status WaitidPidfd(int pidfd, siginfo_t& info, int options);
// The faccessat system call itself, never glibc's: glibc tries faccessat2 first, which an
// OCI container's seccomp allow-list written before it (and loaded by then) answers with
// EPERM.
Status Faccessat(int dirfd, const std::string& path, int mode, const std::string& subject);
// keyctl(KEYCTL_JOIN_SESSION_KEYRING) with no name: a new anonymous session keyring.
Status JoinSessionKeyring();
// seccomp(SECCOMP_SET_MODE_FILTER, flags, prog): the listener's fd with
// SECCOMP_FILTER_FLAG_NEW_LISTENER, else -1.
Result<int> SeccompSetFilter(unsigned flags, const struct sock_fprog& prog);
// sendmsg(2) of `iov` on a socket, with `pass` as SCM_RIGHTS where it is a descriptor;
// MSG_NOSIGNAL, retried on EINTR. Allocates nothing but its error, which names `what`.
Status SendWithFd(int sock, struct iovec* iov, size_t iovlen, int pass, std::string_view what);
// recvmsg(2) of one message into `buf` (`flags`: MSG_TRUNC, MSG_DONTWAIT...), retried on
// EINTR: its length, and into `fd` the descriptor that came with it as SCM_RIGHTS
// (close-on-exec); `cut` says whether the kernel cut the control data (MSG_CTRUNC: more
// descriptors came, and it closed the rest).
Result<size_t> RecvWithFd(int sock, void* buf, size_t len, int flags, UniqueFd& fd,
                          bool* cut = nullptr);
// A SOCK_STREAM connection to the unix socket at `path`, `what` naming it in errors.
Result<UniqueFd> ConnectUnix(const std::string& path, const std::string& what);
// bpf(2): its result (a descriptor, or 0), or the Error naming `subject`.
Result<long> Bpf(int cmd, union bpf_attr& attr, const std::string& subject);
// After forking a child that reports a failed execve as an int on a CLOEXEC pipe: waits
// for EOF (the exec succeeded: nothing) or the int the child wrote.
std::optional<int> ReadExecError(int fd);
// After spawning a helper program whose output goes to the pipe `fd` (the caller's write
// end closed): reads it to EOF into `out`, then reaps `pid` and returns its wait status.
int ReadAllAndReap(int fd, pid_t pid, std::string& out);
// Runs the helper program `path` with `args` and no environment, stdin and stdout
// /dev/null, `fd3` (if >= 0) as its fd 3, and waits for it. Its failure names `path` and
// `subject`, with the last line it wrote on stderr.
Status RunProgram(const std::string& path, const std::vector<std::string>& args,
                  const std::string& subject, int fd3 = -1);

// Marks every fd from `first` up CLOEXEC (close_range with CLOSE_RANGE_CLOEXEC).
Status CloseRangeCloexec(unsigned first);
// Whether the other end of the socket `fd` is closed (or the poll failed): a parent that
// holds that end is gone.
bool PeerClosed(int fd);
// Makes this process the subreaper of what its descendants leave (PR_SET_CHILD_SUBREAPER):
// a process a stage child forks becomes brig's child when that one exits.
Status BecomeSubreaper();
// Drops this process's supplementary groups, if it has any, before it clones what enters a
// sandbox or container: host root's groups (gid 0 among them) would otherwise follow that
// process, and for good where its user namespace denies setgroups(2). Where setgroups is
// itself denied to brig, it has none to drop.
Status DropSupplementaryGroups();
// Closes every fd from `first` up but those in `keep` (close_range over the gaps).
Status CloseAllExcept(std::vector<int> keep, unsigned first = 0);

}  // namespace brig::sys
