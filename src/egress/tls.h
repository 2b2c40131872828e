// The TLS ClientHello a sandbox's client sends first on port 443, read without terminating
// TLS: the proxy peeks at the server_name it asks for and at whether it hides the real one
// (ECH), then passes the bytes on untouched. Pure; unit-tested and fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/peek.h"

namespace brig::egress {

// The longest ClientHello body brig reads. Real ones take 200 to 2000 bytes, post-quantum
// key shares included; what a hello may span is bounded by this, not by its records.
inline constexpr size_t kMaxClientHello = 16384;

// Alert descriptions (RFC 8446 6) the proxy has reason to send.
inline constexpr uint8_t kAlertHandshakeFailure = 40;
inline constexpr uint8_t kAlertAccessDenied = 49;
inline constexpr uint8_t kAlertDecodeError = 50;
inline constexpr uint8_t kAlertUnrecognizedName = 112;

inline constexpr uint16_t kExtServerName = 0;
inline constexpr uint16_t kExtEncryptedClientHello = 0xfe0d;
inline constexpr uint16_t kExtEsni = 0xffce;  // the draft ESNI, which ECH replaced

struct ClientHello {
  uint16_t version = 0;  // legacy_version, 0x0301-0x0303 (TLS 1.3 sends 0x0303)
  // The server_name's one host_name through NormalizeName; empty when the hello has no
  // server_name extension. One that is there but not a host name is malformed.
  std::string sni;
  // An encrypted_client_hello extension is present. Clients send one as GREASE, too, and
  // the two cannot be told apart (that is the point), so this only says one is there.
  bool ech = false;
  bool esni = false;  // an ESNI extension is present
};

using HelloParse = Peek<ClientHello>;

// `bytes` is everything the client has sent so far. Records (type 22, version 3.1-3.4,
// 1-16384 bytes) are reassembled until the handshake message is whole; then it must be a
// ClientHello of at most kMaxClientHello bytes: legacy version, random, session id of at
// most 32 bytes, an even number of cipher suites, compression methods that include null,
// extensions whose lengths add up exactly, none twice, and a server_name, if any, that is
// a list of exactly one host_name (RFC 6066 3). Bytes after the hello are not read.
// Every proper prefix of a valid hello is kNeedMore. The record and handshake headers are
// checked as their bytes arrive, so non-TLS bytes are kMalformed from the first one; the
// hello's body is checked once it is whole.
HelloParse ParseClientHello(std::string_view bytes);

// A fatal alert record with `description`: what the proxy sends before it closes a refused
// connection.
std::string TlsAlert(uint8_t description);

}  // namespace brig::egress
