#include "egress/service.h"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>

#include "egress/dns.h"
#include "egress/http.h"
#include "egress/http_relay.h"
#include "egress/pool.h"
#include "egress/relay.h"
#include "egress/tls.h"
#include "egress/upstream.h"
#include "http/framing.h"
#include "net/local_route.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::egress {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Proxied connections at once; each holds two sockets and two pipes, so the supervisor's
// RLIMIT_NOFILE may allow fewer (Init).
constexpr size_t kMaxConnections = 512;
constexpr size_t kFdsPerConnection = 6;
constexpr size_t kMaxDnsTcpClients = 16;
// What a client may send before its name is read: a hello in one-byte records is bigger
// than the hello itself.
constexpr size_t kMaxFirstBytes = 65536;
constexpr auto kFirstBytesTimeout = 10s;
constexpr auto kConnectTimeout = 10s;
constexpr auto kIdleTimeout = 5min;
constexpr auto kDnsTcpIdle = 10s;
// A refused connection waits this long for its client's close, so the refusal is read.
constexpr auto kRefusalLinger = 2s;
constexpr auto kUpstreamTry = 1500ms;
constexpr int kUpstreamTries = 3;
constexpr auto kTick = 250ms;
constexpr uint32_t kAnswerTtl = 60;
// How long an upstream answer is used: its TTL, within these bounds.
constexpr uint32_t kMinCacheTtl = 5, kMaxCacheTtl = 300;
constexpr double kQueriesPerSecond = 100, kQueryBurst = 200;
constexpr size_t kMaxSummaryHosts = 256;
constexpr size_t kMaxCachedNames = 2 * NamePool::kDefaultCapacity;

// epoll tokens below kFirstConn are the service's own sockets; a connection's token is its
// id shifted left by two, or'ed with which of its sockets it is.
enum Token : uint64_t { kHttp = 1, kHttps, kDnsTcp, kDnsUdp, kTimer, kUpstreamUdp, kFirstConn = 16 };
enum Side : uint64_t { kClient = 0, kUpstreamSide = 1, kDnsClient = 2, kUpstreamTcp = 3 };

std::string Ip(uint32_t host_order) { return net::Ipv4{host_order}.Str(); }

std::string QtypeName(uint16_t t) {
  switch (t) {
    case kTypeA: return "A";
    case kTypeAaaa: return "AAAA";
    case kTypeCname: return "CNAME";
    case 2: return "NS";
    case 6: return "SOA";
    case 12: return "PTR";
    case 15: return "MX";
    case 16: return "TXT";
    case 33: return "SRV";
    case 65: return "HTTPS";
    case 255: return "ANY";
  }
  return std::to_string(t);
}

std::string RcodeName(uint8_t r) {
  switch (r) {
    case kRcodeNoError: return "NOERROR";
    case kRcodeServFail: return "SERVFAIL";
    case kRcodeNxDomain: return "NXDOMAIN";
    case kRcodeRefused: return "REFUSED";
  }
  return std::to_string(r);
}

uint32_t Micros(Clock::duration d) {
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}
uint32_t Millis(Clock::duration d) {
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

sockaddr_in Sockaddr(uint32_t addr, uint16_t port) {
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr);
  sa.sin_port = htons(port);
  return sa;
}


}  // namespace

