#include "egress/proxy.h"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "egress/tls.h"
#include "net/upstream_socket.h"

namespace brig::egress {
namespace {

using namespace std::chrono_literals;

// Proxied connections at once; each holds two sockets and two pipes, so the supervisor's
// RLIMIT_NOFILE may allow fewer (FitDescriptors).
constexpr size_t kMaxConnections = 512;
constexpr size_t kFdsPerConnection = 6;
// What a client may send before its name is read: a hello in one-byte records is bigger
// than the hello itself.
constexpr size_t kMaxFirstBytes = 65536;
constexpr auto kFirstBytesTimeout = 10s;
constexpr auto kConnectTimeout = 10s;
constexpr auto kIdleTimeout = 5min;
// A refused connection waits this long for its client's close, so the refusal is read.
constexpr auto kRefusalLinger = 2s;

}  // namespace

Proxy::Proxy(const Policy& policy, const net::Listeners& listeners, uint32_t sandbox,
             const NamePool& pool, HostFloor& host_floor, UpstreamClient& upstream, Loop& loop,
             Traffic& traffic, Budget* budget)
    : policy_(policy), l_(listeners), sandbox_(sandbox), pool_(pool), host_floor_(host_floor),
      upstream_(upstream), loop_(loop), traffic_(traffic), budget_(budget),
      max_conns_(kMaxConnections) {}

std::string Proxy::BudgetSpent() const {
  return "the phase's egress budget of " + std::to_string(budget_->limit()) +
         " bytes is spent (--egress-budget, limits.egress_bytes)";
}

void Proxy::FitDescriptors() {
  rlimit nofile = {};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return;
  rlim_t want = 64 + kMaxConnections * kFdsPerConnection;
  if (nofile.rlim_cur < want) {
    nofile.rlim_cur = std::min(want, nofile.rlim_max);
    (void)setrlimit(RLIMIT_NOFILE, &nofile);
  }
  max_conns_ = std::min<size_t>(kMaxConnections,
                                nofile.rlim_cur > 128 ? (nofile.rlim_cur - 128) / kFdsPerConnection : 1);
}

uint64_t Proxy::BytesUp(const Conn& c) {
  return c.relay ? c.relay->bytes_up() : c.http ? c.http->bytes_up() : 0;
}

uint64_t Proxy::BytesDown(const Conn& c) {
  return c.relay ? c.relay->bytes_down() : c.http ? c.http->bytes_down() : 0;
}

void Proxy::Accept(bool tls) {
  int listener = tls ? l_.https() : l_.http();
  for (;;) {
    sockaddr_in peer = {};
    socklen_t len = sizeof peer;
    sys::UniqueFd fd(accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    if (sandbox_ && ntohl(peer.sin_addr.s_addr) != sandbox_) continue;  // not this sandbox's
    uint64_t id = loop_.NewId();
    Conn& c = conns_[id];
    c.id = id;
    c.tls = tls;
    c.client = std::move(fd);
    c.start = c.last = Clock::now();
    c.deadline = c.start + kFirstBytesTimeout;
    Admit(c);
  }
}

void Proxy::Admit(Conn& c) {
  sockaddr_in orig = {};
  socklen_t olen = sizeof orig;
  if (getsockopt(c.client.get(), SOL_IP, SO_ORIGINAL_DST, &orig, &olen) == 0) {
    c.dialed = ntohl(orig.sin_addr.s_addr);
    c.port = ntohs(orig.sin_port);
  }
  if (conns_.size() > max_conns_) {
    return Refuse(c, "too_many", std::to_string(max_conns_) + " connections are open already");
  }
  if (c.port == 0) {
    return Refuse(c, "not_from_resolver", "the connection was not redirected by brig's rules");
  }
  // The client writes as soon as its connect() returns, so its first bytes are often here
  // already: they are read now, not after a round through epoll.
  uint64_t id = c.id;
  ReadFirstBytes(c, 0);
  if (auto it = conns_.find(id); it != conns_.end() && it->second.state == Conn::kReading) {
    loop_.Interest(it->second.client.get(), id << 2 | kClient, it->second.client_events, EPOLLIN);
  }
}

void Proxy::OnClient(uint64_t id, uint32_t events) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (c.state == Conn::kRelaying) return Pump(c);
  if (c.state == Conn::kRefusing) return Drain(c);
  if (c.state == Conn::kReading) ReadFirstBytes(c, events);
}

void Proxy::Drain(Conn& c) {
  char buf[4096];
  ssize_t n;
  while ((n = recv(c.client.get(), buf, sizeof buf, 0)) > 0) {
  }
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) Finish(c.id);
}

