// The parent's end of the sync socket (sync.h), one for every front end: brig run's
// Session, `brig create` (oci/launch.cc) and both execs' Join (join.h). Every wait is
// bounded, every message is checked in its flow's order (SyncSequence), the child's log
// lines go to brig's log, its kError is returned as the error, and a socket lost to a child
// that is gone reports what that child said, or how it ended (WhyInitIsGone).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "brig/result.h"
#include "container/sync.h"
#include "sys/fd.h"

namespace brig::container {

class Channel {
 public:
  Channel() = default;
  // A new sync socket for a child of `flow`: brig's end, and the child's end to hand it.
  // `who` names the child in errors ("brig init", "container init", "exec").
  static Result<std::pair<Channel, sys::UniqueFd>> Open(Flow flow, std::string who);

  int fd() const { return fd_.get(); }
  explicit operator bool() const { return fd_.valid(); }
  // The process that holds the other end (a pidfd, borrowed): how it ended explains a lost
  // socket. A front end whose child hands over to another process tracks that one next.
  void Track(int pidfd) { pidfd_ = pidfd; }
  // Where the listener of an OCI process whose filter notifies goes (kSeccompFd): Next and
  // AwaitClose call `hand` with it, answer kSeccompDone and go on waiting. A channel with
  // no such hand refuses kSeccompFd as out of order.
  void OnListener(std::function<Status(sys::UniqueFd)> hand) { hand_ = std::move(hand); }

  // The child's next message but its log lines, within timeout_ms. Its kError, a message
  // out of its flow's order, a timeout and a lost socket are errors.
  Result<Message> Next(int timeout_ms = kSetupStepTimeoutMs);
  // A message to the child; one it can no longer read is explained as Explain does.
  Status Send(Msg type, std::string_view payload = {});
  // The child's end closed within timeout_ms, without a word: it reached execve, or let go
  // of brig. Anything it said instead is the error.
  Status AwaitClose(int timeout_ms = kSetupStepTimeoutMs);
  // A step of brig's that failed with `s` while the child was at its own: if the child is
  // gone, what it said or how it ended is the error, not the broken pipe it left.
  Status Explain(Status s);
  // Once the handshake is over: one message the event loop saw waiting, checked in order,
  // or nullopt once the socket has nothing more to say.
  Result<std::optional<Message>> Poll();

 private:
  Channel(sys::UniqueFd fd, Flow flow, std::string who)
      : fd_(std::move(fd)), seq_(flow), who_(std::move(who)) {}
  Error Lost(Error e);
  // Next's and AwaitClose's: the child's next message but its log lines, or nullopt at EOF.
  Result<std::optional<Message>> Receive(int timeout_ms);

  sys::UniqueFd fd_;
  SyncSequence seq_;
  std::string who_;
  int pidfd_ = -1;
  std::function<Status(sys::UniqueFd)> hand_;
};

}  // namespace brig::container
