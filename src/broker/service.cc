#include "broker/service.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <chrono>
#include <deque>
#include <optional>
#include <unordered_map>

#include "broker/tls.h"
#include "egress/budget.h"
#include "egress/relay.h"
#include "egress/traffic.h"
#include "http/framing.h"
#include "net/upstream_socket.h"
#include "sys/syscalls.h"

namespace brig::broker {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What brig holds for one direction of a connection before it stops reading the source.
constexpr size_t kMaxBuffered = 256 * 1024;
constexpr size_t kMaxConnections = 256;
constexpr auto kConnectTimeout = 10s;
// A refused connection waits this long for its client's close, so the refusal is read.
constexpr auto kRefusalLinger = 2s;
constexpr auto kTick = 500ms;
// epoll tokens: the timer, then two a broker (its TCP and unix listeners), then two a
// connection (client, upstream) from kFirstConn on.
constexpr uint64_t kTimer = 1;
constexpr uint64_t kFirstConn = 1 << 20;

uint32_t Micros(Clock::duration d) {
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK; }

void AddFailure(v1::BrokerTraffic& t, const std::string& reason, const std::string& detail) {
  for (v1::Denial& d : *t.mutable_failures()) {
    if (d.reason() == reason) {
      d.set_count(d.count() + 1);
      return;
    }
  }
  v1::Denial* d = t.add_failures();
  d->set_reason(reason);
  d->set_count(1);
  d->set_detail(detail);
}

// Bytes go on as they come (an event stream's small writes included), never held for
// Nagle's algorithm. A no-op on unix sockets.
void NoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

class Service::Impl {
 public:
  Impl(std::vector<Config> brokers, Listeners l, std::string attribution, AuditSink audit,
       egress::Budget* budget)
      : brokers_(std::move(brokers)), l_(std::move(l)), audit_(std::move(audit)), budget_(budget) {
    for (const Config& c : brokers_) {
      http::Rules rules;
      for (const Header& h : c.headers) rules.set.emplace_back(h.name, h.value);
      rules.set.emplace_back(c.attribution, attribution);
      if (c.to.kind == Target::kHttp || c.to.kind == Target::kHttps) rules.host = c.to.Authority();
      rules.no_trace = true;
      rules.own_host = true;
      rules.methods = c.methods;
      rules.paths = c.paths;
      rules_.push_back(std::move(rules));
      v1::BrokerTraffic t;
      t.set_name(c.name);
      traffic_.push_back(std::move(t));
    }
  }

  Status Init();
  int fd() const { return ep_.get(); }
  void Handle();
  void Close();
  std::vector<v1::BrokerTraffic> Summary() const;

 private:
  struct Exchange {
    http::RequestHead head;
    Clock::time_point start;
    uint64_t up = 0, down = 0;
  };

  struct Conn {
    // http: kAwaiting until the first request is read and allowed, so that a refused one
    // reaches the target in no form, not even as a connection.
    enum State { kAwaiting, kConnecting, kHandshake, kOpen, kLinger } state = kConnecting;
    uint64_t id = 0;
    size_t b = 0;  // the broker
    sys::UniqueFd client, connecting;
    size_t next_addr = 0;
    Clock::time_point start, deadline;
    uint32_t client_events = 0, up_events = 0;
    // http
    std::unique_ptr<Upstream> up;
    std::unique_ptr<http::RequestFramer> req;
    std::unique_ptr<http::ResponseFramer> resp;
    std::string to_up, to_client;
    std::deque<Exchange> ex;  // ex.front() awaits the next response; ex.back() may be sending
    bool client_eof = false, up_eof = false, up_shut = false;
    bool failed = false;  // the target cannot be reached or went away: no upstream
    // The status brig answers the last request of `ex` with, once those before it are
    // answered; then the connection closes.
    int refusal = 0;
    std::string why;  // the refusal's, or the target's failure
    std::string fail = "unreachable";  // the failure reason of a 502 (BrokerTraffic.failures)
    // tcp
    std::optional<egress::Relay> relay;
  };

