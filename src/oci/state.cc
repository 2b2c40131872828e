// The container directories under --root and the record in each (oci/state.h): made under
// a temporary name and renamed into place already locked, opened by waiting on that lock;
// and a container's status read from the host, never from the record alone.
#include "oci/state.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <sstream>

#include "oci/spec.h"
#include "sys/child.h"
#include "sys/syscalls.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::oci {
namespace {

constexpr size_t kMaxId = 1024;
constexpr char kRecord[] = "state.pb";
// The prefix of the directory Create makes before renaming it to the id. '~' is in no id,
// so no verb ever names it and ListIds skips it.
constexpr char kTempPrefix[] = "~new.";

bool IdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '+' || c == '-' || c == '.';
}

// Makes `root` and its missing parents 0711, as runc makes its --root: others may pass
// through to a name they know, never list the containers.
Status MakeRoot(const std::string& root) {
  for (size_t slash = root.find('/', 1);; slash = root.find('/', slash + 1)) {
    std::string dir = root.substr(0, slash);
    if (mkdir(dir.c_str(), 0711) < 0 && errno != EEXIST) return SysError("mkdir", dir);
    if (slash == std::string::npos) return {};
  }
}

// Who holds the flock on the file `st` names, from /proc/locks ("1: FLOCK ADVISORY WRITE
// PID MAJ:MIN:INODE ..."; a waiter's line has "->" after the number): "pid N (COMMAND)".
std::string LockHolder(const struct stat& st) {
  auto locks = util::ReadFile("/proc/locks");
  if (!locks) return "another process";
  char want[64];
  snprintf(want, sizeof want, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
           static_cast<unsigned long long>(st.st_ino));
  for (std::string_view line : util::Split(*locks, '\n')) {
    std::istringstream words{std::string(line)};
    std::string n, kind, advisory, mode, pid, file;
    if (!(words >> n >> kind >> advisory >> mode >> pid >> file)) continue;
    if (kind != "FLOCK" || file != want) continue;
    auto cmdline = util::ReadFile("/proc/" + pid + "/cmdline");
    std::string cmd = cmdline ? cmdline->substr(0, cmdline->find('\0')) : "";
    return "pid " + pid + (cmd.empty() ? "" : " (" + cmd + ")");
  }
  return "another process";
}

void Interrupt(int) {}

// Waits at most kLockWait for the lock, blocked in flock(2) (where /proc/locks shows the
// waiter) and woken every tick by SIGALRM, without SA_RESTART, to look at the clock: a verb
// never waits for ever on another that hangs. A tick rather than one alarm at the
// deadline: one that fired just before flock blocked would be lost. Both the handler and
// the timer are gone again before Lock returns; no verb has a timer when it clones.
Status Lock(int fd, const std::string& path) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return {};
  if (errno != EWOULDBLOCK && errno != EINTR) return SysError("flock", path);
  struct sigaction tick = {}, old_action;
  tick.sa_handler = Interrupt;
  sigemptyset(&tick.sa_mask);
  sigset_t alarm_only, old_mask;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGALRM;
  timer_t timer;
  if (sigaction(SIGALRM, &tick, &old_action) < 0) return SysError("sigaction", "SIGALRM");
  sigprocmask(SIG_UNBLOCK, &alarm_only, &old_mask);
  Status held;
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer) < 0) {
    held = SysError("timer_create", path);
  } else {
    struct itimerspec every = {{0, 100'000'000}, {0, 100'000'000}};
    auto deadline = std::chrono::steady_clock::now() + kLockWait;
    if (timer_settime(timer, 0, &every, nullptr) < 0) held = SysError("timer_settime", path);
    while (held && flock(fd, LOCK_EX) < 0) {
      if (errno != EINTR) {
        held = SysError("flock", path);
      } else if (std::chrono::steady_clock::now() >= deadline) {
        struct stat st;
        std::string holder = fstat(fd, &st) == 0 ? LockHolder(st) : "another process";
        std::string waited = std::to_string(kLockWait.count()) + " s";
        held = Fail(path, "", "locked by " + holder + " for over " + waited);
      }
    }
    timer_delete(timer);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGALRM, &old_action, nullptr);
  return held;
}