bool Proxy::Read(Conn& c, uint32_t events) {
  char buf[4096];
  while (c.buf.size() < kMaxFirstBytes) {
    ssize_t n = recv(c.client.get(), buf, std::min(sizeof buf, kMaxFirstBytes - c.buf.size()), 0);
    if (n > 0) {
      c.buf.append(buf, static_cast<size_t>(n));
      continue;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || (events & EPOLLERR);
  }
  return false;
}

void Proxy::ReadFirstBytes(Conn& c, uint32_t events) {
  bool eof = Read(c, events);
  FirstBytes f = c.tls ? PeekTls(c) : PeekHttp(c);
  if (f.refused) return;
  if (f.status == PeekStatus::kMalformed && f.address) return Refuse(c, "ip_literal", f.why);
  if (f.status == PeekStatus::kMalformed) {
    bool not_tls = c.tls && !c.buf.empty() && c.buf[0] != 0x16;
    return Refuse(c, not_tls ? "not_tls" : "malformed", f.why);
  }
  if (f.status == PeekStatus::kNeedMore) {
    if (c.buf.size() >= kMaxFirstBytes) {
      return Refuse(c, "malformed", "no name in the first " + std::to_string(kMaxFirstBytes) + " bytes");
    }
    if (eof) {
      c.reason = "malformed";
      c.detail = "the client closed before it named a host";
      Finish(c.id);
    }
    return;
  }
  Decide(c);
}

Proxy::FirstBytes Proxy::PeekTls(Conn& c) {
  HelloParse p = ParseClientHello(c.buf);
  FirstBytes f{p.status, p.why, p.address};
  if (f.status != PeekStatus::kOk) return f;
  c.name = p.value.sni;
  f.refused = true;
  if (p.value.ech || p.value.esni) {
    Refuse(c, "ech", "the ClientHello carries an encrypted_client_hello extension: "
                     "brig cannot check a hidden name");
  } else if (c.name.empty()) {
    Refuse(c, "no_sni", "the ClientHello names no server");
  } else {
    f.refused = false;
  }
  return f;
}

Proxy::FirstBytes Proxy::PeekHttp(Conn& c) {
  if (!c.framer) c.framer = std::make_unique<http::RequestFramer>(&http_rules_);
  Peek<HostPort> p = FrameFirstRequest(c);
  FirstBytes f{p.status, p.why, p.address};
  if (c.framer->refusal() == 501) {
    Refuse(c, "unsupported", p.why);
    f.refused = true;
    return f;
  }
  if (f.status != PeekStatus::kOk) return f;
  c.name = p.value.name;
  if (p.value.port != 0 && p.value.port != c.port) {
    Refuse(c, "name_mismatch", "the Host names port " + std::to_string(p.value.port) +
                                   ", the connection is to port " + std::to_string(c.port));
    f.refused = true;
  }
  return f;
}

// Frames the client's bytes up to the end of its first request head, which names the host
// the connection is for: kNeedMore until then, kMalformed if the framing refused it.
Peek<HostPort> Proxy::FrameFirstRequest(Conn& c) {
  std::string_view in = c.buf;
  bool head = false;
  while (!in.empty() && !head && !c.framer->refusal()) {
    http::RequestFramer::Step s = c.framer->Feed(in, c.to_up);
    in.remove_prefix(s.consumed);
    head = s.head;
    if (s.consumed == 0 && !s.head && !s.done) break;
  }
  c.buf.erase(0, c.buf.size() - in.size());
  Peek<HostPort> p;
  if (c.framer->refusal()) {
    p.status = PeekStatus::kMalformed;
    p.why = c.framer->why();
  } else if (head) {
    c.first_is_head = c.framer->head().method == "HEAD";
    p = ParseHost(c.framer->head().host);
  }
  return p;
}

void Proxy::Decide(Conn& c) {
  if (!policy_.Allows(c.name, c.port)) {
    return Refuse(c, "not_allowlisted", c.name + " on port " + std::to_string(c.port));
  }
  const std::string* resolved = pool_.NameAt(c.dialed);
  if (!resolved) {
    return Refuse(c, "not_from_resolver",
                  Ip(c.dialed) + " is no address brig's resolver gave this sandbox for a name");
  }
  if (*resolved != c.name) {
    return Refuse(c, "name_mismatch", Ip(c.dialed) + " was resolved for " + *resolved + ", not " + c.name);
  }
  if (budget_ && budget_->exceeded()) return Refuse(c, "budget", BudgetSpent());
  c.state = Conn::kResolving;
  loop_.Interest(c.client.get(), c.id << 2 | kClient, c.client_events, 0);
  upstream_.Resolve(c.name, [this, id = c.id](const Resolution& r) {
    if (auto it = conns_.find(id); it != conns_.end()) Resolved(it->second, r);
  });
}

void Proxy::Resolved(Conn& c, const Resolution& r) {
  if (c.state != Conn::kResolving) return;
  if (r.over_budget) return Refuse(c, "budget", r.error);
  if (!r.error.empty()) return Refuse(c, "upstream_failed", r.error);
  if (r.addrs.empty()) {
    if (!r.floor.empty()) return Refuse(c, "floor", r.floor);
    return Refuse(c, "upstream_failed", "the name has no usable address now");
  }
  c.addrs = r.addrs;
  c.next_addr = 0;
  TryConnect(c);
}

void Proxy::TryConnect(Conn& c) {
  while (c.next_addr < c.addrs.size()) {
    uint32_t a = c.addrs[c.next_addr++];
    // Asked again at each connect: the address may have become the host's since it was
    // resolved.
    if (std::string why = host_floor_.Refuses(a); !why.empty()) {
      if (c.host_floor.empty()) c.host_floor = std::move(why);
      ++c.host_addrs;
      continue;
    }
    sys::UniqueFd s(net::UpstreamSocket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!s) break;
    sockaddr_in to = Sockaddr(a, c.port);
    if (connect(s.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) < 0 && errno != EINPROGRESS) {
      continue;
    }
    c.address = a;
    c.upstream = std::move(s);
    c.upstream_events = 0;
    c.state = Conn::kConnecting;
    c.deadline = Clock::now() + kConnectTimeout;
    loop_.Interest(c.upstream.get(), c.id << 2 | kUpstreamSide, c.upstream_events, EPOLLOUT);
    return;
  }
  if (c.host_addrs == c.addrs.size()) return Refuse(c, "floor", c.host_floor);
  std::string tried;
  for (uint32_t a : c.addrs) tried += (tried.empty() ? "" : ", ") + Ip(a);
  Refuse(c, "upstream_failed", "cannot connect to " + tried + " port " + std::to_string(c.port));
}

void Proxy::OnUpstream(uint64_t id, uint32_t events) {
  (void)events;
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (c.state == Conn::kRelaying) return Pump(c);
  if (c.state == Conn::kConnecting) Connected(c);
}

void Proxy::Connected(Conn& c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c.upstream.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == EINPROGRESS) return;
  if (err != 0) {
    // Closing the socket takes it out of the epoll set.
    c.upstream.Reset();
    c.upstream_events = 0;
    return TryConnect(c);
  }
  StartRelay(c);
}