  bool Http(const Conn& c) const { return brokers_[c.b].http; }
  void Interest(int fd, uint64_t token, uint32_t& current, uint32_t want);
  void Accept(size_t b, int listener);
  void Connect(Conn& c);
  void Connected(Conn& c);
  void UpstreamFailed(Conn& c, const std::string& why);
  void DropUnsent(Conn& c);
  void Pump(Conn& c);
  void PumpHttp(Conn& c);
  void ReadClient(Conn& c);
  void ReadUpstream(Conn& c);
  void Flush(Conn& c);
  void UpdateInterest(Conn& c);
  // `failure`: the reason the request failed (BrokerTraffic.failures), empty if it did not.
  void Audit(Conn& c, Exchange& e, int status, const std::string& detail,
             const std::string& failure);
  void Finish(uint64_t id, const std::string& detail, const std::string& failure = "");
  std::string BudgetSpent() const;
  bool Spent() const { return budget_ && budget_->exceeded(); }
  void Tick();

  std::vector<Config> brokers_;
  std::vector<http::Rules> rules_;
  Listeners l_;
  AuditSink audit_;
  SslCtx tls_;
  sys::UniqueFd ep_, timer_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_id_ = kFirstConn;
  std::vector<v1::BrokerTraffic> traffic_;
  egress::Budget* budget_;
};

std::string Service::Impl::BudgetSpent() const {
  return "the phase's egress budget of " + std::to_string(budget_->limit()) +
         " bytes is spent (--egress-budget, limits.egress_bytes)";
}

std::vector<v1::BrokerTraffic> Service::Impl::Summary() const {
  std::vector<v1::BrokerTraffic> out = traffic_;
  for (v1::BrokerTraffic& t : out) egress::SortDenials(*t.mutable_failures());
  return out;
}

Status Service::Impl::Init() {
  ep_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!ep_) return SysError("epoll_create1", "brokers");
  timer_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer_) return SysError("timerfd_create", "brokers");
  itimerspec its = {};
  its.it_interval.tv_nsec = std::chrono::nanoseconds(kTick).count();
  its.it_value = its.it_interval;
  if (timerfd_settime(timer_.get(), 0, &its, nullptr) < 0) return SysError("timerfd_settime");
  std::vector<std::pair<int, uint64_t>> fds = {{timer_.get(), kTimer}};
  for (size_t b = 0; b < brokers_.size(); ++b) {
    if (b < l_.tcp.size() && l_.tcp[b]) fds.emplace_back(l_.tcp[b].get(), 2 + 2 * b);
    if (b < l_.local.size() && l_.local[b]) fds.emplace_back(l_.local[b].get(), 3 + 2 * b);
    if (brokers_[b].to.kind == Target::kHttps && !tls_) tls_ = BRIG_TRY(ClientContext());
  }
  for (auto [fd, token] : fds) {
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return SysError("epoll_ctl", "brokers");
  }
  return {};
}

void Service::Impl::Interest(int fd, uint64_t token, uint32_t& current, uint32_t want) {
  sys::EpollInterest(ep_.get(), fd, token, current, want);
}

void Service::Impl::Handle() {
  epoll_event evs[64];
  int n = epoll_wait(ep_.get(), evs, 64, 0);
  for (int i = 0; i < n; ++i) {
    uint64_t token = evs[i].data.u64;
    if (token == kTimer) {
      uint64_t ticks;
      (void)!read(timer_.get(), &ticks, sizeof ticks);
      Tick();
    } else if (token < kFirstConn) {
      size_t b = (token - 2) / 2;
      Accept(b, token % 2 == 0 ? l_.tcp[b].get() : l_.local[b].get());
    } else if (auto it = conns_.find(token / 2); it != conns_.end()) {
      Conn& c = *it->second;
      if (c.state == Conn::kConnecting && token % 2 == 1) {
        Connected(c);
      } else {
        Pump(c);
      }
    }
  }
}

