#include "egress/resolver.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

namespace brig::egress {
namespace {

using namespace std::chrono_literals;

constexpr size_t kMaxDnsTcpClients = 16;
constexpr auto kDnsTcpIdle = 10s;
constexpr uint32_t kAnswerTtl = 60;
constexpr double kQueriesPerSecond = 100, kQueryBurst = 200;

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

}  // namespace

Resolver::Resolver(const Policy& policy, const net::Listeners& listeners, uint32_t sandbox,
                   NamePool& pool, HostFloor& host_floor, UpstreamClient& upstream, Loop& loop,
                   Traffic& traffic)
    : policy_(policy), l_(listeners), sandbox_(sandbox), pool_(pool), host_floor_(host_floor),
      upstream_(upstream), loop_(loop), traffic_(traffic), bucket_(kQueriesPerSecond, kQueryBurst) {}

void Resolver::ReadUdp() {
  for (int i = 0; i < 64; ++i) {
    char buf[1500];
    sockaddr_in from = {};
    socklen_t len = sizeof from;
    ssize_t got = recvfrom(l_.dns_udp(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (got < 0) return;
    if (sandbox_ && ntohl(from.sin_addr.s_addr) != sandbox_) continue;  // not this sandbox's
    Waiter w{Waiter::kUdp};
    w.from = from;
    w.start = Clock::now();
    Query(std::string(buf, static_cast<size_t>(got)), std::move(w));
  }
}

void Resolver::AcceptClients() {
  for (;;) {
    sockaddr_in peer = {};
    socklen_t len = sizeof peer;
    sys::UniqueFd fd(accept4(l_.dns_tcp(), reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    if ((sandbox_ && ntohl(peer.sin_addr.s_addr) != sandbox_) ||
        clients_.size() >= kMaxDnsTcpClients)
      continue;
    uint64_t id = loop_.NewId();
    Client& c = clients_[id];
    c.id = id;
    c.fd = std::move(fd);
    c.last = Clock::now();
    loop_.Interest(c.fd.get(), id << 2 | kDnsClient, c.events, EPOLLIN);
  }
}

void Resolver::OnClient(uint64_t id) {
  if (auto it = clients_.find(id); it != clients_.end()) ReadClient(it->second);
}

void Resolver::ReadClient(Client& c) {
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
    Waiter w{Waiter::kTcp};
    w.id = id;
    w.start = Clock::now();
    Query(std::move(raw), std::move(w));
    if (clients_.find(id) == clients_.end()) return;
  }
  Flush(clients_.at(id));
}

void Resolver::Flush(Client& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.eof && c.waiting == 0 && c.out.empty()) {
    clients_.erase(c.id);
    return;
  }
  uint32_t want = (c.eof ? 0u : uint32_t{EPOLLIN}) | (c.out.empty() ? 0u : uint32_t{EPOLLOUT});
  loop_.Interest(c.fd.get(), c.id << 2 | kDnsClient, c.events, want);
}

void Resolver::Tick(Clock::time_point now) {
  std::vector<uint64_t> idle;
  for (auto& [id, c] : clients_) {
    if (c.waiting == 0 && now - c.last >= kDnsTcpIdle) idle.push_back(id);
  }
  for (uint64_t id : idle) clients_.erase(id);
}

void Resolver::Query(std::string raw, Waiter w) {
  v1::DnsQuery ev;
  ev.set_transport(w.kind == Waiter::kUdp ? "udp" : "tcp");
  if (!bucket_.Take(w.start)) return Drop(w, ev);
  auto q = ParseQuery(raw);
  if (!q) {
    // Nothing to answer: a reply needs a question to echo.
    ev.set_reason("malformed");
    ev.set_detail(q.error().detail);
    return Reply(w, {}, ev);
  }
  w.q = *q;
  w.raw = std::move(raw);
  ev.set_name(q->name);
  ev.set_qtype(QtypeName(q->qtype));
  if (q->name.empty()) {
    ev.set_reason("not_a_name");
    ev.set_detail("the question is no host name brig resolves");
    return Reply(w, BuildNxdomain(*q, w.raw), ev);
  }
  if (!policy_.Allows(q->name, 0)) {
    ev.set_reason("not_allowlisted");
    return Reply(w, BuildNxdomain(*q, w.raw), ev);
  }
  ev.set_allowed(true);
  if (q->qclass != kClassIn || q->qtype != kTypeA) {
    ev.set_reason("qtype");
    ev.set_detail(q->qtype == kTypeAaaa ? "IPv6 is off in the sandbox: no AAAA records"
                                        : "brig answers A queries only");
    return Reply(w, BuildEmpty(*q, w.raw), ev);
  }
  if (!pool_.Has(q->name) && pool_.full()) {
    ev.set_allowed(false);
    ev.set_reason("pool_full");
    ev.set_detail("the sandbox has resolved " + std::to_string(pool_.size()) + " names already");
    return Reply(w, BuildRefused(*q, w.raw), ev);
  }
  std::string name = q->name;
  upstream_.Resolve(name, [this, w = std::move(w)](const Resolution& r) { Answer(w, r); });
}

void Resolver::Drop(const Waiter& w, v1::DnsQuery& ev) {
  // Dropped unanswered: a client retries, a flood gets nowhere. One audit line a second
  // says how many.
  traffic_.totals().set_rate_limited(traffic_.totals().rate_limited() + 1);
  ++dropped_since_audit_;
  if (w.start - last_drop_audit_ >= 1s) {
    ev.set_reason("rate_limited");
    ev.set_detail(std::to_string(dropped_since_audit_) + " queries dropped since the last such line");
    dropped_since_audit_ = 0;
    last_drop_audit_ = w.start;
    v1::AuditEvent e;
    *e.mutable_dns_query() = std::move(ev);
    traffic_.Audit(std::move(e));
  }
  if (w.kind == Waiter::kTcp) {
    if (auto it = clients_.find(w.id); it != clients_.end()) --it->second.waiting;
  }
}

void Resolver::Answer(const Waiter& w, const Resolution& r) {
  v1::DnsQuery ev;
  ev.set_transport(w.kind == Waiter::kUdp ? "udp" : "tcp");
  ev.set_name(w.q.name);
  ev.set_qtype(QtypeName(w.q.qtype));
  ev.set_allowed(true);
  ev.set_reason(policy_.AllowReason());
  for (const auto& s : r.seen) ev.add_addresses(s);
  for (const auto& s : r.cnames) ev.add_cnames(s);
  std::string reply, floor = r.floor;
  std::vector<uint32_t> addrs = host_floor_.Usable(r.addrs, floor);
  if (r.over_budget) {
    ev.set_allowed(false);
    ev.set_reason("budget");
    ev.set_detail(r.error);
    reply = BuildRefused(w.q, w.raw);
  } else if (!r.error.empty()) {
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

void Resolver::Reply(const Waiter& w, const std::string& reply, v1::DnsQuery& ev) {
  v1::NetworkSummary& totals = traffic_.totals();
  if (!ev.allowed()) {
    // Told before the sandbox has the answer: with --deny stop it is gone before then.
    totals.set_denied(totals.denied() + 1);
    traffic_.Deny(ev.name(), ev.reason(), ev.detail());
  }
  if (!reply.empty()) {
    if (w.kind == Waiter::kUdp) {
      (void)sendto(l_.dns_udp(), reply.data(), reply.size(), 0,
                   reinterpret_cast<const sockaddr*>(&w.from), sizeof w.from);
    } else if (auto it = clients_.find(w.id); it != clients_.end()) {
      it->second.out += FrameTcp(reply);
    }
    ev.set_rcode(RcodeName(static_cast<uint8_t>(reply[3]) & 0x0f));
  }
  ev.set_duration_us(Micros(Clock::now() - w.start));
  totals.set_queries(totals.queries() + 1);
  if (v1::HostTraffic* h = traffic_.Host(ev.name())) {
    h->set_queries(h->queries() + 1);
    if (!ev.allowed()) h->set_denied(h->denied() + 1);
  }
  v1::AuditEvent e;
  *e.mutable_dns_query() = std::move(ev);
  traffic_.Audit(std::move(e));
  if (w.kind == Waiter::kTcp) {
    if (auto it = clients_.find(w.id); it != clients_.end()) {
      --it->second.waiting;
      Flush(it->second);
    }
  }
}

}  // namespace brig::egress
