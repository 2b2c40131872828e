// ClientHello parsing (RFC 8446 4.1.2 and 5.1, RFC 6066 3). Every length is checked against
// what encloses it before anything is read past it.
#include "egress/tls.h"

#include <algorithm>
#include <bitset>

#include "egress/allowlist.h"

namespace brig::egress {
namespace {

constexpr uint8_t kRecordAlert = 21;
constexpr uint8_t kRecordHandshake = 22;
constexpr uint8_t kHandshakeClientHello = 1;
constexpr size_t kRecordHeader = 5;
constexpr size_t kHandshakeHeader = 4;
constexpr size_t kMaxRecord = 16384;  // RFC 8446 5.1: 2^14 bytes of plaintext

uint8_t Byte(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }
uint16_t U16(std::string_view b, size_t i) {
  return static_cast<uint16_t>(Byte(b, i) << 8 | Byte(b, i + 1));
}

HelloParse Malformed(std::string why) {
  HelloParse r;
  r.status = HelloParse::Status::kMalformed;
  r.why = std::move(why);
  return r;
}

// Reads length-prefixed vectors off the front of `rest`.
class Reader {
 public:
  explicit Reader(std::string_view b) : rest_(b) {}
  bool empty() const { return rest_.empty(); }
  size_t size() const { return rest_.size(); }
  bool U16(uint16_t& v) {
    if (rest_.size() < 2) return false;
    v = egress::U16(rest_, 0);
    rest_.remove_prefix(2);
    return true;
  }
  bool Bytes(size_t n, std::string_view& out) {
    if (rest_.size() < n) return false;
    out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  // A vector with a 1- or 2-byte length.
  bool Vector(int len_bytes, std::string_view& out) {
    if (rest_.size() < static_cast<size_t>(len_bytes)) return false;
    size_t n = len_bytes == 1 ? Byte(rest_, 0) : egress::U16(rest_, 0);
    rest_.remove_prefix(static_cast<size_t>(len_bytes));
    return Bytes(n, out);
  }

 private:
  std::string_view rest_;
};

// The server_name extension's data: a ServerNameList of exactly one host_name.
HelloParse ReadServerName(std::string_view data, ClientHello& hello) {
  Reader ext(data);
  std::string_view list;
  if (!ext.Vector(2, list) || !ext.empty()) {
    return Malformed("server_name list length does not match its extension");
  }
  Reader entries(list);
  if (entries.empty()) return Malformed("empty server_name list");
  std::string_view type, name;
  if (!entries.Bytes(1, type) || !entries.Vector(2, name)) {
    return Malformed("server_name entry runs past its list");
  }
  if (!entries.empty()) return Malformed("server_name list with more than one entry");
  if (type[0] != 0) return Malformed("server_name of a type other than host_name");
  Result<std::string> sni = CheckName(name);
  if (!sni) {
    HelloParse bad = Malformed("server_name: " + sni.error().detail);
    bad.address = IsAddressLiteral(name);
    return bad;
  }
  hello.sni = std::move(sni).value();
  HelloParse r;
  r.status = HelloParse::Status::kOk;
  return r;
}

// The handshake message's body, whole.
HelloParse ReadHello(std::string_view body) {
  HelloParse r;
  ClientHello& h = r.value;
  Reader in(body);
  std::string_view random, session, suites, compression;
  if (!in.U16(h.version)) return Malformed("ClientHello too short");
  if (h.version < 0x0301 || h.version > 0x0303) return Malformed("ClientHello version not TLS");
  if (!in.Bytes(32, random) || !in.Vector(1, session) || !in.Vector(2, suites) ||
      !in.Vector(1, compression)) {
    return Malformed("ClientHello field runs past the hello");
  }
  if (session.size() > 32) return Malformed("session id longer than 32 bytes");
  if (suites.empty() || suites.size() % 2 != 0)
    return Malformed("cipher suites empty or of odd length");
  if (compression.find('\0') == std::string_view::npos) {
    return Malformed("compression methods without null");
  }
  r.status = HelloParse::Status::kOk;
  if (in.empty()) return r;  // a hello without extensions: no server_name

  std::string_view all;
  if (!in.Vector(2, all) || !in.empty()) {
    return Malformed("extensions length does not match the hello");
  }
  Reader exts(all);
  std::bitset<65536> seen;
  while (!exts.empty()) {
    uint16_t type;
    std::string_view data;
    if (!exts.U16(type) || !exts.Vector(2, data)) {
      return Malformed("extension runs past the extensions");
    }
    // RFC 8446 4.2: no two of a type. Two server_names would be two answers to one question.
    if (seen[type]) return Malformed("extension " + std::to_string(type) + " twice");
    seen[type] = true;
    if (type == kExtServerName) {
      HelloParse sni = ReadServerName(data, h);
      if (sni.status != HelloParse::Status::kOk) return sni;
    } else if (type == kExtEncryptedClientHello) {
      h.ech = true;
    } else if (type == kExtEsni) {
      h.esni = true;
    }
  }
  return r;
}

}  // namespace

HelloParse ParseClientHello(std::string_view b) {
  std::string hs;   // the handshake bytes of the records so far
  size_t need = 0;  // the handshake message's whole size, once its header has arrived
  size_t pos = 0;
  for (;;) {
    // The record header, checked as far as it has arrived.
    if (pos < b.size() && Byte(b, pos) != kRecordHandshake) {
      // RFC 8446 5.1: a handshake message is never interleaved with other records.
      return Malformed(pos == 0 ? "not a TLS handshake record"
                                : "a record of another type inside the ClientHello");
    }
    if (pos + 1 < b.size() && Byte(b, pos + 1) != 3) return Malformed("record version not TLS");
    if (pos + 2 < b.size() && (Byte(b, pos + 2) < 1 || Byte(b, pos + 2) > 4)) {
      return Malformed("record version not TLS 1.0-1.3");
    }
    if (b.size() - pos < kRecordHeader) return {};
    size_t len = U16(b, pos + 3);
    // RFC 8446 5.1: no empty handshake fragments.
    if (len == 0) return Malformed("empty handshake record");
    if (len > kMaxRecord) return Malformed("record longer than 16384 bytes");
    pos += kRecordHeader;
    size_t got = std::min(len, b.size() - pos);
    hs.append(b.substr(pos, got));

    if (!hs.empty() && Byte(hs, 0) != kHandshakeClientHello) {
      return Malformed("handshake is not a ClientHello");
    }
    if (need == 0 && hs.size() >= kHandshakeHeader) {
      size_t body = static_cast<size_t>(Byte(hs, 1)) << 16 | U16(hs, 2);
      if (body > kMaxClientHello) return Malformed("ClientHello longer than 16384 bytes");
      need = kHandshakeHeader + body;
    }
    if (need != 0 && hs.size() >= need) {
      return ReadHello(std::string_view(hs).substr(kHandshakeHeader, need - kHandshakeHeader));
    }
    if (got < len) return {};
    pos += len;
  }
}

std::string TlsAlert(uint8_t description) {
  // Record: alert, version 3.3 (RFC 8446 5.1's legacy_record_version), length 2; level fatal.
  return {static_cast<char>(kRecordAlert), 3, 3, 0, 2, 2, static_cast<char>(description)};
}

}  // namespace brig::egress