void Proxy::StartRelay(Conn& c) {
  if (c.tls) {
    auto relay = Relay::Start(std::move(c.client), std::move(c.upstream), std::move(c.buf),
                              budget_, c.name);
    if (!relay) {
      c.reason = "upstream_failed";
      c.detail = relay.error().Render();
      Finish(c.id);
      return;
    }
    c.relay.emplace(std::move(*relay));
  } else {
    c.http = std::make_unique<HttpRelay>(std::move(c.client), std::move(c.upstream),
                                         std::move(c.framer), std::move(c.to_up),
                                         std::move(c.buf), c.first_is_head, c.name, c.port,
                                         budget_);
  }
  c.state = Conn::kRelaying;
  c.allowed = true;
  c.reason = policy_.AllowReason();
  c.last = Clock::now();
  Pump(c);
}

void Proxy::Pump(Conn& c) {
  if (c.http) {
    if (!c.http->Pump()) {
      if (c.http->over_budget()) return OverBudget(c);
      if (c.http->refused()) {
        // The connection stood; a later request on it did not.
        c.detail = "a request was refused: " + c.http->why();
        c.client = c.http->TakeClient();
        return Linger(c);
      }
      if (c.http->failed()) {
        c.detail = c.http->why().empty() ? "a side reset the connection" : c.http->why();
      }
      Finish(c.id);
      return;
    }
    loop_.Interest(c.http->client(), c.id << 2 | kClient, c.client_events,
                   c.http->Wanted(c.http->client()));
    loop_.Interest(c.http->upstream(), c.id << 2 | kUpstreamSide, c.upstream_events,
                   c.http->Wanted(c.http->upstream()));
    return;
  }
  if (!c.relay->Pump()) {
    if (c.relay->over_budget()) return OverBudget(c);
    if (c.relay->failed()) c.detail = "a side reset the connection";
    Finish(c.id);
    return;
  }
  loop_.Interest(c.relay->client(), c.id << 2 | kClient, c.client_events,
                 c.relay->Wanted(c.relay->client()));
  loop_.Interest(c.relay->upstream(), c.id << 2 | kUpstreamSide, c.upstream_events,
                 c.relay->Wanted(c.relay->upstream()));
}

// Bytes were waiting to go upstream and the budget is spent: the connection closes, both
// sides, at once (the other connections at the next tick).
void Proxy::OverBudget(Conn& c) {
  c.reason = "budget";
  c.detail = BudgetSpent();
  Finish(c.id);
}

