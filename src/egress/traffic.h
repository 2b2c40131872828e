// What one egress service tells about itself: an audit event per DNS query and per
// connection, handed to the sink as it ends, and the totals per name that
// Service::Summary() returns. Shared by the resolver and the proxy.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "proto/brig.pb.h"

namespace brig::egress {

using AuditSink = std::function<void(v1::AuditEvent)>;

class Traffic {
 public:
  explicit Traffic(AuditSink audit) : audit_(std::move(audit)) {}
  void Audit(v1::AuditEvent e) { audit_(std::move(e)); }
  v1::NetworkSummary& totals() { return totals_; }
  // The totals of `name` ("(no name)" if empty); null once the summary holds as many names
  // as it keeps.
  v1::HostTraffic* Host(const std::string& name);
  v1::NetworkSummary Summary() const;

 private:
  AuditSink audit_;
  std::map<std::string, v1::HostTraffic> hosts_;
  v1::NetworkSummary totals_;
};

}  // namespace brig::egress
