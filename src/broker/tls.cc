#include "broker/tls.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

#include "sys/library.h"

namespace brig::broker {
namespace {

// Every OpenSSL function brig calls, looked up in libssl.so.3 and the libcrypto it loads.
// SSL_CTX_set_mode, SSL_CTX_set_min_proto_version and SSL_set_tlsext_host_name are macros
// over the two ctrl functions.
// clang-format off
#define BRIG_LIBSSL_FUNCTIONS(X)                                                         \
  X(ERR_get_error) X(ERR_clear_error) X(ERR_error_string_n) X(TLS_client_method)         \
  X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl) X(SSL_CTX_set_verify)                   \
  X(SSL_CTX_set_default_verify_paths) X(SSL_new) X(SSL_free) X(SSL_ctrl)                 \
  X(SSL_get0_param) X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set1_host)      \
  X(SSL_set_fd) X(SSL_set_connect_state) X(SSL_get_error) X(SSL_get_verify_result)       \
  X(X509_verify_cert_error_string) X(SSL_do_handshake) X(SSL_read) X(SSL_write)
// clang-format on

struct Libssl {
#define BRIG_LIBSSL_FIELD(f) decltype(&::f) f;
  BRIG_LIBSSL_FUNCTIONS(BRIG_LIBSSL_FIELD)
#undef BRIG_LIBSSL_FIELD
};

Result<const Libssl*> OpenLibssl() {
  static const Libssl* lib = nullptr;
  static std::string error;
  if (!lib && error.empty()) {
    static Libssl l;
    sys::Library so("libssl.so.3");
#define BRIG_LIBSSL_LOOKUP(f) so.Find(l.f, #f);
    BRIG_LIBSSL_FUNCTIONS(BRIG_LIBSSL_LOOKUP)
#undef BRIG_LIBSSL_LOOKUP
    error = so.error();
    if (error.empty()) lib = &l;
  }
  if (!lib) return Fail("TLS", "libssl.so.3", error);
  return lib;
}

// Only for what exists: a context or connection was made with the library open.
const Libssl& Opened() { return **OpenLibssl(); }

std::string OpensslError(const Libssl& ssl, const char* what) {
  unsigned long e = ssl.ERR_get_error();
  ssl.ERR_clear_error();
  if (e == 0) return what;
  char buf[256];
  ssl.ERR_error_string_n(e, buf, sizeof buf);
  return std::string(what) + ": " + buf;
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* c) const { Opened().SSL_CTX_free(c); }

Result<SslCtx> ClientContext() {
  const Libssl& ssl = *BRIG_TRY(OpenLibssl());
  SslCtx ctx(ssl.SSL_CTX_new(ssl.TLS_client_method()));
  if (!ctx) return Fail("TLS", "client context", OpensslError(ssl, "SSL_CTX_new"));
  ssl.SSL_CTX_ctrl(ctx.get(), SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  ssl.SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (ssl.SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return Fail("TLS", "CA store", OpensslError(ssl, "SSL_CTX_set_default_verify_paths"));
  }
  ssl.SSL_CTX_ctrl(ctx.get(), SSL_CTRL_MODE,
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, nullptr);
  return ctx;
}

Result<std::unique_ptr<Upstream>> Upstream::Make(sys::UniqueFd fd, SSL_CTX* ctx,
                                                 const std::string& host) {
  if (!ctx) return std::unique_ptr<Upstream>(new Upstream(std::move(fd), nullptr));
  const Libssl& lib = Opened();
  SSL* ssl = lib.SSL_new(ctx);
  if (!ssl) return Fail("TLS", host, OpensslError(lib, "SSL_new"));
  std::unique_ptr<Upstream> u(new Upstream(std::move(fd), ssl));
  bool literal = !host.empty() &&
                 (host[0] == '[' || host.find_first_not_of("0123456789.") == std::string::npos);
  std::string bare = host[0] == '[' ? host.substr(1, host.size() - 2) : host;
  // SNI carries names only; an address literal is checked against the certificate's IP SANs.
  if (!literal && lib.SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                               bare.data()) != 1) {
    return Fail("TLS", host, OpensslError(lib, "SNI"));
  }
  X509_VERIFY_PARAM* param = lib.SSL_get0_param(ssl);
  int ok = literal ? lib.X509_VERIFY_PARAM_set1_ip_asc(param, bare.c_str())
                   : lib.X509_VERIFY_PARAM_set1_host(param, bare.c_str(), 0);
  if (ok != 1) return Fail("TLS", host, OpensslError(lib, "the name to verify"));
  if (lib.SSL_set_fd(ssl, u->fd_.get()) != 1) {
    return Fail("TLS", host, OpensslError(lib, "SSL_set_fd"));
  }
  lib.SSL_set_connect_state(ssl);
  return u;
}

Upstream::~Upstream() {
  if (ssl_) Opened().SSL_free(ssl_);
}

ssize_t Upstream::Classify(int ret) {
  const Libssl& lib = Opened();
  int e = lib.SSL_get_error(ssl_, ret);
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
    long v = lib.SSL_get_verify_result(ssl_);
    error_ = v != X509_V_OK ? std::string("certificate: ") + lib.X509_verify_cert_error_string(v)
                            : OpensslError(lib, "TLS handshake");
  } else if (e == SSL_ERROR_SYSCALL && errno == 0) {
    return 0;  // the peer closed without close_notify
  } else {
    error_ =
        e == SSL_ERROR_SYSCALL ? std::string("TLS: ") + strerror(errno) : OpensslError(lib, "TLS");
  }
  lib.ERR_clear_error();
  return kFailed;
}

bool Upstream::Handshake() {
  if (handshaken_ || !ssl_) return handshaken_ = true;
  const Libssl& lib = Opened();
  lib.ERR_clear_error();
  int r = lib.SSL_do_handshake(ssl_);
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
  const Libssl& lib = Opened();
  lib.ERR_clear_error();
  int r = lib.SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
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
  const Libssl& lib = Opened();
  lib.ERR_clear_error();
  int r = lib.SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
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