class Service::Impl {
 public:
  Impl(Policy p, const net::Listeners& l, uint32_t sandbox, net::Subnet bridge, AuditSink audit)
      : policy_(std::move(p)), l_(l), sandbox_(sandbox), bridge_(bridge), audit_(std::move(audit)) {
    uint64_t seed = 0;
    (void)!getrandom(&seed, sizeof seed, 0);
    rng_.seed(seed ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
  }

  Status Init();
  int fd() const { return ep_.get(); }
  void Handle();
  void Close();
  v1::NetworkSummary Summary() const;

 private:
  // Who waits for a name's resolution.
  struct Waiter {
    enum Kind { kUdpQuery, kTcpQuery, kProxy } kind;
    uint64_t id = 0;  // the DNS TCP client or the proxied connection
    sockaddr_in from{};
    std::string raw;  // the query, for the reply
    DnsQuery q;
    Clock::time_point start;
  };

  struct Resolution {
    std::string name;
    bool pending = false;
    // The query in flight.
    uint16_t id = 0;
    int tries = 0;
    Clock::time_point deadline;
    std::string query;
    size_t upstream = 0;
    sys::UniqueFd tcp;  // the query again over TCP, after a truncated answer
    std::string tcp_in;
    size_t tcp_sent = 0;
    uint64_t serial = 0;
    // The outcome.
    std::string error;  // no answer at all
    uint8_t rcode = 0;
    std::vector<uint32_t> addrs;  // passed the profile's floor (the host's is asked at use)
    std::vector<std::string> seen, cnames;
    std::string floor;  // why the first refused address was refused
    Clock::time_point expires;
    std::vector<Waiter> waiters;
  };

  struct DnsClient {
    uint64_t id;
    sys::UniqueFd fd;
    std::string in, out;
    int waiting = 0;
    bool eof = false;
    Clock::time_point last;
    uint32_t events = 0;
  };

  struct Conn {
    enum State { kReading, kResolving, kConnecting, kRelaying, kRefusing } state = kReading;
    uint64_t id;
    bool tls;
    sys::UniqueFd client, upstream;  // until the relay takes them
    std::optional<Relay> relay;  // TLS
    // Plain HTTP: the first request's framing (its head in to_up), then its relay.
    std::unique_ptr<http::RequestFramer> framer;
    std::string to_up;
    bool first_is_head = false;
    std::unique_ptr<HttpRelay> http;
    uint32_t client_events = 0, upstream_events = 0;
    std::string buf;
    uint32_t dialed = 0;
    uint16_t port = 0;
    std::string name;
    std::vector<uint32_t> addrs;
    size_t next_addr = 0;
    std::string host_floor;  // why the first address passed over as the host's own was
    size_t host_addrs = 0;   // how many were
    uint32_t address = 0;
    Clock::time_point start, deadline, last;
    uint64_t seen_bytes = 0;
    bool allowed = false;
    std::string reason, detail;
  };

  uint64_t BytesUp(const Conn& c) const {
    return c.relay ? c.relay->bytes_up() : c.http ? c.http->bytes_up() : 0;
  }
  uint64_t BytesDown(const Conn& c) const {
    return c.relay ? c.relay->bytes_down() : c.http ? c.http->bytes_down() : 0;
  }
  void Interest(int fd, uint64_t token, uint32_t& current, uint32_t want);
  void Tick();
  v1::HostTraffic* Host(const std::string& name);

  // Resolver.
  void ReadUdpQueries();
  void AcceptDnsClients();
  void OnDnsClient(DnsClient& c);
  void FlushDnsClient(DnsClient& c);
  void Query(std::string raw, Waiter w);
  void Reply(const Waiter& w, const std::string& reply, v1::DnsQuery& ev);
  void Answer(Waiter& w, const Resolution& r);
  bool PostureAllows(const std::string& name, uint16_t port) const {
    return policy_.open ? !name.empty() : policy_.allowlist.Allows(name, port);
  }
  std::string AllowReason() const { return policy_.open ? "open" : "allowlisted"; }
  // "ADDR: why" if `a` is the host's own, which no profile can except; "" if not.
  std::string HostFloor(uint32_t a);
  // The resolution's addresses that are not the host's own now; `floor` says why the
  // first refused one was refused.
  std::vector<uint32_t> Usable(const Resolution& r, std::string& floor);

  // Upstream.
  void Resolve(const std::string& name, Waiter w);
  void SendUpstream(Resolution& r);
  void ReadUpstreamUdp();
  void StartUpstreamTcp(Resolution& r);
  void OnUpstreamTcp(Resolution& r, uint32_t events);
  void Complete(Resolution& r, const DnsAnswer* answer, std::string error);

  // Proxy.
  void Accept(int listener, bool tls);
  void OnClient(Conn& c, uint32_t events);
  Peek<HostPort> FrameFirstRequest(Conn& c);
  void OnUpstream(Conn& c, uint32_t events);
  void Decide(Conn& c);
  void Resolved(Conn& c, const Resolution& r);
  void TryConnect(Conn& c);
  void StartRelay(Conn& c);
  void Pump(Conn& c);
  void Refuse(Conn& c, const std::string& reason, const std::string& detail);
  void Linger(Conn& c);
  void Finish(uint64_t id);

  Policy policy_;
  http::Rules http_rules_;  // the proxy's: none of a broker's, the client's Host goes on
  const net::Listeners& l_;
  uint32_t sandbox_;
  net::Subnet bridge_;
  net::LocalRoutes local_;
  AuditSink audit_;
  sys::UniqueFd ep_, timer_, udp_;
  std::mt19937_64 rng_;
  NamePool pool_;
  TokenBucket bucket_{kQueriesPerSecond, kQueryBurst};
  uint32_t dropped_since_audit_ = 0;
  Clock::time_point last_drop_audit_;

  std::unordered_map<std::string, Resolution> cache_;
  std::unordered_map<uint16_t, std::string> inflight_;  // query id: name
  std::unordered_map<uint64_t, std::string> tcp_serials_;  // upstream TCP serial: name
  std::unordered_map<uint64_t, DnsClient> dns_clients_;
  std::unordered_map<uint64_t, Conn> conns_;
  uint64_t next_id_ = kFirstConn;
  size_t max_conns_ = kMaxConnections;

  std::map<std::string, v1::HostTraffic> hosts_;
  v1::NetworkSummary totals_;
};

Status Service::Impl::Init() {
  // Room for the connections: the soft limit up to the hard one, and no more connections
  // than fit, so accept never fails for want of a descriptor.
  rlimit nofile = {};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    rlim_t want = 64 + kMaxConnections * kFdsPerConnection;
    if (nofile.rlim_cur < want) {
      nofile.rlim_cur = std::min(want, nofile.rlim_max);
      (void)setrlimit(RLIMIT_NOFILE, &nofile);
    }
    max_conns_ = std::min<size_t>(kMaxConnections,
                                  nofile.rlim_cur > 128 ? (nofile.rlim_cur - 128) / kFdsPerConnection : 1);
  }
  local_ = BRIG_TRY(net::LocalRoutes::Open());
  ep_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!ep_) return SysError("epoll_create1", "egress");
  timer_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer_) return SysError("timerfd_create", "egress");
  itimerspec its = {};
  its.it_interval.tv_nsec = std::chrono::nanoseconds(kTick).count();
  its.it_value = its.it_interval;
  if (timerfd_settime(timer_.get(), 0, &its, nullptr) < 0) return SysError("timerfd_settime");
  udp_.Reset(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!udp_) return SysError("socket", "resolver upstream");
  sockaddr_in any = Sockaddr(INADDR_ANY, 0);
  if (bind(udp_.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) < 0) {
    return SysError("bind", "resolver upstream");
  }
  std::pair<int, uint64_t> fds[] = {{l_.http(), kHttp},     {l_.https(), kHttps},
                                    {l_.dns_tcp(), kDnsTcp}, {l_.dns_udp(), kDnsUdp},
                                    {timer_.get(), kTimer},  {udp_.get(), kUpstreamUdp}};
  for (auto [fd, token] : fds) {
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return SysError("epoll_ctl", "egress");
  }
  return {};
}