Error Missing(const std::string& id) {
  return BadInput("container '" + id + "' does not exist", "", "");
}

// Paths brig writes into the record come from the host and may hold any byte; a protobuf
// string must be UTF-8 (a record holding other bytes would not parse again), and so must
// the state JSON that names the bundle.
Status CheckUtf8(const Container& c) {
  auto check = [](const std::string& what, const std::string& v) -> Status {
    if (util::IsUtf8(v)) return {};
    return BadInput(what, v, "not UTF-8, which the container's record cannot hold");
  };
  BRIG_TRY(check("bundle", c.bundle()));
  BRIG_TRY(check("rootfs", c.rootfs()));
  for (const auto& p : c.cgroups()) BRIG_TRY(check("cgroup", p));
  for (const auto& p : c.joined_cgroups()) BRIG_TRY(check("cgroup", p));
  return {};
}

// protobuf pretty-prints with one space a level; runc (json.MarshalIndent) with two. A
// line's leading spaces are all indentation: no string holds a raw newline.
std::string TwoSpaceIndent(const std::string& json) {
  std::string out;
  bool line_start = true;
  for (char c : json) {
    if (line_start && c == ' ') {
      out += "  ";
      continue;
    }
    line_start = c == '\n';
    out += c;
  }
  return out;
}

}  // namespace

Status CheckId(std::string_view id) {
  if (id.empty()) return BadInput("container id", "", "is empty");
  std::string s(id);
  if (id.size() > kMaxId) return BadInput("container id", s, "longer than 1024 bytes");
  if (id == "." || id == "..") return BadInput("container id", s, "not a name");
  if (!std::all_of(id.begin(), id.end(), IdChar)) {
    return BadInput("container id", s, "only letters, digits and _ + - . are allowed");
  }
  return {};
}

std::string_view StatusName(ContainerStatus s) {
  switch (s) {
    case ContainerStatus::kCreating:
      return "creating";
    case ContainerStatus::kCreated:
      return "created";
    case ContainerStatus::kRunning:
      return "running";
    case ContainerStatus::kPaused:
      return "paused";
    case ContainerStatus::kStopped:
      return "stopped";
  }
  return "unknown";
}