void Service::Impl::Accept(size_t b, int listener) {
  for (;;) {
    sys::UniqueFd fd(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    NoDelay(fd.get());
    if (conns_.size() >= kMaxConnections) continue;  // closed: the sandbox sees a reset
    auto conn = std::make_unique<Conn>();
    Conn& c = *conn;
    c.id = next_id_++;
    c.b = b;
    c.client = std::move(fd);
    c.start = Clock::now();
    if (brokers_[b].http) {
      c.req = std::make_unique<http::RequestFramer>(&rules_[b]);
      c.resp = std::make_unique<http::ResponseFramer>();
    }
    traffic_[b].set_connections(traffic_[b].connections() + 1);
    conns_.emplace(c.id, std::move(conn));
    if (Http(c) && !Spent()) {
      // Dialed by PumpHttp once there is a request to send.
      c.state = Conn::kAwaiting;
      Interest(c.client.get(), c.id * 2, c.client_events, EPOLLIN);
      continue;
    }
    Connect(c);
  }
}

void Service::Impl::Connect(Conn& c) {
  if (Spent()) {
    // No target is dialed: an http client's request gets a 502 saying why.
    c.fail = "budget";
    return UpstreamFailed(c, BudgetSpent());
  }
  const Config& b = brokers_[c.b];
  while (c.next_addr < b.addresses.size()) {
    const Address& a = b.addresses[c.next_addr++];
    sys::UniqueFd s(
        net::UpstreamSocket(a.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!s) continue;
    if (connect(s.get(), reinterpret_cast<const sockaddr*>(&a.sa), a.len) < 0 &&
        errno != EINPROGRESS) {
      continue;
    }
    NoDelay(s.get());
    c.connecting = std::move(s);
    c.up_events = 0;
    c.state = Conn::kConnecting;
    c.deadline = Clock::now() + kConnectTimeout;
    Interest(c.connecting.get(), c.id * 2 + 1, c.up_events, EPOLLOUT);
    // Meanwhile what follows the first request is read (and held).
    if (Http(c)) UpdateInterest(c);
    return;
  }
  UpstreamFailed(c, "cannot connect to " + b.to.Str());
}

void Service::Impl::Connected(Conn& c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c.connecting.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == EINPROGRESS) return;
  if (err != 0) {
    c.connecting.Reset();  // which takes it out of the epoll set
    return Connect(c);
  }
  // From here the upstream's token is for its traffic; its interest starts afresh.
  (void)epoll_ctl(ep_.get(), EPOLL_CTL_DEL, c.connecting.get(), nullptr);
  c.up_events = 0;
  if (!Http(c)) {
    auto relay = egress::Relay::Start(std::move(c.client), std::move(c.connecting), {}, budget_,
                                      "broker " + brokers_[c.b].name);
    if (!relay) return Finish(c.id, relay.error().Render(), "internal");
    c.relay.emplace(std::move(*relay));
    c.state = Conn::kOpen;
    return Pump(c);
  }
  const Config& b = brokers_[c.b];
  SSL_CTX* ctx = b.to.kind == Target::kHttps ? tls_.get() : nullptr;
  auto up = Upstream::Make(std::move(c.connecting), ctx, b.to.host);
  if (!up) return UpstreamFailed(c, up.error().Render());
  c.up = std::move(*up);
  c.state = Conn::kHandshake;
  Pump(c);
}

// What never left counts for no request (the newest were framed last), nor for the
// broker's bytes_up.
void Service::Impl::DropUnsent(Conn& c) {
  uint64_t unsent = c.to_up.size();
  for (auto e = c.ex.rbegin(); e != c.ex.rend() && unsent > 0; ++e) {
    uint64_t d = std::min<uint64_t>(e->up, unsent);
    e->up -= d;
    unsent -= d;
  }
  c.to_up.clear();
}

void Service::Impl::UpstreamFailed(Conn& c, const std::string& why) {
  if (!Http(c)) return Finish(c.id, why, c.fail);
  // A response under way cannot be turned into a 502: it is cut short with the connection.
  if (!c.ex.empty() && c.ex.front().down > 0) return Finish(c.id, why, c.fail);
  DropUnsent(c);
  c.connecting.Reset();
  c.up.reset();
  c.up_events = 0;
  c.up_eof = c.up_shut = true;
  c.state = Conn::kOpen;
  c.failed = true;
  c.why = why;
  // Requests already answered stand. The first unanswered one, read now or still to come,
  // gets a 502; any sent behind it were never answered.
  if (!c.ex.empty()) {
    while (c.ex.size() > 1) {
      Audit(c, c.ex.back(), 0, why, c.fail);
      c.ex.pop_back();
    }
    c.refusal = 502;
  }
  Pump(c);
}

void Service::Impl::Pump(Conn& c) {
  if (c.relay) {
    if (!c.relay->Pump()) {
      if (c.relay->over_budget()) return Finish(c.id, BudgetSpent(), "budget");
      return Finish(c.id, c.relay->failed() ? "a side reset the connection" : "");
    }
    Interest(c.relay->client(), c.id * 2, c.client_events, c.relay->Wanted(c.relay->client()));
    Interest(c.relay->upstream(), c.id * 2 + 1, c.up_events, c.relay->Wanted(c.relay->upstream()));
    return;
  }
  if (Http(c)) PumpHttp(c);
}

void Service::Impl::ReadClient(Conn& c) {
  char buf[16384];
  while (!c.client_eof && !c.refusal && c.to_up.size() < kMaxBuffered) {
    ssize_t n = recv(c.client.get(), buf, sizeof buf, 0);
    if (n < 0 && WouldBlock()) return;
    if (n <= 0) {
      c.client_eof = true;
      return;
    }
    std::string_view in(buf, static_cast<size_t>(n));
    while (!in.empty()) {
      size_t before = c.to_up.size();
      http::RequestFramer::Step s = c.req->Feed(in, c.to_up);
      if (s.head) {
        c.ex.push_back(Exchange{c.req->head(), Clock::now()});
        traffic_[c.b].set_requests(traffic_[c.b].requests() + 1);
        if (c.failed) {
          c.to_up.clear();
          c.refusal = 502;
          return;
        }
        c.resp->Expect(c.req->head().method == "HEAD");
      }
      if (!c.ex.empty() && c.to_up.size() > before) c.ex.back().up += c.to_up.size() - before;
      if (c.req->refusal()) {
        c.refusal = c.req->refusal();
        c.why = c.req->why();
        // The refused request is never sent; it is audited when its refusal is.
        c.ex.push_back(Exchange{c.req->head(), Clock::now()});
        traffic_[c.b].set_requests(traffic_[c.b].requests() + 1);
        return;
      }
      if (s.consumed == 0 && !s.head && !s.done) break;
      in.remove_prefix(s.consumed);
    }
  }
}

void Service::Impl::ReadUpstream(Conn& c) {
  char buf[16384];
  while (!c.up_eof && c.to_client.size() < kMaxBuffered) {
    ssize_t n = c.up->Read(buf, sizeof buf);
    if (n == Upstream::kWouldBlock) return;
    if (n == Upstream::kFailed || n == 0) {
      c.up_eof = true;
      http::ResponseFramer::Step s = c.resp->Eof();
      if (s.done && !c.ex.empty()) {
        Audit(c, c.ex.front(), s.status, "", s.status >= 500 ? "status" : "");
        c.ex.pop_front();
      }
      if (n == Upstream::kFailed) c.why = c.up->error();
      return;
    }
    std::string_view in(buf, static_cast<size_t>(n));
    while (!in.empty()) {
      http::ResponseFramer::Step s = c.resp->Feed(in);
      if (c.resp->malformed()) {
        c.up_eof = true;
        c.why = c.resp->why();
        return;
      }
      c.to_client.append(in.data(), s.consumed);
      if (!c.ex.empty()) c.ex.front().down += s.consumed;
      if (s.done && !c.ex.empty()) {
        Audit(c, c.ex.front(), s.status, "", s.status >= 500 ? "status" : "");
        c.ex.pop_front();
      }
      if (s.consumed == 0 && !s.done) break;
      in.remove_prefix(s.consumed);
    }
  }
}

void Service::Impl::Flush(Conn& c) {
  while (c.up && !c.to_up.empty()) {
    size_t len = egress::Quota(budget_, c.to_up.size());
    if (len == 0) {
      c.fail = "budget";
      break;
    }
    ssize_t n = c.up->Write(c.to_up.data(), len);
    if (n == Upstream::kWouldBlock) break;
    if (n <= 0) {
      c.up_eof = true;
      c.why = c.up->error();
      c.to_up.clear();
      break;
    }
    c.to_up.erase(0, static_cast<size_t>(n));
    // Counted as written: a body may still be going after its response (Audit's `up` is
    // what each request's framing held).
    traffic_[c.b].set_bytes_up(traffic_[c.b].bytes_up() + static_cast<uint64_t>(n));
    if (budget_) budget_->Charge("broker " + brokers_[c.b].name, static_cast<size_t>(n));
  }
  while (!c.to_client.empty()) {
    ssize_t n = send(c.client.get(), c.to_client.data(), c.to_client.size(), MSG_NOSIGNAL);
    if (n < 0 && WouldBlock()) break;
    if (n <= 0) {
      c.client_eof = true;
      c.to_client.clear();
      c.why = "the client went away";
      break;
    }
    c.to_client.erase(0, static_cast<size_t>(n));
  }
}

void Service::Impl::PumpHttp(Conn& c) {
  if (c.state == Conn::kLinger) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(c.client.get(), buf, sizeof buf, 0)) > 0) {
    }
    if (n == 0 || !WouldBlock()) Finish(c.id, "");
    return;
  }
  if (c.state == Conn::kHandshake) {
    if (c.up->Handshake()) {
      c.state = Conn::kOpen;
    } else if (c.up->failed()) {
      c.fail = "tls";
      return UpstreamFailed(c, "TLS to " + brokers_[c.b].to.Str() + ": " + c.up->error());
    }
  }
  ReadClient(c);
  // A request to send: the first is allowed, or one was allowed before a refused one.
  if (c.state == Conn::kAwaiting && c.ex.size() > (c.refusal ? 1u : 0u)) return Connect(c);
  bool open = c.state == Conn::kOpen && c.up;
  if (open) ReadUpstream(c);
  Flush(c);
  if (c.fail == "budget" && c.up) return Finish(c.id, BudgetSpent(), "budget");
  if (open && c.up_eof && c.to_client.empty()) {
    // The target is gone: with nothing asked of it, so is the connection; otherwise
    // UpstreamFailed answers or cuts short what it left unanswered.
    if (c.ex.empty()) return Finish(c.id, "");
    return UpstreamFailed(c, c.why.empty() ? "the target closed before it answered" : c.why);
  }
  if (c.refusal && c.to_client.empty() && c.ex.size() == 1) {
    // Everything before the refused request is answered: now its refusal, then a close.
    Exchange& e = c.ex.back();
    c.to_client = http::Refusal(c.refusal, "brig broker: " + c.why);
    e.down = c.to_client.size();
    Audit(c, e, c.refusal, c.why, c.refusal == 502 ? c.fail : "refused");
    c.ex.clear();
    Flush(c);
    (void)shutdown(c.client.get(), SHUT_WR);
    c.state = Conn::kLinger;
    c.deadline = Clock::now() + kRefusalLinger;
    c.up.reset();
    c.up_events = 0;
    Interest(c.client.get(), c.id * 2, c.client_events, EPOLLIN);
    return;
  }
  if (c.client_eof && c.to_client.empty() && c.ex.empty() && c.req->idle()) {
    return Finish(c.id, "");
  }
  if (c.client_eof && c.to_up.empty() && c.up && !c.up_shut) {
    c.up->ShutdownWrite();
    c.up_shut = true;
  }
  UpdateInterest(c);
}

