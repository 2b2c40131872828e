// Wire format of the parent/child protocol and the parent's order check.
#include "container/sync.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "brig/exit.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

struct Header {
  uint32_t type;
  int32_t err;
  uint32_t len;
};

// How long a process whose end of the socket is closed may take to finish exiting.
constexpr int kExitingMs = 5000;

// A kLog payload's level byte and time.
constexpr size_t kLogHeader = 1 + sizeof(struct timespec);

bool InitGone(const Error& e) {
  return e.err == EPIPE || e.err == ECONNRESET || e.err == ESRCH ||
         (e.op == "sync" && e.detail == kPeerClosed);
}

}  // namespace

std::string_view MsgName(Msg m) {
  switch (m) {
    case Msg::kNeedIdMap: return "NeedIdMap";
    case Msg::kIdMapDone: return "IdMapDone";
    case Msg::kReady: return "Ready";
    case Msg::kStart: return "Start";
    case Msg::kWorkloadExit: return "WorkloadExit";
    case Msg::kError: return "Error";
    case Msg::kLog: return "Log";
    case Msg::kPid: return "Pid";
    case Msg::kCreated: return "Created";
    case Msg::kSeccompFd:
      return "SeccompFd";
    case Msg::kSeccompDone:
      return "SeccompDone";
  }
  return "unknown";
}

namespace {

// One packet, and `pass` as SCM_RIGHTS where it is a descriptor.
Status Send(int fd, Msg type, int32_t err, std::string_view payload, int pass) {
  if (payload.size() > kMaxPayload) payload = payload.substr(0, kMaxPayload);
  Header h{static_cast<uint32_t>(type), err, static_cast<uint32_t>(payload.size())};
  struct iovec iov[2] = {{&h, sizeof h}, {const_cast<char*>(payload.data()), payload.size()}};
  return sys::SendWithFd(fd, iov, payload.empty() ? 1 : 2, pass, MsgName(type));
}

}  // namespace

Status SendMessage(int fd, Msg type, int32_t err, std::string_view payload) {
  return Send(fd, type, err, payload, -1);
}

Status HandOverListener(int fd, int listener) {
  Status s = Send(fd, Msg::kSeccompFd, 0, {}, listener);
  if (s) {
    if (auto done = Expect(fd, Msg::kSeccompDone, kSetupStepTimeoutMs); !done) {
      s = std::move(done).error();
    }
  }
  close(listener);
  return s;
}

Result<Message> Expect(int fd, Msg want, int timeout_ms) {
  Message m = BRIG_TRY(RecvMessage(fd, timeout_ms));
  if (m.type != want) return Fail("sync", std::string(MsgName(m.type)), "unexpected");
  return m;
}

void SendErrorAndExit(int fd, const Error& e) {
  (void)SendError(fd, e);
  _exit(ExitCode(e.kind));
}

