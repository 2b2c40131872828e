#include "sys/id_map.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::sys {
namespace {

Status WriteProcFile(pid_t pid, const char* name, const std::string& data) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  if (write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return SysError("write", path);
  }
  return {};
}

// Runs set-uid helper `path` with `args` and no environment; its standard output and
// error are kept for the error it fails with.
Status RunHelper(const char* path, const std::vector<std::string>& args) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) < 0) return SysError("pipe2", path);
  UniqueFd read_end(out[0]), write_end(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  pid_t pid = -1;
  int err = posix_spawn(&pid, path, &fa, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  write_end.Reset();
  if (err != 0) {
    errno = err;
    return SysError("posix_spawn", path);
  }
  std::string said;
  char buf[512];
  for (ssize_t n; (n = read(read_end.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    said.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return SysError("waitpid", path);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  said = said.substr(0, said.find('\n'));
  return Fail(path, args.empty() ? "" : args.front(),
              said.empty() ? "failed (exit status " + std::to_string(status) + ")" : said);
}

// The arguments newuidmap and newgidmap take: PID, then INSIDE HOST COUNT per mapping.
std::vector<std::string> HelperArgs(pid_t pid, const std::vector<IdMapping>& maps) {
  std::vector<std::string> args = {std::to_string(pid)};
  for (const IdMapping& m : maps) {
    args.insert(args.end(),
                {std::to_string(m.inside), std::to_string(m.host), std::to_string(m.count)});
  }
  return args;
}

// The helpers can only map another process's namespace, from outside it: a child makes the
// namespace and holds it while they map it, brig joins it (its owner's uid holds every
// capability there), and the child, done, goes when its pipe closes, or with brig.
Status EnterMappedByHelpers(const IdMaps& maps) {
  int ready[2], hold[2];
  if (pipe2(ready, O_CLOEXEC) < 0) return SysError("pipe2", "brig's user namespace");
  UniqueFd ready_read(ready[0]), ready_write(ready[1]);
  if (pipe2(hold, O_CLOEXEC) < 0) return SysError("pipe2", "brig's user namespace");
  UniqueFd hold_read(hold[0]), hold_write(hold[1]);
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "brig's user namespace");
  if (pid == 0) {
    close(hold_write.get());
    int result = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
    if (write(ready_write.get(), &result, sizeof result) != sizeof result) _exit(1);
    char c;
    while (read(hold_read.get(), &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  ready_write.Reset();
  hold_read.Reset();
  auto joined = [&]() -> Status {
    int result = 0;
    ssize_t n;
    while ((n = read(ready_read.get(), &result, sizeof result)) < 0 && errno == EINTR) {
    }
    if (n != sizeof result) return Fail("fork", "brig's user namespace", "the child ended");
    if (result != 0) {
      errno = result;
      return SysError("unshare", "a user namespace of brig's own");
    }
    BRIG_TRY(RunHelper(kNewUidMap, HelperArgs(pid, maps.uids)));
    BRIG_TRY(RunHelper(kNewGidMap, HelperArgs(pid, maps.gids)));
    std::string ns = "/proc/" + std::to_string(pid) + "/ns/user";
    UniqueFd fd(open(ns.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return SysError("open", ns);
    if (setns(fd.get(), CLONE_NEWUSER) < 0) return SysError("setns", ns);
    return {};
  }();
  hold_write.Reset();
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!joined) return joined;
  if (unshare(CLONE_NEWNS) < 0) return SysError("unshare", "a mount namespace of brig's own");
  return DropSupplementaryGroups();
}

}  // namespace

std::string RenderIdMap(const std::vector<IdMapping>& maps) {
  std::string out;
  for (const IdMapping& m : maps) {
    out += std::to_string(m.inside) + " " + std::to_string(m.host) + " " + std::to_string(m.count) +
           "\n";
  }
  return out;
}

Status WriteIdMaps(pid_t pid, const IdMaps& maps) {
  BRIG_TRY(WriteProcFile(pid, "uid_map", RenderIdMap(maps.uids)));
  if (maps.deny_setgroups) BRIG_TRY(WriteProcFile(pid, "setgroups", "deny"));
  return WriteProcFile(pid, "gid_map", RenderIdMap(maps.gids));
}

Status EnterOwnUserNamespace(const std::optional<IdMaps>& subordinate) {
  if (subordinate) return EnterMappedByHelpers(*subordinate);
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
    return SysError("unshare", "a user and mount namespace of brig's own");
  }
  return WriteIdMaps(getpid(), {.uids = {{.inside = uid, .host = uid}},
                                .gids = {{.inside = gid, .host = gid}},
                                .deny_setgroups = true});
}

}  // namespace brig::sys
