// The upstream side of an http broker's connection: a connected socket, plain or with TLS
// that brig originates itself (OpenSSL, verified against the host's CA store, SNI and the
// host name checked), so the sandbox speaks plain HTTP and never holds a key. Nonblocking:
// every call returns at once, and Wanted() says which epoll events it waits for.
//
// OpenSSL is opened (dlopen libssl.so.3) when the first context is made, not linked in:
// linked statically, the loader's 17,000 relocations of its tables wrote 99 pages of
// every brig process at start, and only a run with an https broker uses it.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::broker {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const;
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A client context that verifies peers against the host's CA store (OpenSSL's default
// paths; SSL_CERT_FILE and SSL_CERT_DIR in brig's environment name others), TLS 1.2 at least.
Result<SslCtx> ClientContext();

class Upstream {
 public:
  // `ctx` null: plain. Otherwise TLS to `host` (SNI and the certificate's name).
  static Result<std::unique_ptr<Upstream>> Make(sys::UniqueFd fd, SSL_CTX* ctx,
                                                const std::string& host);
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  int fd() const { return fd_.get(); }
  enum Io : ssize_t { kWouldBlock = -1, kFailed = -2 };
  // TLS: drives the handshake; true once it is done (at once for plain). Check failed().
  bool Handshake();
  // > 0 bytes moved, 0 end of stream (Read only), or an Io value.
  ssize_t Read(char* buf, size_t n);
  ssize_t Write(const char* buf, size_t n);
  // After the writer's last byte: a FIN (plain only; TLS keeps the connection whole).
  void ShutdownWrite();
  uint32_t Wanted() const { return want_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  Upstream(sys::UniqueFd fd, SSL* ssl) : fd_(std::move(fd)), ssl_(ssl) {}
  ssize_t Classify(int ret);
  sys::UniqueFd fd_;
  SSL* ssl_;
  bool handshaken_ = false;
  uint32_t want_ = 0;  // EPOLLIN/EPOLLOUT the last TLS call waits for
  std::string error_;
};

}  // namespace brig::broker