Result<Message> RecvMessage(int fd, int timeout_ms) {
  struct pollfd p = {fd, POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return SysError("sync poll");
  if (rc == 0) return Fail("sync", "", "timed out waiting for the other end");
  char buf[sizeof(Header) + kMaxPayload];
  // A descriptor that came with the packet is closed with `passed` unless the packet is
  // kSeccompFd.
  sys::UniqueFd passed;
  bool cut = false;
  auto got = sys::RecvWithFd(fd, buf, sizeof buf, MSG_TRUNC, passed, &cut);
  if (!got) return std::move(got).error().Wrap("sync");
  auto n = static_cast<ssize_t>(*got);
  if (n == 0) return Fail("sync", "", std::string(kPeerClosed));
  if (static_cast<size_t>(n) < sizeof(Header) || static_cast<size_t>(n) > sizeof buf) {
    return Fail("sync", "", "malformed packet of " + std::to_string(n) + " bytes");
  }
  Header h;
  memcpy(&h, buf, sizeof h);
  if (h.len != static_cast<size_t>(n) - sizeof h || h.type < 1 ||
      h.type > static_cast<uint32_t>(kLastMsg)) {
    return Fail("sync", "", "malformed packet");
  }
  Message m;
  m.type = static_cast<Msg>(h.type);
  m.err = h.err;
  m.payload.assign(buf + sizeof h, h.len);
  if ((m.type == Msg::kSeccompFd) != passed.valid() || cut) {
    return Fail("sync", std::string(MsgName(m.type)), "malformed packet: descriptors");
  }
  m.fd = std::move(passed);
  return m;
}

Result<pid_t> ReportedPid(const Message& m) {
  auto pid = static_cast<pid_t>(std::strtol(m.payload.c_str(), nullptr, 10));
  if (pid <= 0) return Fail("sync", m.payload, "not a pid", ErrorKind::kInternal);
  return pid;
}

Status SendWorkloadExit(int fd, int status, uint32_t left_killed) {
  return SendMessage(fd, Msg::kWorkloadExit, status,
                     std::string_view(reinterpret_cast<const char*>(&left_killed),
                                      sizeof left_killed));
}

uint32_t LeftKilled(const Message& m) {
  uint32_t n = 0;
  if (m.payload.size() == sizeof n) memcpy(&n, m.payload.data(), sizeof n);
  return n;
}

Status SendError(int fd, const Error& e) {
  // No allocation: init may be anywhere in its setup when it fails.
  char buf[kMaxPayload];
  size_t off = 0;
  auto put = [&](std::string_view s) {
    if (off >= sizeof buf) return;  // full: a long op must not push the rest past the end
    size_t n = std::min(s.size(), sizeof buf - off - 1);
    memcpy(buf + off, s.data(), n);
    off += n;
    buf[off++] = '\0';
  };
  char kind = static_cast<char>('0' + static_cast<int>(e.kind));
  put(std::string_view(&kind, 1));
  put(e.op);
  put(e.subject);
  if (off < sizeof buf) put(e.detail);
  if (off < sizeof buf) put(e.context);
  return SendMessage(fd, Msg::kError, e.err, std::string_view(buf, off));
}

Status SendLog(int fd, log::Level level, std::string_view text) {
  char buf[kMaxPayload];
  buf[0] = static_cast<char>(level);
  // The supervisor reads init's lines only between its own steps: the time is init's.
  struct timespec now = log::Now();
  memcpy(buf + 1, &now, sizeof now);
  size_t n = std::min(text.size(), sizeof buf - kLogHeader);
  memcpy(buf + kLogHeader, text.data(), n);
  return SendMessage(fd, Msg::kLog, 0, std::string_view(buf, kLogHeader + n));
}

namespace {

// The sync socket while init's log lines go to the parent, else -1.
int g_log_fd = -1;

// Init's log sink. The threshold is the parent's (init is its clone), so without --debug
// no debug line is even built.
void ForwardLog(log::Level level, std::string_view text) {
  if (g_log_fd >= 0) (void)SendLog(g_log_fd, level, text);
}

}  // namespace

void ForwardLogs(int fd) {
  g_log_fd = fd;
  log::ForwardTo(ForwardLog);
}

void StopForwardingLogs() {
  g_log_fd = -1;
  log::ForwardTo(nullptr);
}

void LogFromInit(const Message& m) {
  if (m.payload.size() < kLogHeader) return;
  // Init's word for its level is taken only as far as it names one.
  auto level = static_cast<log::Level>(
      std::min(static_cast<uint8_t>(m.payload[0]), static_cast<uint8_t>(log::Level::kError)));
  struct timespec when;
  memcpy(&when, m.payload.data() + 1, sizeof when);
  if (when.tv_nsec < 0 || when.tv_nsec >= 1000000000) when = log::Now();
  log::Line line;
  line.Add("init: ");
  line.Add(std::string_view(m.payload).substr(kLogHeader));
  log::WriteAt(level, line.view(), when);
}

Error DecodeError(const Message& m) {
  Error e;
  e.err = m.err;
  std::string_view rest = m.payload;
  std::string_view parts[5];
  for (auto& part : parts) {
    size_t z = rest.find('\0');
    part = rest.substr(0, z);
    rest = z == std::string_view::npos ? std::string_view() : rest.substr(z + 1);
  }
  int kind = parts[0].empty() ? -1 : parts[0][0] - '0';
  e.kind = kind >= 0 && kind <= static_cast<int>(ErrorKind::kInternal)
               ? static_cast<ErrorKind>(kind)
               : ErrorKind::kInternal;
  e.op = parts[1].empty() ? "brig init" : std::string(parts[1]);
  e.subject = parts[2];
  e.detail = parts[3];
  e.context = parts[4];
  return e;
}

std::optional<Error> WhyInitIsGone(int sync_fd, int pidfd, const Error& lost) {
  if (!InitGone(lost)) return std::nullopt;
  // Init sends its kError before it exits, so it is queued by now; nothing is waited for.
  // The steps it logged before it are queued ahead of it.
  for (;;) {
    auto m = RecvMessage(sync_fd, 0);
    if (!m) break;
    if (m->type == Msg::kLog) LogFromInit(*m);
    if (m->type == Msg::kError) return DecodeError(*m);
  }
  if (pidfd < 0) return std::nullopt;
  struct pollfd p = {pidfd, POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, kExitingMs);
  } while (rc < 0 && errno == EINTR);
  siginfo_t si = {};
  if (rc != 1 || !sys::WaitidPidfd(pidfd, si, WEXITED | WNOWAIT | WNOHANG) || si.si_pid == 0) {
    return std::nullopt;
  }
  if (si.si_code == CLD_EXITED) {
    return Fail("brig init", "",
                "exited with status " + std::to_string(si.si_status) + " before it said why");
  }
  return Fail("brig init", "",
              "killed by signal " + std::to_string(si.si_status) + " (" +
                  strsignal(si.si_status) + ") before it said why");
}

