#include "egress/traffic.h"

namespace brig::egress {
namespace {

constexpr size_t kMaxSummaryHosts = 256;

}  // namespace

v1::HostTraffic* Traffic::Host(const std::string& name) {
  std::string key = name.empty() ? "(no name)" : name;
  auto it = hosts_.find(key);
  if (it == hosts_.end()) {
    if (hosts_.size() >= kMaxSummaryHosts) return nullptr;
    it = hosts_.emplace(key, v1::HostTraffic()).first;
    it->second.set_name(key);
  }
  return &it->second;
}

v1::NetworkSummary Traffic::Summary() const {
  v1::NetworkSummary s = totals_;
  for (const auto& [name, h] : hosts_) *s.add_hosts() = h;
  return s;
}

}  // namespace brig::egress
