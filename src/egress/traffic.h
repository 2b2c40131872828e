// What one egress service tells about itself: an audit event per DNS query and per
// connection, handed to the sink as it ends, and the totals per name that
// Service::Summary() returns, with why each name was refused and how often (printed at
// exit: denials.h). Shared by the resolver and the proxy.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "proto/brig.pb.h"

namespace brig::egress {

using AuditSink = std::function<void(v1::AuditEvent)>;
// Told of each name's first refusal for each reason, as it happens: `name` as the summary
// keys it, the denial with its count of 1 and its detail.
using DenialSink = std::function<void(const std::string& name, const v1::Denial& d)>;

class Traffic {
 public:
  // `denied` may be empty: no one is told before the summary.
  Traffic(AuditSink audit, DenialSink denied)
      : audit_(std::move(audit)), denied_(std::move(denied)) {}
  void Audit(v1::AuditEvent e) { audit_(std::move(e)); }
  v1::NetworkSummary& totals() { return totals_; }
  // The totals of `name` ("(no name)" if empty); null once the summary holds as many names
  // as it keeps.
  v1::HostTraffic* Host(const std::string& name);
  // Counts a refusal of `name` for `reason`; the first one's `detail` is kept, and the
  // first one is told to the DenialSink.
  void Deny(const std::string& name, const std::string& reason, const std::string& detail);
  v1::NetworkSummary Summary() const;

 private:
  AuditSink audit_;
  DenialSink denied_;
  std::map<std::string, v1::HostTraffic> hosts_;
  v1::NetworkSummary totals_;
};

// Most frequent first; ties keep the order they were first seen in.
void SortDenials(google::protobuf::RepeatedPtrField<v1::Denial>& denials);

}  // namespace brig::egress
