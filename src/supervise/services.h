// The resolver, proxy and brokers one supervisor serves, and the egress budget they share:
// what `brig run`'s session (container/session.h) and a pod's supervisor (pod/supervisor.h)
// both start, watch, close and sum up, written once for both.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/listen.h"
#include "broker/service.h"
#include "egress/budget.h"
#include "egress/policy.h"
#include "egress/service.h"
#include "net/link.h"
#include "net/listeners.h"
#include "proto/brig.pb.h"
#include "supervise/loop.h"

namespace brig::supervise {

class Services {
 public:
  // Where the services serve, which is all the front ends differ in.
  struct Where {
    // The resolver's and proxy's listeners (null: no network, no egress service), the one
    // client address they serve in `subnet` (0: any that reaches them, a pod's), and the
    // network namespace the host floor asks for the host's own addresses (-1: this one).
    const net::Listeners* listeners = nullptr;
    uint32_t peer = 0;
    net::Subnet subnet;
    int host_netns = -1;
    // The brokers' unix listeners, made with the mount plan, and the network namespace
    // their TCP ports are made in (-1: this process's).
    broker::Listeners brokers;
    int broker_netns = -1;
    // "<sandbox id>/<attempt>", named in what the brokers send upstream.
    std::string attribution;
    // Told of each name's first refusal for each reason as it happens (egress/traffic.h);
    // empty: only the summary tells.
    egress::DenialSink denied;
  };

  // What the services serve: the egress policy, the budget in bytes (0: none) and the
  // brokers, as config::Sandbox holds them.
  struct What {
    const egress::Policy& egress;
    uint64_t budget = 0;
    const std::vector<broker::Config>& brokers;
  };

  // Starts them before the workload's first packet. SIGPIPE is ignored from here on where
  // any is started: splice(2) has no MSG_NOSIGNAL.
  static Result<Services> Start(What what, Where where, std::function<void(v1::AuditEvent)> audit);
  Services() = default;
  Services(Services&&) noexcept = default;
  Services& operator=(Services&&) noexcept = default;

  // Has `loop` hand each service what is ready for it.
  Status Watch(Loop& loop);
  // Ends every connection, the brokers' first, each with its audit event.
  void Close();
  // What went out (null if nothing was served): the egress service's totals, each broker's
  // traffic and the budget.
  std::optional<v1::NetworkSummary> Summary() const;

 private:
  std::unique_ptr<egress::Budget> budget_;
  std::unique_ptr<egress::Service> egress_;
  std::unique_ptr<broker::Service> brokers_;
};

}  // namespace brig::supervise
