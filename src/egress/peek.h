// What an incremental reader of a client's first bytes says: not enough yet, malformed
// (and why), or the value it read. The proxy reads a ClientHello (tls.h) or a request
// head (http.h) as bytes arrive and acts on the first answer that is not kNeedMore.
#pragma once

#include <string>

namespace brig::egress {

enum class PeekStatus { kNeedMore, kMalformed, kOk };

template <typename T>
struct Peek {
  using Status = PeekStatus;
  Status status = Status::kNeedMore;
  T value;          // with kOk
  std::string why;  // with kMalformed: what is wrong
  // With kMalformed: the name the client gave is an IP address (IsAddressLiteral): it is
  // refused as such, a policy answer, not a protocol error.
  bool address = false;
};

}  // namespace brig::egress