Result<ContainerDir> ContainerDir::Create(const std::string& root, const std::string& id) {
  BRIG_TRY(CheckId(id));
  BRIG_TRY(MakeRoot(root));
  // Made under a name no verb looks for, locked, then renamed to the id: a verb that finds
  // the directory finds it locked until this one is done with it, and RENAME_NOREPLACE is
  // the one atomic test that the id is free. A create killed before the rename leaves an
  // empty "~new.*" directory that no verb sees.
  const std::string pattern = root + "/" + kTempPrefix + "XXXXXX";
  std::string temp = pattern;
  if (!mkdtemp(temp.data())) return SysError("mkdir", pattern);
  ContainerDir d;
  d.fd_.Reset(open(temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Status made = d.fd_ ? Lock(d.fd_.get(), temp) : Status(SysError("open", temp));
  if (made && fchmod(d.fd_.get(), 0711) < 0) made = SysError("chmod", temp);
  std::string path = root + "/" + id;
  if (made && renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) < 0) {
    made = errno == EEXIST ? BadInput("container '" + id + "' already exists", "", "")
                           : SysError("rename", temp + " to " + path);
  }
  if (!made) {
    (void)rmdir(temp.c_str());
    return std::move(made).error();
  }
  d.path_ = std::move(path);
  d.made_ = true;
  return d;
}

Result<ContainerDir> ContainerDir::Open(const std::string& root, const std::string& id) {
  BRIG_TRY(CheckId(id));
  ContainerDir d;
  d.path_ = root + "/" + id;
  // The lock may be granted after `delete` removed the directory, or after another
  // `create` made a new one of the same id: only a directory still at its path counts.
  for (;;) {
    d.fd_.Reset(open(d.path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!d.fd_) return errno == ENOENT ? Missing(id) : SysError("open", d.path_);
    BRIG_TRY(Lock(d.fd_.get(), d.path_));
    struct stat held, named;
    if (fstat(d.fd_.get(), &held) < 0) return SysError("stat", d.path_);
    if (stat(d.path_.c_str(), &named) < 0) {
      return errno == ENOENT ? Missing(id) : SysError("stat", d.path_);
    }
    if (held.st_nlink > 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      return d;
    }
  }
}

Result<Container> ContainerDir::Peek(const std::string& root, const std::string& id) {
  BRIG_TRY(CheckId(id));
  ContainerDir d;
  d.path_ = root + "/" + id;
  d.fd_.Reset(open(d.path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.fd_) return errno == ENOENT ? Missing(id) : SysError("open", d.path_);
  return d.Read();
}

Result<Container> ContainerDir::Read() const {
  std::string path = Path(kRecord);
  sys::UniqueFd fd(openat(fd_.get(), kRecord, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysError("open", path);
  auto bytes = util::ReadFd(fd.get(), 0);
  if (!bytes) return SysError("read", path);
  Container c;
  if (!c.ParseFromString(*bytes)) return Fail("read", path, "not a container record");
  return c;
}

Status ContainerDir::Write(const Container& c) const {
  BRIG_TRY(CheckUtf8(c));
  std::string bytes;
  if (!c.SerializeToString(&bytes)) {
    return Fail("write", Path(kRecord), "protobuf encoding failed", ErrorKind::kInternal);
  }
  return util::ReplaceFile(Path(kRecord), bytes, 0600);
}

Status ContainerDir::Remove() {
  made_ = false;
  if (!fd_) return {};
  // The lock is held until the directory is gone: a verb waiting on it then finds no
  // directory at the path (Open).
  BRIG_TRY(util::RemoveTreeAt(AT_FDCWD, path_, path_));
  fd_.Reset();
  path_.clear();
  return {};
}

Result<std::vector<std::string>> ListIds(const std::string& root) {
  sys::UniqueFd fd(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return SysError("open", root);
  }
  std::vector<std::string> ids = util::ListDir(fd.get());
  std::erase_if(ids, [](const std::string& n) { return !CheckId(n); });
  return ids;
}

std::optional<sys::UniqueFd> OpenProcess(const Container& c) {
  return sys::OpenProcessStartedAt(c.pid(), c.start_time());
}

ContainerStatus StatusOf(const Container& c, bool frozen) {
  if (c.pid() == 0) return ContainerStatus::kCreating;
  auto pidfd = OpenProcess(c);
  if (!pidfd) return ContainerStatus::kStopped;
  // A process that exited and is not yet reaped (by the shim, its parent) is stopped. Its
  // pidfd is readable then, and only once every thread of it has exited: /proc/PID/stat's
  // 'Z' would also show a live process whose first thread alone has exited.
  struct pollfd p = {.fd = pidfd->get(), .events = POLLIN, .revents = 0};
  if (poll(&p, 1, 0) > 0) return ContainerStatus::kStopped;
  if (!c.started()) return ContainerStatus::kCreated;
  return frozen ? ContainerStatus::kPaused : ContainerStatus::kRunning;
}

// Pretty-printed as runc prints it, with a final newline.
State StateOf(const Container& c, ContainerStatus status) {
  State s;
  s.set_oci_version(c.config().oci_version().empty() ? kSpecVersion : c.config().oci_version());
  s.set_id(c.id());
  s.set_status(std::string(StatusName(status)));
  s.set_pid(status == ContainerStatus::kStopped ? 0 : c.pid());
  s.set_bundle(c.bundle());
  s.set_rootfs(c.rootfs());
  s.set_created(c.created());
  *s.mutable_annotations() = c.config().annotations();
  return s;
}

std::string StateJson(const Container& c, ContainerStatus status) {
  State s = StateOf(c, status);
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  std::string json;
  // Strings, an int and a map of strings: nothing to fail on. The record's strings were
  // checked UTF-8 when it was written (Write), or came from JSON.
  (void)google::protobuf::util::MessageToJsonString(s, &json, opts);
  return TwoSpaceIndent(json);
}

}  // namespace brig::oci
