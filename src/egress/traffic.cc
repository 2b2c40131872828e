#include "egress/traffic.h"

#include <algorithm>

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

void Traffic::Deny(const std::string& name, const std::string& reason, const std::string& detail) {
  v1::HostTraffic* h = Host(name);
  if (!h) return;
  for (v1::Denial& d : *h->mutable_denials()) {
    if (d.reason() == reason) {
      d.set_count(d.count() + 1);
      return;
    }
  }
  v1::Denial* d = h->add_denials();
  d->set_reason(reason);
  d->set_count(1);
  d->set_detail(detail);
  if (denied_) denied_(h->name(), *d);
}

void SortDenials(google::protobuf::RepeatedPtrField<v1::Denial>& denials) {
  std::stable_sort(denials.begin(), denials.end(),
                   [](const v1::Denial& a, const v1::Denial& b) { return a.count() > b.count(); });
}

v1::NetworkSummary Traffic::Summary() const {
  v1::NetworkSummary s = totals_;
  for (const auto& [name, h] : hosts_) {
    v1::HostTraffic* out = s.add_hosts();
    *out = h;
    SortDenials(*out->mutable_denials());
  }
  return s;
}

}  // namespace brig::egress
