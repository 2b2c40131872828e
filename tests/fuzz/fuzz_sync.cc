// libFuzzer target: the parent's side of the sync protocol (container/sync.h), which reads
// what the sandbox's brig init sends. The input is written as one SOCK_SEQPACKET packet
// and read back with RecvMessage (with no descriptor, so never a SeccompFd); kError payloads are
// decoded and rendered; message types drive a SyncSequence checked against a model of the protocol
// order. DecodeError also gets the raw bytes directly (no size limit from the socket), and every
// decoded Error is sent back through SendError and decoded again, which must give the same Error.
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "container/sync.h"
#include "fuzz_common.h"

namespace {

using brig::ErrorKind;
using brig::container::Message;
using brig::container::Msg;

struct Pair {
  int a = -1, b = -1;
  Pair() {
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
      perror("socketpair");
      abort();
    }
    a = sp[0];
    b = sp[1];
    // Room for the largest input we send, whatever the host's default.
    int sz = 1 << 20;
    (void)setsockopt(a, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    (void)setsockopt(b, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  }
  // Nothing may be left queued between inputs.
  void Drain() const {
    char c;
    while (recv(b, &c, 1, MSG_DONTWAIT | MSG_TRUNC) >= 0) {
    }
  }
};

const Pair& Sockets() {
  static const Pair p;
  return p;
}

void CheckDecoded(const brig::Error& e, const Message& m) {
  FUZZ_CHECK(e.err == m.err);
  FUZZ_CHECK(static_cast<int>(e.kind) >= 0 &&
             static_cast<int>(e.kind) <= static_cast<int>(ErrorKind::kInternal));
  FUZZ_CHECK(!e.op.empty());
  FUZZ_CHECK(e.op.find('\0') == std::string::npos);
  FUZZ_CHECK(e.subject.find('\0') == std::string::npos);
  FUZZ_CHECK(e.detail.find('\0') == std::string::npos);
  FUZZ_CHECK(e.context.find('\0') == std::string::npos);
  FUZZ_CHECK(e.subject.size() + e.detail.size() + e.context.size() <= m.payload.size());
  brig::fuzz::CheckRendersOneLine(e);
}

// SendError then RecvMessage then DecodeError: the Error survives whenever it fits in one
// packet (SendError truncates the rest, and must stay inside its buffer doing so).
void RoundTrip(const brig::Error& e) {
  const Pair& p = Sockets();
  auto sent = brig::container::SendError(p.a, e);
  FUZZ_CHECK(sent.has_value());
  auto back = brig::container::RecvMessage(p.b, 0);
  FUZZ_CHECK(back.has_value());
  FUZZ_CHECK(back->type == Msg::kError);
  FUZZ_CHECK(back->payload.size() <= brig::container::kMaxPayload);
  brig::Error d = brig::container::DecodeError(*back);
  CheckDecoded(d, *back);
  FUZZ_CHECK(d.kind == e.kind);
  FUZZ_CHECK(d.err == e.err);
  // "<kind>\0<op>\0<subject>\0<detail>\0<context>\0"
  if (1 + e.op.size() + e.subject.size() + e.detail.size() + e.context.size() + 5 <=
      brig::container::kMaxPayload) {
    FUZZ_CHECK(d.op == e.op);
    FUZZ_CHECK(d.subject == e.subject);
    FUZZ_CHECK(d.detail == e.detail);
    FUZZ_CHECK(d.context == e.context);
  }
}

// The protocol order of sync.h, written out independently of SyncSequence.
class Model {
 public:
  bool Accept(Msg m) {
    State next = State::kFailed;
    bool ok = false;
    if (m == Msg::kNeedIdMap && s_ == State::kStarted) {
      ok = true, next = State::kMapping;
    } else if (m == Msg::kReady && s_ == State::kMapping) {
      ok = true, next = State::kReady;
    } else if (m == Msg::kWorkloadExit && s_ == State::kReady) {
      ok = true, next = State::kExited;
    } else if (m == Msg::kError && s_ != State::kExited && s_ != State::kFailed) {
      ok = true;
    } else if (m == Msg::kLog && (s_ == State::kStarted || s_ == State::kMapping)) {
      ok = true, next = s_;
    }
    s_ = next;
    return ok;
  }

 private:
  enum class State { kStarted, kMapping, kReady, kExited, kFailed };
  State s_ = State::kStarted;
};

void Sequence(const uint8_t* data, size_t size, const Message* first) {
  brig::container::SyncSequence seq;
  Model model;
  bool failed = false;
  auto step = [&](Msg m) {
    (void)brig::container::MsgName(m);
    auto s = seq.Accept(m);
    FUZZ_CHECK(s.has_value() == model.Accept(m));
    if (failed) FUZZ_CHECK(!s.has_value());  // a rejected order is final
    if (!s) {
      failed = true;
      FUZZ_CHECK(s.error().kind == ErrorKind::kInternal);
      brig::fuzz::CheckRendersOneLine(s.error());
    }
  };
  if (first) step(first->type);
  // Every type on the wire, and 0 and one past the last, which are not.
  const uint32_t types = static_cast<uint32_t>(brig::container::kLastMsg) + 2;
  for (size_t i = 0; i < size && i < 64; ++i) step(static_cast<Msg>(data[i] % types));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Enough for every RecvMessage path (the largest valid packet is 12 + 4096 bytes) and
  // for DecodeError/SendError beyond one packet's worth.
  if (size > 3 * brig::container::kMaxPayload) return -1;
  const Pair& p = Sockets();

  ssize_t n = send(p.a, data, size, MSG_NOSIGNAL);
  FUZZ_CHECK(n == static_cast<ssize_t>(size));
  auto m = brig::container::RecvMessage(p.b, 0);
  p.Drain();
  if (m) {
    FUZZ_CHECK(size >= 12 && size <= 12 + brig::container::kMaxPayload);
    FUZZ_CHECK(m->payload.size() == size - 12);
    FUZZ_CHECK(std::memcmp(m->payload.data(), data + 12, m->payload.size()) == 0);
    uint32_t type;
    std::memcpy(&type, data, sizeof type);
    FUZZ_CHECK(static_cast<uint32_t>(m->type) == type);
    FUZZ_CHECK(type >= 1 && type <= static_cast<uint32_t>(brig::container::kLastMsg));
    // Bytes alone never make a listener: a SeccompFd comes only with its descriptor.
    FUZZ_CHECK(m->type != Msg::kSeccompFd && !m->fd.valid());
    if (m->type == Msg::kError) {
      brig::Error e = brig::container::DecodeError(*m);
      CheckDecoded(e, *m);
      RoundTrip(e);
    }
    if (m->type == Msg::kWorkloadExit) {
      uint32_t left = 0;
      if (m->payload.size() == sizeof left) std::memcpy(&left, m->payload.data(), sizeof left);
      FUZZ_CHECK(brig::container::LeftKilled(*m) == left);
    }
  } else {
    brig::fuzz::CheckRendersOneLine(m.error());
  }
  Sequence(data, size, m ? &*m : nullptr);

  // The raw bytes as a payload, bypassing the socket's size limit.
  Message raw;
  raw.type = Msg::kError;
  if (size >= 4) std::memcpy(&raw.err, data, sizeof raw.err);
  raw.payload.assign(reinterpret_cast<const char*>(data), size);
  brig::Error e = brig::container::DecodeError(raw);
  CheckDecoded(e, raw);
  RoundTrip(e);
  p.Drain();
  return 0;
}