void Proxy::Refuse(Conn& c, const std::string& reason, const std::string& detail) {
  c.reason = reason;
  c.detail = detail;
  c.allowed = false;
  c.upstream.Reset();
  c.upstream_events = 0;
  // Told before the client hears it: with --deny stop the sandbox is gone before then.
  traffic_.Deny(c.name, c.reason, c.detail);
  c.denial_told = true;
  std::string say;
  if (c.tls) {
    uint8_t alert = reason == "malformed" || reason == "not_tls" ? kAlertDecodeError
                    : reason == "no_sni"                         ? kAlertUnrecognizedName
                                                                 : kAlertAccessDenied;
    say = TlsAlert(alert);
  } else {
    int status = reason == "malformed"         ? 400
                 : reason == "unsupported"     ? 501
                 : reason == "upstream_failed" ? 502
                                               : 403;
    say = http::Refusal(status, "brig: " + reason + (detail.empty() ? "" : ": " + detail));
  }
  (void)!send(c.client.get(), say.data(), say.size(), MSG_NOSIGNAL);
  Linger(c);
}

void Proxy::Linger(Conn& c) {
  // A FIN after the refusal; the socket stays until the client closes too, so what the
  // client sent meanwhile cannot turn the close into a reset that loses the refusal.
  (void)shutdown(c.client.get(), SHUT_WR);
  c.state = Conn::kRefusing;
  c.deadline = Clock::now() + kRefusalLinger;
  loop_.Interest(c.client.get(), c.id << 2 | kClient, c.client_events, EPOLLIN);
}

void Proxy::Tick(Clock::time_point now) {
  std::vector<uint64_t> expired;
  bool spent = budget_ && budget_->exceeded();
  for (auto& [id, c] : conns_) {
    if (spent && c.state != Conn::kRefusing && c.state != Conn::kReading) {
      c.reason = "budget";
      c.detail = BudgetSpent();
      expired.push_back(id);
      continue;
    }
    Expire(c, now, expired);
  }
  for (uint64_t id : expired) Finish(id);
}

void Proxy::Expire(Conn& c, Clock::time_point now, std::vector<uint64_t>& expired) {
  if (c.state == Conn::kRelaying) {
    uint64_t bytes = BytesUp(c) + BytesDown(c);
    if (bytes != c.seen_bytes) {
      c.seen_bytes = bytes;
      c.last = now;
    } else if (now - c.last >= kIdleTimeout) {
      c.detail = "idle for " + std::to_string(Millis(kIdleTimeout) / 1000) + " s";
      expired.push_back(c.id);
    }
  } else if (now >= c.deadline) {
    if (c.state == Conn::kReading) {
      Refuse(c, "timeout", "no complete " + std::string(c.tls ? "ClientHello" : "request head") +
                               " in " + std::to_string(Millis(kFirstBytesTimeout) / 1000) + " s");
    } else if (c.state == Conn::kConnecting) {
      c.upstream.Reset();
      c.upstream_events = 0;
      TryConnect(c);
    } else if (c.state == Conn::kRefusing) {
      expired.push_back(c.id);
    }
  }
}

void Proxy::Finish(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  v1::Connection ev;
  ev.set_protocol(c.tls ? "tls" : "http");
  ev.set_name(c.name);
  ev.set_dialed(c.dialed ? Ip(c.dialed) : "");
  if (c.address) ev.set_address(Ip(c.address));
  ev.set_port(c.port);
  ev.set_allowed(c.allowed);
  ev.set_reason(c.reason);
  ev.set_detail(c.detail);
  ev.set_bytes_up(BytesUp(c));
  ev.set_bytes_down(BytesDown(c));
  ev.set_duration_ms(Millis(Clock::now() - c.start));
  // A connection the budget closed was admitted, but is a refusal too.
  if ((!c.allowed || c.reason == "budget") && !c.denial_told) {
    traffic_.Deny(c.name, c.reason, c.detail);
  }
  v1::NetworkSummary& totals = traffic_.totals();
  if (c.allowed) {
    totals.set_connections(totals.connections() + 1);
  } else {
    totals.set_denied(totals.denied() + 1);
  }
  if (v1::HostTraffic* h = traffic_.Host(c.name)) {
    if (c.allowed) {
      h->set_connections(h->connections() + 1);
    } else {
      h->set_denied(h->denied() + 1);
    }
    h->set_bytes_up(h->bytes_up() + ev.bytes_up());
    h->set_bytes_down(h->bytes_down() + ev.bytes_down());
  }
  conns_.erase(it);  // closes its sockets, which leaves the epoll set
  v1::AuditEvent e;
  *e.mutable_connection() = std::move(ev);
  traffic_.Audit(std::move(e));
}

void Proxy::Close() {
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) {
    ids.push_back(id);
    if (c.detail.empty()) c.detail = "the sandbox ended";
  }
  for (uint64_t id : ids) Finish(id);
}

}  // namespace brig::egress
