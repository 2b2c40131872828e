// The parent's end of the sync socket (channel.h).
#include "container/channel.h"

#include <sys/socket.h>

namespace brig::container {

Result<std::pair<Channel, sys::UniqueFd>> Channel::Open(Flow flow, std::string who) {
  sys::FdPair pair = BRIG_TRY(sys::FdPair::SocketPair(SOCK_SEQPACKET, who));
  sys::UniqueFd child_end = pair.TakeChildEnd();
  return std::pair(Channel(pair.TakeParentEnd(), flow, std::move(who)), std::move(child_end));
}

Error Channel::Lost(Error e) {
  std::optional<Error> why = WhyInitIsGone(fd_.get(), pidfd_, e);
  return why ? std::move(*why) : std::move(e);
}

Result<std::optional<Message>> Channel::Receive(int timeout_ms) {
  for (;;) {
    auto m = RecvMessage(fd_.get(), timeout_ms);
    if (!m && m.error().op == "sync" && m.error().detail == kPeerClosed) {
      return std::optional<Message>();
    }
    if (!m) return Lost(std::move(m).error().Wrap(who_));
    BRIG_TRY(seq_.Accept(m->type));
    if (m->type == Msg::kLog) {
      LogFromInit(*m);
      continue;
    }
    if (m->type == Msg::kError) return DecodeError(*m);
    if (m->type == Msg::kSeccompFd) {
      if (!hand_) {
        return Fail("sync", std::string(MsgName(m->type)), "message out of order",
                    ErrorKind::kInternal);
      }
      BRIG_TRY(hand_(std::move(m->fd)));
      BRIG_TRY(Send(Msg::kSeccompDone));
      continue;
    }
    return std::optional<Message>(std::move(*m));
  }
}

Result<Message> Channel::Next(int timeout_ms) {
  std::optional<Message> m = BRIG_TRY(Receive(timeout_ms));
  if (m) return std::move(*m);
  return Lost(Fail("sync", "", std::string(kPeerClosed)).Wrap(who_));
}

Status Channel::Send(Msg type, std::string_view payload) {
  return Explain(SendMessage(fd_.get(), type, 0, payload));
}

Status Channel::AwaitClose(int timeout_ms) {
  std::optional<Message> m = BRIG_TRY(Receive(timeout_ms));
  if (!m) return {};
  return Fail("sync", std::string(MsgName(m->type)), "message out of order",
              ErrorKind::kInternal);
}

Status Channel::Explain(Status s) {
  if (s) return s;
  return Lost(std::move(s).error());
}

Result<std::optional<Message>> Channel::Poll() {
  auto m = RecvMessage(fd_.get(), 0);
  if (!m) return std::optional<Message>();
  BRIG_TRY(seq_.Accept(m->type));
  return std::optional<Message>(std::move(*m));
}

}  // namespace brig::container
