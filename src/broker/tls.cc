#include "broker/tls.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

namespace brig::broker {
namespace {

std::string OpensslError(const char* what) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return what;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return std::string(what) + ": " + buf;
}

}  // namespace

Result<SslCtx> ClientContext() {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Fail("TLS", "client context", OpensslError("SSL_CTX_new"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return Fail("TLS", "CA store", OpensslError("SSL_CTX_set_default_verify_paths"));
  }
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

Result<std::unique_ptr<Upstream>> Upstream::Make(sys::UniqueFd fd, SSL_CTX* ctx,
                                                 const std::string& host) {
  if (!ctx) return std::unique_ptr<Upstream>(new Upstream(std::move(fd), nullptr));
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return Fail("TLS", host, OpensslError("SSL_new"));
  std::unique_ptr<Upstream> u(new Upstream(std::move(fd), ssl));
  bool literal = !host.empty() &&
                 (host[0] == '[' || host.find_first_not_of("0123456789.") == std::string::npos);
  std::string bare = host[0] == '[' ? host.substr(1, host.size() - 2) : host;
  // SNI carries names only; an address literal is checked against the certificate's IP SANs.
  if (!literal && SSL_set_tlsext_host_name(ssl, bare.c_str()) != 1) {
    return Fail("TLS", host, OpensslError("SNI"));
  }
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, bare.c_str())
                   : X509_VERIFY_PARAM_set1_host(param, bare.c_str(), 0);
  if (ok != 1) return Fail("TLS", host, OpensslError("the name to verify"));
  if (SSL_set_fd(ssl, u->fd_.get()) != 1) return Fail("TLS", host, OpensslError("SSL_set_fd"));
  SSL_set_connect_state(ssl);
  return u;
}

Upstream::~Upstream() {
  if (ssl_) SSL_free(ssl_);
}

ssize_t Upstream::Classify(int ret) {
  int e = SSL_get_error(ssl_, ret);
  if (e == SSL_ERROR_WANT_READ) {
    want_ = EPOLLIN;
    return kWouldBlock;
  }
  if (e == SSL_ERROR_WANT_WRITE) {
    want_ = EPOLLOUT;
    return kWouldBlock;
  }
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  if (e == SSL_ERROR_SSL && !handshaken_) {
    long v = SSL_get_verify_result(ssl_);
    error_ = v != X509_V_OK ? std::string("certificate: ") + X509_verify_cert_error_string(v)
                            : OpensslError("TLS handshake");
  } else if (e == SSL_ERROR_SYSCALL && errno == 0) {
    return 0;  // the peer closed without close_notify
  } else {
    error_ = e == SSL_ERROR_SYSCALL ? std::string("TLS: ") + strerror(errno) : OpensslError("TLS");
  }
  ERR_clear_error();
  return kFailed;
}

bool Upstream::Handshake() {
  if (handshaken_ || !ssl_) return handshaken_ = true;
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    want_ = 0;
    return handshaken_ = true;
  }
  if (Classify(r) == 0) error_ = "TLS handshake: the target closed";
  return false;
}

ssize_t Upstream::Read(char* buf, size_t n) {
  if (!ssl_) {
    ssize_t r = recv(fd_.get(), buf, n, 0);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    error_ = std::string("recv: ") + strerror(errno);
    return kFailed;
  }
  ERR_clear_error();
  int r = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
  if (r > 0) {
    want_ = 0;
    return r;
  }
  return Classify(r);
}

ssize_t Upstream::Write(const char* buf, size_t n) {
  if (!ssl_) {
    ssize_t r = send(fd_.get(), buf, n, MSG_NOSIGNAL);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    error_ = std::string("send: ") + strerror(errno);
    return kFailed;
  }
  ERR_clear_error();
  int r = SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
  if (r > 0) {
    want_ = 0;
    return r;
  }
  ssize_t f = Classify(r);
  if (f == 0) {
    error_ = "TLS: the target closed";
    return kFailed;
  }
  return f;
}

void Upstream::ShutdownWrite() {
  if (!ssl_) (void)shutdown(fd_.get(), SHUT_WR);
}

}  // namespace brig::broker
