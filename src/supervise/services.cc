#include "supervise/services.h"

#include <signal.h>

#include "log/log.h"

namespace brig::supervise {

Result<Services> Services::Start(What what, Where where,
                                 std::function<void(v1::AuditEvent)> audit) {
  Services s;
  if (where.listeners || !what.brokers.empty()) signal(SIGPIPE, SIG_IGN);
  s.budget_ = std::make_unique<egress::Budget>(what.budget, audit);
  if (where.listeners) {
    s.egress_ = BRIG_TRY(egress::Service::Start(what.egress, *where.listeners, where.peer,
                                                where.subnet, audit, std::move(where.denied),
                                                s.budget_.get(), where.host_netns));
    log::Debug("egress: resolver and proxy serving");
  }
  if (what.brokers.empty()) return s;
  BRIG_TRY_CTX(broker::ListenTcp(what.brokers, where.broker_netns, where.brokers), "brokers");
  s.brokers_ =
      BRIG_TRY(broker::Service::Start(what.brokers, std::move(where.brokers),
                                      std::move(where.attribution), audit, s.budget_.get()));
  log::Debug("brokers: ", what.brokers.size(), " serving");
  return s;
}

Status Services::Watch(Loop& loop) {
  if (egress_) BRIG_TRY(loop.Watch(egress_->fd(), [this] { egress_->Handle(); }));
  if (brokers_) BRIG_TRY(loop.Watch(brokers_->fd(), [this] { brokers_->Handle(); }));
  return {};
}

void Services::Close() {
  if (brokers_) brokers_->Close();
  if (egress_) egress_->Close();
}

std::optional<v1::NetworkSummary> Services::Summary() const {
  std::optional<v1::NetworkSummary> out;
  if (egress_) out = egress_->Summary();
  if (brokers_) {
    if (!out) out.emplace();
    for (v1::BrokerTraffic& t : brokers_->Summary()) *out->add_brokers() = std::move(t);
  }
  if (out && budget_) {
    out->set_egress_budget(budget_->limit());
    out->set_egress_bytes(budget_->sent());
    out->set_budget_exceeded(budget_->exceeded());
  }
  return out;
}

}  // namespace brig::supervise