void Service::Impl::UpdateInterest(Conn& c) {
  uint32_t client = 0, up = 0;
  if (!c.client_eof && !c.refusal && c.to_up.size() < kMaxBuffered) client |= EPOLLIN;
  if (!c.to_client.empty()) client |= EPOLLOUT;
  Interest(c.client.get(), c.id * 2, c.client_events, client);
  if (!c.up) return;
  if (c.state == Conn::kHandshake) {
    up = c.up->Wanted();
  } else {
    if (!c.up_eof && c.to_client.size() < kMaxBuffered) up |= EPOLLIN;
    if (!c.to_up.empty()) up |= EPOLLOUT;
    up |= c.up->Wanted();
  }
  Interest(c.up->fd(), c.id * 2 + 1, c.up_events, up);
}

void Service::Impl::Audit(Conn& c, Exchange& e, int status, const std::string& detail,
                          const std::string& failure) {
  v1::BrokerRequest r;
  r.set_broker(brokers_[c.b].name);
  r.set_method(e.head.method);
  r.set_host(e.head.host);
  r.set_path(e.head.path);
  r.set_status(static_cast<uint32_t>(status));
  r.set_bytes_up(e.up);
  r.set_bytes_down(e.down);
  r.set_duration_us(Micros(Clock::now() - e.start));
  r.set_detail(detail);
  v1::BrokerTraffic& t = traffic_[c.b];
  if (!failure.empty()) {
    t.set_failed(t.failed() + 1);
    std::string what = detail.empty() && status ? "the target answered " + std::to_string(status)
                                                : detail;
    AddFailure(t, failure, what);
  }
  if (!Http(c)) t.set_bytes_up(t.bytes_up() + e.up);  // http: counted in Flush
  t.set_bytes_down(t.bytes_down() + e.down);
  v1::AuditEvent ev;
  *ev.mutable_broker_request() = std::move(r);
  audit_(std::move(ev));
}

