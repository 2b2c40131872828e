#include "egress/service.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "egress/host_floor.h"
#include "egress/loop.h"
#include "egress/pool.h"
#include "egress/proxy.h"
#include "egress/resolver.h"
#include "egress/upstream_client.h"

namespace brig::egress {
namespace {

using namespace std::chrono_literals;

constexpr auto kTick = 250ms;

}  // namespace

// The parts and what they share, declared so that each is made after what it uses and
// gone before it.
class Service::Impl {
 public:
  Impl(Policy p, const net::Listeners& l, uint32_t sandbox, net::Subnet bridge, AuditSink audit,
       DenialSink denied, Budget* budget)
      : policy_(std::move(p)),
        traffic_(std::move(audit), std::move(denied)),
        host_floor_(bridge),
        upstream_(policy_, loop_, budget),
        resolver_(policy_, l, sandbox, pool_, host_floor_, upstream_, loop_, traffic_),
        proxy_(policy_, l, sandbox, pool_, host_floor_, upstream_, loop_, traffic_, budget),
        l_(l) {}

  Status Init(int host_netns);
  int fd() const { return loop_.fd(); }
  void Handle();
  void Close() {
    proxy_.Close();
    resolver_.Close();
  }
  v1::NetworkSummary Summary() const { return traffic_.Summary(); }

 private:
  void Dispatch(uint64_t token, uint32_t events);
  void Tick();

  Policy policy_;
  Traffic traffic_;
  Loop loop_;
  HostFloor host_floor_;
  NamePool pool_;
  UpstreamClient upstream_;
  Resolver resolver_;
  Proxy proxy_;
  const net::Listeners& l_;
  sys::UniqueFd timer_;
};

Status Service::Impl::Init(int host_netns) {
  proxy_.FitDescriptors();
  BRIG_TRY(host_floor_.Open(host_netns));
  BRIG_TRY(loop_.Open());
  timer_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer_) return SysError("timerfd_create", "egress");
  itimerspec its = {};
  its.it_interval.tv_nsec = std::chrono::nanoseconds(kTick).count();
  its.it_value = its.it_interval;
  if (timerfd_settime(timer_.get(), 0, &its, nullptr) < 0) return SysError("timerfd_settime");
  BRIG_TRY(upstream_.Open());
  std::pair<int, uint64_t> fds[] = {{l_.http(), kHttp},
                                    {l_.https(), kHttps},
                                    {l_.dns_tcp(), kDnsTcp},
                                    {l_.dns_udp(), kDnsUdp},
                                    {timer_.get(), kTimer}};
  for (auto [fd, token] : fds) BRIG_TRY(loop_.Add(fd, token));
  return {};
}

void Service::Impl::Handle() {
  epoll_event evs[64];
  int n = epoll_wait(loop_.fd(), evs, 64, 0);
  for (int i = 0; i < n; ++i) Dispatch(evs[i].data.u64, evs[i].events);
}

void Service::Impl::Dispatch(uint64_t token, uint32_t events) {
  switch (token) {
    case kHttp: return proxy_.Accept(false);
    case kHttps: return proxy_.Accept(true);
    case kDnsTcp: return resolver_.AcceptClients();
    case kDnsUdp: return resolver_.ReadUdp();
    case kTimer: return Tick();
    case kUpstreamUdp: return upstream_.ReadUdp();
    default: break;
  }
  uint64_t id = token >> 2;
  switch (token & 3) {
    case kClient: return proxy_.OnClient(id, events);
    case kUpstreamSide: return proxy_.OnUpstream(id, events);
    case kDnsClient: return resolver_.OnClient(id);
    case kUpstreamTcp: return upstream_.OnTcp(id, events);
  }
}

void Service::Impl::Tick() {
  uint64_t ticks;
  (void)!read(timer_.get(), &ticks, sizeof ticks);
  auto now = Clock::now();
  upstream_.Tick(now);
  proxy_.Tick(now);
  resolver_.Tick(now);
}

// ---- Service ----------------------------------------------------------------------------

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

Result<std::unique_ptr<Service>> Service::Start(Policy policy, const net::Listeners& listeners,
                                                uint32_t sandbox, net::Subnet bridge,
                                                AuditSink audit, DenialSink denied, Budget* budget,
                                                int host_netns) {
  if (policy.upstreams.empty()) {
    return Fail("resolver upstream", "", "none given", ErrorKind::kInternal);
  }
  auto impl = std::make_unique<Impl>(std::move(policy), listeners, sandbox, bridge,
                                     std::move(audit), std::move(denied), budget);
  BRIG_TRY(impl->Init(host_netns));
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

int Service::fd() const { return impl_->fd(); }
void Service::Handle() { impl_->Handle(); }
void Service::Close() { impl_->Close(); }
v1::NetworkSummary Service::Summary() const { return impl_->Summary(); }

}  // namespace brig::egress
