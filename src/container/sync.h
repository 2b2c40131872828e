// The parent/child protocol over a SOCK_SEQPACKET socketpair (design.md, Process model).
// Every message is one packet: a fixed header and at most kMaxPayload bytes. Every parent
// reads and writes it through its Channel (channel.h); the children use the functions here.
//
//   supervisor (session.cc)                        brig init (init.cc), pid 1 inside
//   socketpair(SEQPACKET|CLOEXEC), compile seccomp, block signals, open the v1 groups'
//   tasks files
//   clone3(CLONE_NEW*|CLONE_PIDFD|                  PDEATHSIG; close the parent end;
//          CLONE_INTO_CGROUP) ────────────────────▶ "0" to each tasks file (into its v1
//   as the sandbox's host uid (euid only:           groups: cgroup::JoinV1)
//   its namespaces' owner), then root again
//                          ◀── kLog {payload = level, time, text}  (any number, until kReady;
//                                  only with --debug: brig init's setup steps)
//                          ◀── kNeedIdMap
//   write uid_map, gid_map ─── kIdMapDone ──▶
//   (and eth0)                                      setgroups/setresgid/setresuid, lo up,
//                                                   eth0, mounts, pivot_root, hostname
//                                                   a second cgroup namespace, caps
//                                                   dropped, no_new_privs, resolve CMD
//                          ◀── kReady
//   (run: at once)         ─── kStart ──▶
//                                                   fork the workload: setsid, rlimits,
//                                                   seccomp LAST, execve; init reaps and
//                                                   forwards signals
//                          ◀── kWorkloadExit {err = wait status, payload = how many
//                                  processes the workload left that init killed (uint32)}
//                                                   init exits (--wait-all: when no
//                                                   process is left)
//   any failure:           ◀── kError {err = errno, payload = kind, step, subject}
//                                                   then init _exits
//   a send or receive that meets init gone (EPIPE, ECONNRESET, EOF) reports what init
//   queued before it went (its kError), else how it ended: WhyInitIsGone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "brig/result.h"
#include "log/log.h"
#include "sys/fd.h"

namespace brig::container {

enum class Msg : uint32_t {
  kNeedIdMap = 1,
  kIdMapDone = 2,
  kReady = 3,
  kStart = 4,
  kWorkloadExit = 5,
  kError = 6,
  kLog = 7,  // init to parent, while it sets up (SyncSequence says how long)
  // OCI containers and exec (oci/launch.cc and container/join.h draw their order):
  kPid = 8,      // to the parent: the process's host pid, from a stage child
  kCreated = 9,  // init to parent: set up, waiting for `start`
  // An OCI process whose filter notifies (container/process.h): its listener, as
  // SCM_RIGHTS, the moment the filter is loaded; the parent hands it to the container's
  // seccomp agent and answers kSeccompDone, after which the process closes its copy.
  kSeccompFd = 10,
  kSeccompDone = 11,
};
// The highest type on the wire: a packet with another type is malformed.
inline constexpr Msg kLastMsg = Msg::kSeccompDone;

std::string_view MsgName(Msg m);

inline constexpr size_t kMaxPayload = 4096;
// How long a parent waits for each setup step of init before giving up.
inline constexpr int kSetupStepTimeoutMs = 30000;
inline constexpr std::string_view kPeerClosed = "peer closed";

struct Message {
  Msg type{};
  int32_t err = 0;
  std::string payload;
  sys::UniqueFd fd;  // kSeccompFd's listener; a packet of another type carries none
};

// Both are async-signal-safe on the sending side (no allocation) so init may use them.
Status SendMessage(int fd, Msg type, int32_t err = 0, std::string_view payload = {});
// Waits at most timeout_ms (-1: forever). EOF is an error whose op is "sync" and detail
// kPeerClosed.
Result<Message> RecvMessage(int fd, int timeout_ms);
// Init's side: the parent's next message, which must be `want`, within timeout_ms.
Result<Message> Expect(int fd, Msg want, int timeout_ms);
// Init's side: its failure to the parent (SendError), then _exit with the failure's code.
[[noreturn]] void SendErrorAndExit(int fd, const Error& e);
// The process's side of kSeccompFd: `listener` to the parent, its kSeccompDone awaited
// (within a setup step's time), then `listener` closed. Nothing here may wait on a
// notified syscall before the parent has the listener: sendmsg(2), its one call until then,
// is never notified (security::CompileSeccomp refuses it).
Status HandOverListener(int fd, int listener);

// Parent side. `lost` is how a send or receive on the sync socket failed. If init is gone
// (EPIPE, ECONNRESET, EOF, or ESRCH from a write naming its pid), the broken pipe it left
// is not the cause: returns init's own kError if one is queued on the socket, else how init
// ended (its wait status, read through `pidfd`, if one is given, without reaping it).
// Otherwise nullopt:
// `lost` is the error to report.
std::optional<Error> WhyInitIsGone(int sync_fd, int pidfd, const Error& lost);

// kPid: the host pid a stage child reports of the process it forked; an error if the
// payload is not one.
Result<pid_t> ReportedPid(const Message& m);

// kWorkloadExit: the workload's wait status and how many processes it left running that
// init then killed (0 with --wait-all). No allocation: init sends it under its filter.
Status SendWorkloadExit(int fd, int status, uint32_t left_killed);
uint32_t LeftKilled(const Message& m);  // 0 if the payload does not hold the count

// Error <-> kError packet. The payload is "<kind>\0<op>\0<subject>\0<detail>\0<context>".
Status SendError(int fd, const Error& e);
Error DecodeError(const Message& m);

// A log line of init's: the payload is the level's byte, the time init made it (a struct
// timespec, CLOCK_REALTIME), then the text. No allocation, so init may log from anywhere in
// its setup. Init sends none after kReady (SyncSequence refuses them then): what init does
// under its own seccomp filter is as it was.
Status SendLog(int fd, log::Level level, std::string_view text);
// Parent side: writes a kLog message's line to brig's log, marked as init's.
void LogFromInit(const Message& m);
// Init's side: brig's log lines (log::ForwardTo) go to the parent over `fd` as kLog, until
// StopForwardingLogs.
void ForwardLogs(int fd);
void StopForwardingLogs();

// Who speaks to the parent, each front end's child in its own order:
//   kSandbox   brig run's init (above): NeedIdMap, Ready, WorkloadExit;
//   kContainer an OCI container's init (oci/launch.cc): NeedIdMap, Pid (once, from a stage
//              child that made a pid namespace, before Ready), Ready, Created;
//   kExec      an exec's stage child and process (container/join.h): Pid, then nothing
//              (EOF at execve).
// Logs come only while the child sets up: before Ready (kSandbox), before Created
// (kContainer), before Pid (kExec). Error comes at any time before the end. SeccompFd
// comes at most once, from an OCI process whose filter notifies: after Ready (kContainer),
// after Pid (kExec).
enum class Flow { kSandbox, kContainer, kExec };

// The order in which the parent accepts messages from its child (youki's InitPhase check).
class SyncSequence {
 public:
  explicit SyncSequence(Flow flow = Flow::kSandbox) : flow_(flow) {}
  Status Accept(Msg m);

 private:
  enum class State { kStarted, kMapping, kReady, kDone, kFailed };
  Flow flow_;
  State state_ = State::kStarted;
  bool pid_ = false;
  bool listener_ = false;
};

}  // namespace brig::container
