#include "egress/upstream_client.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "egress/pool.h"
#include "net/upstream_socket.h"

namespace brig::egress {
namespace {

using namespace std::chrono_literals;

constexpr auto kUpstreamTry = 1500ms;
constexpr int kUpstreamTries = 3;
// How long an upstream answer is used: its TTL, within these bounds.
constexpr uint32_t kMinCacheTtl = 5, kMaxCacheTtl = 300;
constexpr size_t kMaxCachedNames = 2 * NamePool::kDefaultCapacity;

}  // namespace

UpstreamClient::UpstreamClient(const Policy& policy, Loop& loop, Budget* budget)
    : policy_(policy), loop_(loop), budget_(budget) {
  uint64_t seed = 0;
  (void)!getrandom(&seed, sizeof seed, 0);
  rng_.seed(seed ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
}

Status UpstreamClient::Open() {
  udp_.Reset(net::UpstreamSocket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!udp_) return SysError("socket", "resolver upstream");
  sockaddr_in any = Sockaddr(INADDR_ANY, 0);
  if (bind(udp_.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) < 0) {
    return SysError("bind", "resolver upstream");
  }
  return loop_.Add(udp_.get(), kUpstreamUdp);
}

void UpstreamClient::Tick(Clock::time_point now) {
  for (auto& [name, e] : cache_) {
    if (e.pending && !e.tcp && now >= e.deadline) {
      if (e.tries >= kUpstreamTries) {
        Complete(e, nullptr, "no answer from " + std::to_string(policy_.upstreams.size()) +
                                 " upstream(s) in " + std::to_string(kUpstreamTries) + " tries");
      } else {
        e.upstream = (e.upstream + 1) % policy_.upstreams.size();
        Send(e);
      }
    } else if (e.pending && e.tcp && now >= e.deadline) {
      Complete(e, nullptr, "no answer over TCP from " + policy_.upstreams[e.upstream].Str());
    }
  }
  // Answers are kept while they are fresh; past kMaxCachedNames, stale ones go (a name the
  // pool holds is resolved again when next used).
  if (cache_.size() > kMaxCachedNames) {
    std::erase_if(cache_, [&](const auto& kv) {
      return !kv.second.pending && kv.second.waiters.empty() && now >= kv.second.expires;
    });
  }
}

void UpstreamClient::Resolve(const std::string& name, Done done) {
  auto now = Clock::now();
  Entry& e = cache_[name];
  if (!e.pending && !e.r.name.empty() && now < e.expires) {
    done(e.r);
    return;
  }
  e.waiters.push_back(std::move(done));
  if (e.pending) return;
  e.r.name = name;
  e.pending = true;
  e.tries = 0;
  e.upstream = 0;
  Send(e);
}

void UpstreamClient::Send(Entry& e) {
  if (e.id != 0) inflight_.erase(e.id);
  uint16_t id;
  do {
    id = static_cast<uint16_t>(rng_());
  } while (id == 0 || inflight_.count(id) != 0);
  e.id = id;
  inflight_[id] = e.r.name;
  e.query = BuildQuery(id, e.r.name, kTypeA);
  ++e.tries;
  e.deadline = Clock::now() + kUpstreamTry;
  if (!Afford(e, e.query.size())) return OverBudget(e);
  const Upstream& u = policy_.upstreams[e.upstream];
  sockaddr_in to = Sockaddr(u.addr, u.port);
  // A failed send is one more try that the deadline ends.
  (void)sendto(udp_.get(), e.query.data(), e.query.size(), 0, reinterpret_cast<sockaddr*>(&to),
               sizeof to);
}

bool UpstreamClient::Afford(const Entry& e, size_t n) {
  if (!budget_) return true;
  if (budget_->Allow(n) < n) {
    budget_->Exceed();
    return false;
  }
  budget_->Charge(e.r.name, n);
  return true;
}

void UpstreamClient::OverBudget(Entry& e) {
  Complete(e, nullptr,
           "the phase's egress budget of " + std::to_string(budget_->limit()) +
               " bytes is spent (--egress-budget, limits.egress_bytes)",
           true);
}

void UpstreamClient::ReadUdp() {
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
    Entry& e = it->second;
    const Upstream& u = policy_.upstreams[e.upstream];
    // Only the server asked answers; anything else is noise or a spoofing attempt.
    if (ntohl(from.sin_addr.s_addr) != u.addr || ntohs(from.sin_port) != u.port) continue;
    auto answer = ParseAddressAnswer(std::string_view(buf, static_cast<size_t>(got)), id, e.r.name, kTypeA);
    if (!answer) continue;
    if (answer->truncated) {
      StartTcp(e);
    } else {
      Complete(e, &*answer, {});
    }
  }
}

void UpstreamClient::StartTcp(Entry& e) {
  const Upstream& u = policy_.upstreams[e.upstream];
  e.tcp.Reset(net::UpstreamSocket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK));
  sockaddr_in to = Sockaddr(u.addr, u.port);
  if (!e.tcp || (connect(e.tcp.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) < 0 &&
                 errno != EINPROGRESS)) {
    Complete(e, nullptr, "cannot reach " + u.Str() + " over TCP for a truncated answer");
    return;
  }
  e.query = FrameTcp(e.query);
  if (!Afford(e, e.query.size())) return OverBudget(e);
  e.serial = loop_.NewId();
  tcp_serials_[e.serial] = e.r.name;
  e.tcp_sent = 0;
  e.tcp_in.clear();
  e.deadline = Clock::now() + kUpstreamTry * 2;
  epoll_event ev = {};
  ev.events = EPOLLOUT | EPOLLIN;
  ev.data.u64 = e.serial << 2 | kUpstreamTcp;
  (void)epoll_ctl(loop_.fd(), EPOLL_CTL_ADD, e.tcp.get(), &ev);
}

