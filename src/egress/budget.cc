#include "egress/budget.h"

#include <algorithm>

namespace brig::egress {
namespace {

// Names kept per budget: the proxy's are bounded by the resolver's pool and the brokers'
// by the configuration; this bounds the audit event whatever they become.
constexpr size_t kMaxNames = 256;

}  // namespace

size_t Budget::Allow(size_t want) const {
  if (limit_ == 0) return want;
  if (exceeded_ || sent_ >= limit_) return 0;
  return static_cast<size_t>(std::min<uint64_t>(want, limit_ - sent_));
}

void Budget::Charge(const std::string& name, size_t n) {
  sent_ += n;
  if (limit_ == 0 || n == 0) return;
  auto it = hosts_.find(name);
  if (it == hosts_.end() && hosts_.size() < kMaxNames) it = hosts_.emplace(name, 0).first;
  if (it != hosts_.end()) it->second += n;
}

void Budget::Exceed() {
  if (exceeded_ || limit_ == 0) return;
  exceeded_ = true;
  v1::AuditEvent e;
  v1::EgressBudget* b = e.mutable_egress_budget();
  b->set_budget(limit_);
  b->set_sent(sent_);
  for (const auto& [name, bytes] : hosts_) {
    v1::HostBytes* h = b->add_hosts();
    h->set_name(name);
    h->set_bytes_up(bytes);
  }
  if (audit_) audit_(std::move(e));
}

size_t Quota(Budget* b, size_t want) {
  if (!b || want == 0) return want;
  size_t q = b->Allow(want);
  if (q == 0) b->Exceed();
  return q;
}

}  // namespace brig::egress
