// The phase's egress budget (issue 16, item 11; brig-run(1), --egress-budget): the bytes
// brig writes upstream, through the proxy, the brokers and the resolver's upstream queries
// together, over the whole phase.
// Each writer asks Allow() before it writes and Charge()s what it wrote, so what leaves
// the host never exceeds the budget, not even by one buffer. A writer with bytes waiting
// and no budget left calls Exceed(): from then on the services close every connection and
// refuse new ones with reason "budget", and the resolver refuses queries that would go
// upstream (upstream_client.h says what a query costs).
// Shared by the egress and broker services of one sandbox, in the supervisor's one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "proto/brig.pb.h"

namespace brig::egress {

class Budget {
 public:
  // `limit` 0: no budget. `audit` gets the one EgressBudget event when it runs out.
  Budget(uint64_t limit, std::function<void(v1::AuditEvent)> audit)
      : limit_(limit), audit_(std::move(audit)) {}

  uint64_t limit() const { return limit_; }
  uint64_t sent() const { return sent_; }
  bool exceeded() const { return exceeded_; }
  // How many of `want` bytes may be written upstream now.
  size_t Allow(size_t want) const;
  // `n` bytes were written upstream for `name` (a host name, or "broker NAME").
  void Charge(const std::string& name, size_t n);
  // A writer had bytes to send and no budget: the budget is exceeded (audited once).
  void Exceed();
  // The bytes charged per name, for the audit and the result.
  const std::map<std::string, uint64_t>& hosts() const { return hosts_; }

 private:
  uint64_t limit_;
  uint64_t sent_ = 0;
  bool exceeded_ = false;
  std::map<std::string, uint64_t> hosts_;
  std::function<void(v1::AuditEvent)> audit_;
};

// What `b` (null: none) lets a writer send of `want` bytes; 0 with bytes waiting exceeds it.
size_t Quota(Budget* b, size_t want);

}  // namespace brig::egress