Status SyncSequence::Accept(Msg m) {
  State next = state_;
  bool ok = false;
  switch (m) {
    case Msg::kNeedIdMap:
      ok = flow_ != Flow::kExec && state_ == State::kStarted;
      next = State::kMapping;
      break;
    case Msg::kPid:
      // An exec's child has nothing more to say once the process exists.
      ok = flow_ == Flow::kExec ? state_ == State::kStarted
                                : flow_ == Flow::kContainer && state_ == State::kMapping && !pid_;
      pid_ = true;
      next = flow_ == Flow::kExec ? State::kDone : state_;
      break;
    case Msg::kReady:
      ok = flow_ != Flow::kExec && state_ == State::kMapping;
      next = State::kReady;
      break;
    case Msg::kCreated:
      ok = flow_ == Flow::kContainer && state_ == State::kReady;
      next = State::kDone;
      break;
    case Msg::kWorkloadExit:
      ok = flow_ == Flow::kSandbox && state_ == State::kReady;
      next = State::kDone;
      break;
    case Msg::kError:
      // An exec's process fails after its child said Pid, and says so itself.
      ok = state_ != State::kFailed && (state_ != State::kDone || flow_ == Flow::kExec);
      next = State::kFailed;
      break;
    case Msg::kLog:
      ok = state_ == State::kStarted || state_ == State::kMapping ||
           (flow_ == Flow::kContainer && state_ == State::kReady);
      break;
    case Msg::kSeccompFd:
      ok = !listener_ && ((flow_ == Flow::kContainer && state_ == State::kReady) ||
                          (flow_ == Flow::kExec && state_ == State::kDone));
      listener_ = true;
      break;
    default:
      ok = false;
  }
  if (!ok) {
    state_ = State::kFailed;
    return Fail("sync", std::string(MsgName(m)), "message out of order", ErrorKind::kInternal);
  }
  state_ = next;
  return {};
}

}  // namespace brig::container