void Service::Impl::Interest(int fd, uint64_t token, uint32_t& current, uint32_t want) {
  sys::EpollInterest(ep_.get(), fd, token, current, want);
}

v1::HostTraffic* Service::Impl::Host(const std::string& name) {
  std::string key = name.empty() ? "(no name)" : name;
  auto it = hosts_.find(key);
  if (it == hosts_.end()) {
    if (hosts_.size() >= kMaxSummaryHosts) return nullptr;
    it = hosts_.emplace(key, v1::HostTraffic()).first;
    it->second.set_name(key);
  }
  return &it->second;
}

void Service::Impl::Handle() {
  epoll_event evs[64];
  int n = epoll_wait(ep_.get(), evs, 64, 0);
  for (int i = 0; i < n; ++i) {
    uint64_t token = evs[i].data.u64;
    uint32_t events = evs[i].events;
    switch (token) {
      case kHttp: Accept(l_.http(), false); continue;
      case kHttps: Accept(l_.https(), true); continue;
      case kDnsTcp: AcceptDnsClients(); continue;
      case kDnsUdp: ReadUdpQueries(); continue;
      case kTimer: {
        uint64_t ticks;
        (void)!read(timer_.get(), &ticks, sizeof ticks);
        Tick();
        continue;
      }
      case kUpstreamUdp: ReadUpstreamUdp(); continue;
      default: break;
    }
    uint64_t id = token >> 2;
    switch (token & 3) {
      case kClient:
        if (auto it = conns_.find(id); it != conns_.end()) OnClient(it->second, events);
        break;
      case kUpstreamSide:
        if (auto it = conns_.find(id); it != conns_.end()) OnUpstream(it->second, events);
        break;
      case kDnsClient:
        if (auto it = dns_clients_.find(id); it != dns_clients_.end()) OnDnsClient(it->second);
        break;
      case kUpstreamTcp:
        if (auto it = tcp_serials_.find(id); it != tcp_serials_.end()) {
          if (auto r = cache_.find(it->second); r != cache_.end()) OnUpstreamTcp(r->second, events);
        }
        break;
    }
  }
}

void Service::Impl::Tick() {
  auto now = Clock::now();
  for (auto& [name, r] : cache_) {
    if (r.pending && !r.tcp && now >= r.deadline) {
      if (r.tries >= kUpstreamTries) {
        Complete(r, nullptr, "no answer from " + std::to_string(policy_.upstreams.size()) +
                                 " upstream(s) in " + std::to_string(kUpstreamTries) + " tries");
      } else {
        r.upstream = (r.upstream + 1) % policy_.upstreams.size();
        SendUpstream(r);
      }
    } else if (r.pending && r.tcp && now >= r.deadline) {
      Complete(r, nullptr, "no answer over TCP from " + policy_.upstreams[r.upstream].Str());
    }
  }
  // Answers are kept while they are fresh; past kMaxCachedNames, stale ones go (a name the
  // pool holds is resolved again when next used).
  if (cache_.size() > kMaxCachedNames) {
    std::erase_if(cache_, [&](const auto& kv) {
      return !kv.second.pending && kv.second.waiters.empty() && now >= kv.second.expires;
    });
  }
  std::vector<uint64_t> expired;
  for (auto& [id, c] : conns_) {
    if (c.state == Conn::kRelaying) {
      uint64_t bytes = BytesUp(c) + BytesDown(c);
      if (bytes != c.seen_bytes) {
        c.seen_bytes = bytes;
        c.last = now;
      } else if (now - c.last >= kIdleTimeout) {
        c.detail = "idle for " + std::to_string(Millis(kIdleTimeout) / 1000) + " s";
        expired.push_back(id);
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
        expired.push_back(id);
      }
    }
  }
  for (uint64_t id : expired) Finish(id);
  std::vector<uint64_t> idle;
  for (auto& [id, d] : dns_clients_) {
    if (d.waiting == 0 && now - d.last >= kDnsTcpIdle) idle.push_back(id);
  }
  for (uint64_t id : idle) dns_clients_.erase(id);
}

