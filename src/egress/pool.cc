#include "egress/pool.h"

#include <algorithm>

namespace brig::egress {

NamePool::NamePool(size_t capacity)
    : capacity_(std::min<size_t>(capacity, (size_t{1} << (32 - kPrefix)) - 2)) {}

std::optional<uint32_t> NamePool::AddressFor(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (names_.size() >= capacity_) return std::nullopt;
  uint32_t addr = kNetwork + 1 + static_cast<uint32_t>(names_.size());
  names_.push_back(name);
  by_name_.emplace(name, addr);
  return addr;
}

const std::string* NamePool::NameAt(uint32_t addr) const {
  if (!Contains(addr) || addr <= kNetwork) return nullptr;
  size_t i = addr - kNetwork - 1;
  return i < names_.size() ? &names_[i] : nullptr;
}

bool TokenBucket::Take(Clock::time_point now) {
  if (last_) {
    double dt = std::chrono::duration<double>(now - *last_).count();
    tokens_ = std::min(burst_, tokens_ + std::max(0.0, dt) * rate_);
  }
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace brig::egress