void UpstreamClient::OnTcp(uint64_t serial, uint32_t events) {
  auto s = tcp_serials_.find(serial);
  if (s == tcp_serials_.end()) return;
  auto it = cache_.find(s->second);
  if (it == cache_.end()) return;
  Entry& e = it->second;
  std::string fail = "the upstream's TCP answer failed";
  if (events & EPOLLERR) return Complete(e, nullptr, fail);
  while (e.tcp_sent < e.query.size()) {
    ssize_t n = send(e.tcp.get(), e.query.data() + e.tcp_sent, e.query.size() - e.tcp_sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return Complete(e, nullptr, fail);
    }
    e.tcp_sent += static_cast<size_t>(n);
  }
  char buf[4096];
  for (;;) {
    ssize_t n = recv(e.tcp.get(), buf, sizeof buf, 0);
    if (n > 0) {
      e.tcp_in.append(buf, static_cast<size_t>(n));
      if (e.tcp_in.size() > 65537) return Complete(e, nullptr, fail);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (!NextTcpMessage(e.tcp_in)) return Complete(e, nullptr, fail);
    break;
  }
  if (auto msg = NextTcpMessage(e.tcp_in)) {
    auto answer = ParseAddressAnswer(*msg, e.id, e.r.name, kTypeA);
    if (!answer || answer->truncated) return Complete(e, nullptr, fail);
    Complete(e, &*answer, {});
    return;
  }
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = e.serial << 2 | kUpstreamTcp;
  (void)epoll_ctl(loop_.fd(), EPOLL_CTL_MOD, e.tcp.get(), &ev);
}

void UpstreamClient::Complete(Entry& e, const DnsAnswer* answer, std::string error,
                              bool over_budget) {
  inflight_.erase(e.id);
  e.id = 0;
  if (e.serial) tcp_serials_.erase(e.serial);
  e.serial = 0;
  e.tcp.Reset();
  e.pending = false;
  Resolution& r = e.r;
  r.error = std::move(error);
  r.over_budget = over_budget;
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
  e.expires = Clock::now() + (r.error.empty() ? std::chrono::seconds(ttl) : 0s);
  std::vector<Done> waiters = std::move(e.waiters);
  e.waiters.clear();
  std::string name = r.name;
  for (Done& done : waiters) {
    auto it = cache_.find(name);
    if (it == cache_.end()) break;
    done(it->second.r);
  }
}

}  // namespace brig::egress