// ---- resolver: the sandbox's side -----------------------------------------------------

void Service::Impl::ReadUdpQueries() {
  for (int i = 0; i < 64; ++i) {
    char buf[1500];
    sockaddr_in from = {};
    socklen_t len = sizeof from;
    ssize_t got = recvfrom(l_.dns_udp(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (got < 0) return;
    if (ntohl(from.sin_addr.s_addr) != sandbox_) continue;  // not this sandbox's
    Waiter w{Waiter::kUdpQuery};
    w.from = from;
    w.start = Clock::now();
    Query(std::string(buf, static_cast<size_t>(got)), std::move(w));
  }
}

void Service::Impl::AcceptDnsClients() {
  for (;;) {
    sockaddr_in peer = {};
    socklen_t len = sizeof peer;
    sys::UniqueFd fd(accept4(l_.dns_tcp(), reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    if (ntohl(peer.sin_addr.s_addr) != sandbox_ || dns_clients_.size() >= kMaxDnsTcpClients) continue;
    uint64_t id = next_id_++;
    DnsClient& c = dns_clients_[id];
    c.id = id;
    c.fd = std::move(fd);
    c.last = Clock::now();
    Interest(c.fd.get(), id << 2 | kDnsClient, c.events, EPOLLIN);
  }
}

void Service::Impl::OnDnsClient(DnsClient& c) {
  c.last = Clock::now();
  char buf[4096];
  for (;;) {
    ssize_t n = recv(c.fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > 65537) {
        c.eof = true;  // no one message is this long: not DNS
        break;
      }
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c.eof = true;
    break;
  }
  uint64_t id = c.id;
  while (auto msg = NextTcpMessage(c.in)) {
    std::string raw(*msg);
    c.in.erase(0, 2 + raw.size());
    ++c.waiting;
    Waiter w{Waiter::kTcpQuery};
    w.id = id;
    w.start = Clock::now();
    Query(std::move(raw), std::move(w));
    if (dns_clients_.find(id) == dns_clients_.end()) return;
  }
  FlushDnsClient(dns_clients_.at(id));
}

void Service::Impl::FlushDnsClient(DnsClient& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.eof && c.waiting == 0 && c.out.empty()) {
    dns_clients_.erase(c.id);
    return;
  }
  uint32_t want = (c.eof ? 0u : uint32_t{EPOLLIN}) | (c.out.empty() ? 0u : uint32_t{EPOLLOUT});
  Interest(c.fd.get(), c.id << 2 | kDnsClient, c.events, want);
}

void Service::Impl::Query(std::string raw, Waiter w) {
  v1::DnsQuery ev;
  ev.set_transport(w.kind == Waiter::kUdpQuery ? "udp" : "tcp");
  if (!bucket_.Take(w.start)) {
    // Dropped unanswered: a client retries, a flood gets nowhere. One audit line a second
    // says how many.
    totals_.set_rate_limited(totals_.rate_limited() + 1);
    ++dropped_since_audit_;
    if (w.start - last_drop_audit_ >= 1s) {
      ev.set_reason("rate_limited");
      ev.set_detail(std::to_string(dropped_since_audit_) + " queries dropped since the last such line");
      dropped_since_audit_ = 0;
      last_drop_audit_ = w.start;
      v1::AuditEvent e;
      *e.mutable_dns_query() = std::move(ev);
      audit_(std::move(e));
    }
    if (w.kind == Waiter::kTcpQuery) {
      if (auto it = dns_clients_.find(w.id); it != dns_clients_.end()) --it->second.waiting;
    }
    return;
  }
  auto q = ParseQuery(raw);
  if (!q) {
    // Nothing to answer: a reply needs a question to echo.
    ev.set_reason("malformed");
    ev.set_detail(q.error().detail);
    Reply(w, {}, ev);
    return;
  }
  w.q = *q;
  w.raw = std::move(raw);
  ev.set_name(q->name);
  ev.set_qtype(QtypeName(q->qtype));
  if (q->name.empty()) {
    ev.set_reason("not_a_name");
    ev.set_detail("the question is no host name brig resolves");
    Reply(w, BuildNxdomain(*q, w.raw), ev);
    return;
  }
  if (!PostureAllows(q->name, 0)) {
    ev.set_reason("not_allowlisted");
    Reply(w, BuildNxdomain(*q, w.raw), ev);
    return;
  }
  ev.set_allowed(true);
  if (q->qclass != kClassIn || q->qtype != kTypeA) {
    ev.set_reason("qtype");
    ev.set_detail(q->qtype == kTypeAaaa ? "IPv6 is off in the sandbox: no AAAA records"
                                        : "brig answers A queries only");
    Reply(w, BuildEmpty(*q, w.raw), ev);
    return;
  }
  if (!pool_.Has(q->name) && pool_.full()) {
    ev.set_allowed(false);
    ev.set_reason("pool_full");
    ev.set_detail("the sandbox has resolved " + std::to_string(pool_.size()) + " names already");
    Reply(w, BuildRefused(*q, w.raw), ev);
    return;
  }
  std::string name = q->name;
  Resolve(name, std::move(w));
}

void Service::Impl::Answer(Waiter& w, const Resolution& r) {
  if (w.kind == Waiter::kProxy) {
    if (auto it = conns_.find(w.id); it != conns_.end()) Resolved(it->second, r);
    return;
  }
  v1::DnsQuery ev;
  ev.set_transport(w.kind == Waiter::kUdpQuery ? "udp" : "tcp");
  ev.set_name(w.q.name);
  ev.set_qtype(QtypeName(w.q.qtype));
  ev.set_allowed(true);
  ev.set_reason(AllowReason());
  for (const auto& s : r.seen) ev.add_addresses(s);
  for (const auto& s : r.cnames) ev.add_cnames(s);
  std::string reply, floor = r.floor;
  std::vector<uint32_t> addrs = Usable(r, floor);
  if (!r.error.empty()) {
    ev.set_reason("upstream_failed");
    ev.set_detail(r.error);
    reply = BuildServfail(w.q, w.raw);
  } else if (r.rcode != kRcodeNoError) {
    ev.set_detail("the upstream answered " + RcodeName(r.rcode));
    reply = r.rcode == kRcodeNxDomain ? BuildNxdomain(w.q, w.raw) : BuildServfail(w.q, w.raw);
  } else if (addrs.empty() && !floor.empty()) {
    ev.set_allowed(false);
    ev.set_reason("floor");
    ev.set_detail(floor);
    reply = BuildRefused(w.q, w.raw);
  } else if (addrs.empty()) {
    ev.set_detail("the upstream has no A record");
    reply = BuildEmpty(w.q, w.raw);
  } else if (auto a = pool_.AddressFor(w.q.name)) {
    ev.set_answer(Ip(*a));
    Ipv4Bytes b = {static_cast<uint8_t>(*a >> 24), static_cast<uint8_t>(*a >> 16),
                   static_cast<uint8_t>(*a >> 8), static_cast<uint8_t>(*a)};
    reply = BuildAddressAnswer(w.q, w.raw, std::vector<Ipv4Bytes>{b}, kAnswerTtl);
  } else {
    ev.set_allowed(false);
    ev.set_reason("pool_full");
    ev.set_detail("the sandbox has resolved " + std::to_string(pool_.size()) + " names already");
    reply = BuildRefused(w.q, w.raw);
  }
  Reply(w, reply, ev);
}

std::string Service::Impl::HostFloor(uint32_t a) {
  std::string why;
  if (a == bridge_.Gateway().v) {
    why = "brig's bridge gateway, an address of this host";
  } else if (bridge_.Contains(net::Ipv4{a})) {
    why = "in brig's bridge subnet " + bridge_.Str();
  } else if (auto local = local_.IsLocal(net::Ipv4{a}); !local) {
    why = "cannot tell whether it is an address of this host: " + local.error().Render();
  } else if (*local) {
    why = "an address of this host";
  }
  return why.empty() ? why : Ip(a) + ": " + why;
}

std::vector<uint32_t> Service::Impl::Usable(const Resolution& r, std::string& floor) {
  std::vector<uint32_t> out;
  bool host = false;
  for (uint32_t a : r.addrs) {
    std::string why = HostFloor(a);
    if (why.empty()) {
      out.push_back(a);
    } else if (!host) {
      host = true;
      floor = std::move(why);
    }
  }
  return out;
}

void Service::Impl::Reply(const Waiter& w, const std::string& reply, v1::DnsQuery& ev) {
  if (!reply.empty()) {
    if (w.kind == Waiter::kUdpQuery) {
      (void)sendto(l_.dns_udp(), reply.data(), reply.size(), 0,
                   reinterpret_cast<const sockaddr*>(&w.from), sizeof w.from);
    } else if (auto it = dns_clients_.find(w.id); it != dns_clients_.end()) {
      it->second.out += FrameTcp(reply);
    }
    ev.set_rcode(RcodeName(static_cast<uint8_t>(reply[3]) & 0x0f));
  }
  ev.set_duration_us(Micros(Clock::now() - w.start));
  totals_.set_queries(totals_.queries() + 1);
  if (!ev.allowed()) totals_.set_denied(totals_.denied() + 1);
  if (v1::HostTraffic* h = Host(ev.name())) {
    h->set_queries(h->queries() + 1);
    if (!ev.allowed()) h->set_denied(h->denied() + 1);
  }
  v1::AuditEvent e;
  *e.mutable_dns_query() = std::move(ev);
  audit_(std::move(e));
  if (w.kind == Waiter::kTcpQuery) {
    if (auto it = dns_clients_.find(w.id); it != dns_clients_.end()) {
      --it->second.waiting;
      FlushDnsClient(it->second);
    }
  }
}

// ---- resolver: the upstream's side ----------------------------------------------------

void Service::Impl::Resolve(const std::string& name, Waiter w) {
  auto now = Clock::now();
  Resolution& r = cache_[name];
  if (!r.pending && !r.name.empty() && now < r.expires) {
    Answer(w, r);
    return;
  }
  r.waiters.push_back(std::move(w));
  if (r.pending) return;
  r.name = name;
  r.pending = true;
  r.tries = 0;
  r.upstream = 0;
  SendUpstream(r);
}

void Service::Impl::SendUpstream(Resolution& r) {
  if (r.id != 0) inflight_.erase(r.id);
  uint16_t id;
  do {
    id = static_cast<uint16_t>(rng_());
  } while (id == 0 || inflight_.count(id) != 0);
  r.id = id;
  inflight_[id] = r.name;
  r.query = BuildQuery(id, r.name, kTypeA);
  ++r.tries;
  r.deadline = Clock::now() + kUpstreamTry;
  const Upstream& u = policy_.upstreams[r.upstream];
  sockaddr_in to = Sockaddr(u.addr, u.port);
  // A failed send is one more try that the deadline ends.
  (void)sendto(udp_.get(), r.query.data(), r.query.size(), 0, reinterpret_cast<sockaddr*>(&to),
               sizeof to);
}

void Service::Impl::ReadUpstreamUdp() {
  for (int i = 0; i < 64; ++i) {
    char buf[4096];
    sockaddr_in from = {};
    socklen_t len = sizeof from;
    ssize_t got = recvfrom(udp_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (got < 0) return;
    if (got < 2) continue;
    uint16_t id = static_cast<uint16_t>(static_cast<uint8_t>(buf[0]) << 8 | static_cast<uint8_t>(buf[1]));
    auto in = inflight_.find(id);
    if (in == inflight_.end()) continue;
    auto it = cache_.find(in->second);
    if (it == cache_.end() || !it->second.pending || it->second.tcp) continue;
    Resolution& r = it->second;
    const Upstream& u = policy_.upstreams[r.upstream];
    // Only the server asked answers; anything else is noise or a spoofing attempt.
    if (ntohl(from.sin_addr.s_addr) != u.addr || ntohs(from.sin_port) != u.port) continue;
    auto answer = ParseAddressAnswer(std::string_view(buf, static_cast<size_t>(got)), id, r.name, kTypeA);
    if (!answer) continue;
    if (answer->truncated) {
      StartUpstreamTcp(r);
    } else {
      Complete(r, &*answer, {});
    }
  }
}

void Service::Impl::StartUpstreamTcp(Resolution& r) {
  const Upstream& u = policy_.upstreams[r.upstream];
  r.tcp.Reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in to = Sockaddr(u.addr, u.port);
  if (!r.tcp || (connect(r.tcp.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) < 0 &&
                 errno != EINPROGRESS)) {
    Complete(r, nullptr, "cannot reach " + u.Str() + " over TCP for a truncated answer");
    return;
  }
  r.serial = next_id_++;
  tcp_serials_[r.serial] = r.name;
  r.query = FrameTcp(r.query);
  r.tcp_sent = 0;
  r.tcp_in.clear();
  r.deadline = Clock::now() + kUpstreamTry * 2;
  epoll_event ev = {};
  ev.events = EPOLLOUT | EPOLLIN;
  ev.data.u64 = r.serial << 2 | kUpstreamTcp;
  (void)epoll_ctl(ep_.get(), EPOLL_CTL_ADD, r.tcp.get(), &ev);
}

void Service::Impl::OnUpstreamTcp(Resolution& r, uint32_t events) {
  std::string fail = "the upstream's TCP answer failed";
  if (events & EPOLLERR) return Complete(r, nullptr, fail);
  while (r.tcp_sent < r.query.size()) {
    ssize_t n = send(r.tcp.get(), r.query.data() + r.tcp_sent, r.query.size() - r.tcp_sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return Complete(r, nullptr, fail);
    }
    r.tcp_sent += static_cast<size_t>(n);
  }
  char buf[4096];
  for (;;) {
    ssize_t n = recv(r.tcp.get(), buf, sizeof buf, 0);
    if (n > 0) {
      r.tcp_in.append(buf, static_cast<size_t>(n));
      if (r.tcp_in.size() > 65537) return Complete(r, nullptr, fail);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (!NextTcpMessage(r.tcp_in)) return Complete(r, nullptr, fail);
    break;
  }
  if (auto msg = NextTcpMessage(r.tcp_in)) {
    auto answer = ParseAddressAnswer(*msg, r.id, r.name, kTypeA);
    if (!answer || answer->truncated) return Complete(r, nullptr, fail);
    Complete(r, &*answer, {});
    return;
  }
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = r.serial << 2 | kUpstreamTcp;
  (void)epoll_ctl(ep_.get(), EPOLL_CTL_MOD, r.tcp.get(), &ev);
}

void Service::Impl::Complete(Resolution& r, const DnsAnswer* answer, std::string error) {
  inflight_.erase(r.id);
  r.id = 0;
  if (r.serial) tcp_serials_.erase(r.serial);
  r.serial = 0;
  r.tcp.Reset();
  r.pending = false;
  r.error = std::move(error);
  r.rcode = answer ? answer->rcode : kRcodeServFail;
  r.addrs.clear();
  r.seen.clear();
  r.cnames = answer ? answer->cnames : std::vector<std::string>();
  r.floor.clear();
  uint32_t ttl = kMinCacheTtl;
  if (answer) {
    for (const Ipv4Bytes& b : answer->a) {
      uint32_t v = static_cast<uint32_t>(b[0]) << 24 | static_cast<uint32_t>(b[1]) << 16 |
                   static_cast<uint32_t>(b[2]) << 8 | b[3];
      r.seen.push_back(Ip(v));
      std::string why = policy_.floor.Refuses(FromIpv4(v));
      if (why.empty()) {
        r.addrs.push_back(v);
      } else if (r.floor.empty()) {
        r.floor = Ip(v) + ": " + why;
      }
    }
    ttl = std::clamp(answer->ttl, kMinCacheTtl, kMaxCacheTtl);
  }
  // A failure is not kept: the next query asks again.
  r.expires = Clock::now() + (r.error.empty() ? std::chrono::seconds(ttl) : 0s);
  std::vector<Waiter> waiters = std::move(r.waiters);
  r.waiters.clear();
  std::string name = r.name;
  for (Waiter& w : waiters) {
    auto it = cache_.find(name);
    if (it == cache_.end()) break;
    Answer(w, it->second);
  }
}

// ---- proxy ------------------------------------------------------------------------------

void Service::Impl::Accept(int listener, bool tls) {
  for (;;) {
    sockaddr_in peer = {};
    socklen_t len = sizeof peer;
    sys::UniqueFd fd(accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    if (ntohl(peer.sin_addr.s_addr) != sandbox_) continue;  // not this sandbox's: closed
    uint64_t id = next_id_++;
    Conn& c = conns_[id];
    c.id = id;
    c.tls = tls;
    c.client = std::move(fd);
    c.start = c.last = Clock::now();
    c.deadline = c.start + kFirstBytesTimeout;
    sockaddr_in orig = {};
    socklen_t olen = sizeof orig;
    if (getsockopt(c.client.get(), SOL_IP, SO_ORIGINAL_DST, &orig, &olen) == 0) {
      c.dialed = ntohl(orig.sin_addr.s_addr);
      c.port = ntohs(orig.sin_port);
    }
    if (conns_.size() > max_conns_) {
      Refuse(c, "too_many", std::to_string(max_conns_) + " connections are open already");
      continue;
    }
    if (c.port == 0) {
      Refuse(c, "not_from_resolver", "the connection was not redirected by brig's rules");
      continue;
    }
    Interest(c.client.get(), id << 2 | kClient, c.client_events, EPOLLIN);
  }
}

void Service::Impl::OnClient(Conn& c, uint32_t events) {
  if (c.state == Conn::kRelaying) return Pump(c);
  if (c.state == Conn::kRefusing) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(c.client.get(), buf, sizeof buf, 0)) > 0) {
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) Finish(c.id);
    return;
  }
  if (c.state != Conn::kReading) return;
  bool eof = false;
  char buf[4096];
  while (c.buf.size() < kMaxFirstBytes) {
    ssize_t n = recv(c.client.get(), buf, std::min(sizeof buf, kMaxFirstBytes - c.buf.size()), 0);
    if (n > 0) {
      c.buf.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || (events & EPOLLERR)) eof = true;
    break;
  }
  PeekStatus status;
  std::string why;
  bool address = false;
  if (c.tls) {
    HelloParse p = ParseClientHello(c.buf);
    status = p.status;
    why = p.why;
    address = p.address;
    if (status == PeekStatus::kOk) {
      if (p.value.ech || p.value.esni) {
        c.name = p.value.sni;
        return Refuse(c, "ech", "the ClientHello carries an encrypted_client_hello extension: "
                                "brig cannot check a hidden name");
      }
      c.name = p.value.sni;
      if (c.name.empty()) return Refuse(c, "no_sni", "the ClientHello names no server");
    }
  } else {
    if (!c.framer) c.framer = std::make_unique<http::RequestFramer>(&http_rules_);
    Peek<HostPort> p = FrameFirstRequest(c);
    if (c.framer->refusal() == 501) return Refuse(c, "unsupported", p.why);
    status = p.status;
    why = p.why;
    address = p.address;
    if (status == PeekStatus::kOk) {
      c.name = p.value.name;
      if (p.value.port != 0 && p.value.port != c.port) {
        return Refuse(c, "name_mismatch", "the Host names port " + std::to_string(p.value.port) +
                                              ", the connection is to port " + std::to_string(c.port));
      }
    }
  }
  if (status == PeekStatus::kMalformed && address) return Refuse(c, "ip_literal", why);
  if (status == PeekStatus::kMalformed) {
    bool not_tls = c.tls && !c.buf.empty() && c.buf[0] != 0x16;
    return Refuse(c, not_tls ? "not_tls" : "malformed", why);
  }
  if (status == PeekStatus::kNeedMore) {
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

// Frames the client's bytes up to the end of its first request head, which names the host
// the connection is for: kNeedMore until then, kMalformed if the framing refused it.
Peek<HostPort> Service::Impl::FrameFirstRequest(Conn& c) {
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

void Service::Impl::Decide(Conn& c) {
  if (!PostureAllows(c.name, c.port)) {
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
  c.state = Conn::kResolving;
  Interest(c.client.get(), c.id << 2 | kClient, c.client_events, 0);
  Waiter w{Waiter::kProxy};
  w.id = c.id;
  w.start = Clock::now();
  Resolve(c.name, std::move(w));
}

void Service::Impl::Resolved(Conn& c, const Resolution& r) {
  if (c.state != Conn::kResolving) return;
  if (!r.error.empty()) return Refuse(c, "upstream_failed", r.error);
  if (r.addrs.empty()) {
    if (!r.floor.empty()) return Refuse(c, "floor", r.floor);
    return Refuse(c, "upstream_failed", "the name has no usable address now");
  }
  c.addrs = r.addrs;
  c.next_addr = 0;
  TryConnect(c);
}

void Service::Impl::TryConnect(Conn& c) {
  while (c.next_addr < c.addrs.size()) {
    uint32_t a = c.addrs[c.next_addr++];
    // Asked again at each connect: the address may have become the host's since it was
    // resolved.
    if (std::string why = HostFloor(a); !why.empty()) {
      if (c.host_floor.empty()) c.host_floor = std::move(why);
      ++c.host_addrs;
      continue;
    }
    sys::UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
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
    Interest(c.upstream.get(), c.id << 2 | kUpstreamSide, c.upstream_events, EPOLLOUT);
    return;
  }
  if (c.host_addrs == c.addrs.size()) return Refuse(c, "floor", c.host_floor);
  std::string tried;
  for (uint32_t a : c.addrs) tried += (tried.empty() ? "" : ", ") + Ip(a);
  Refuse(c, "upstream_failed", "cannot connect to " + tried + " port " + std::to_string(c.port));
}

void Service::Impl::OnUpstream(Conn& c, uint32_t events) {
  if (c.state == Conn::kRelaying) return Pump(c);
  if (c.state != Conn::kConnecting) return;
  (void)events;
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

void Service::Impl::StartRelay(Conn& c) {
  if (c.tls) {
    auto relay = Relay::Start(std::move(c.client), std::move(c.upstream), std::move(c.buf));
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
                                         std::move(c.buf), c.first_is_head, c.name, c.port);
  }
  c.state = Conn::kRelaying;
  c.allowed = true;
  c.reason = AllowReason();
  c.last = Clock::now();
  Pump(c);
}

void Service::Impl::Pump(Conn& c) {
  if (c.http) {
    if (!c.http->Pump()) {
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
    Interest(c.http->client(), c.id << 2 | kClient, c.client_events,
             c.http->Wanted(c.http->client()));
    Interest(c.http->upstream(), c.id << 2 | kUpstreamSide, c.upstream_events,
             c.http->Wanted(c.http->upstream()));
    return;
  }
  if (!c.relay->Pump()) {
    if (c.relay->failed()) c.detail = "a side reset the connection";
    Finish(c.id);
    return;
  }
  Interest(c.relay->client(), c.id << 2 | kClient, c.client_events, c.relay->Wanted(c.relay->client()));
  Interest(c.relay->upstream(), c.id << 2 | kUpstreamSide, c.upstream_events,
           c.relay->Wanted(c.relay->upstream()));
}

void Service::Impl::Refuse(Conn& c, const std::string& reason, const std::string& detail) {
  c.reason = reason;
  c.detail = detail;
  c.allowed = false;
  c.upstream.Reset();
  c.upstream_events = 0;
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

void Service::Impl::Linger(Conn& c) {
  // A FIN after the refusal; the socket stays until the client closes too, so what the
  // client sent meanwhile cannot turn the close into a reset that loses the refusal.
  (void)shutdown(c.client.get(), SHUT_WR);
  c.state = Conn::kRefusing;
  c.deadline = Clock::now() + kRefusalLinger;
  Interest(c.client.get(), c.id << 2 | kClient, c.client_events, EPOLLIN);
}

void Service::Impl::Finish(uint64_t id) {
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
  if (c.allowed) {
    totals_.set_connections(totals_.connections() + 1);
  } else {
    totals_.set_denied(totals_.denied() + 1);
  }
  if (v1::HostTraffic* h = Host(c.name)) {
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
  audit_(std::move(e));
}

void Service::Impl::Close() {
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) {
    ids.push_back(id);
    if (c.detail.empty()) c.detail = "the sandbox ended";
  }
  for (uint64_t id : ids) Finish(id);
  dns_clients_.clear();
}

v1::NetworkSummary Service::Impl::Summary() const {
  v1::NetworkSummary s = totals_;
  for (const auto& [name, h] : hosts_) *s.add_hosts() = h;
  return s;
}

// ---- Service ----------------------------------------------------------------------------

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

Result<std::unique_ptr<Service>> Service::Start(Policy policy, const net::Listeners& listeners,
                                                uint32_t sandbox, net::Subnet bridge,
                                                AuditSink audit) {
  if (policy.upstreams.empty()) {
    return Fail("resolver upstream", "", "none given", ErrorKind::kInternal);
  }
  auto impl = std::make_unique<Impl>(std::move(policy), listeners, sandbox, bridge, std::move(audit));
  BRIG_TRY(impl->Init());
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

int Service::fd() const { return impl_->fd(); }
void Service::Handle() { impl_->Handle(); }
void Service::Close() { impl_->Close(); }
v1::NetworkSummary Service::Summary() const { return impl_->Summary(); }

}  // namespace brig::egress