void Service::Impl::Finish(uint64_t id, const std::string& detail, const std::string& failure) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (!Http(c)) {
    Exchange e{http::RequestHead{"", brokers_[c.b].to.Str(), ""}, c.start};
    if (c.relay) {
      e.up = c.relay->bytes_up();
      e.down = c.relay->bytes_down();
    }
    Audit(c, e, 0, detail, failure);
  } else {
    DropUnsent(c);
    // A failure after the last response (a body cut off) is one too.
    if (c.ex.empty() && !failure.empty()) {
      c.ex.push_back(Exchange{http::RequestHead{"", brokers_[c.b].to.Str(), ""}, c.start});
    }
    for (Exchange& e : c.ex) {
      Audit(c, e, 0, detail.empty() ? "the connection ended" : detail, failure);
    }
  }
  conns_.erase(it);  // closes both sides, which leaves the epoll set
}

void Service::Impl::Tick() {
  auto now = Clock::now();
  std::vector<std::pair<uint64_t, std::string>> expired;
  for (auto& [id, c] : conns_) {
    if (Spent() && c->state != Conn::kLinger && !c->failed) {
      expired.emplace_back(id, BudgetSpent());
    } else if (c->state == Conn::kConnecting && now >= c->deadline) {
      c->connecting.Reset();
      c->up_events = 0;
      Connect(*c);
    } else if (c->state == Conn::kLinger && now >= c->deadline) {
      expired.emplace_back(id, "");
    }
  }
  for (auto& [id, why] : expired) Finish(id, why, why.empty() ? "" : "budget");
}

void Service::Impl::Close() {
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) Finish(id, "the sandbox ended");
  l_.tcp.clear();
  l_.local.clear();
}

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

Result<std::unique_ptr<Service>> Service::Start(std::vector<Config> brokers, Listeners listeners,
                                                std::string attribution, AuditSink audit,
                                                egress::Budget* budget) {
  auto impl = std::make_unique<Impl>(std::move(brokers), std::move(listeners),
                                     std::move(attribution), std::move(audit), budget);
  BRIG_TRY(impl->Init());
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

int Service::fd() const { return impl_->fd(); }
void Service::Handle() { impl_->Handle(); }
void Service::Close() { impl_->Close(); }
std::vector<v1::BrokerTraffic> Service::Summary() const { return impl_->Summary(); }

}  // namespace brig::broker
