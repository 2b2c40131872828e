// How brig ties a connection to the name the sandbox resolved (issue 6, "the name the
// sandbox resolved and the name in the SNI must agree"). brig's resolver never tells a
// sandbox a real address: it answers each allowed name with an address of its own, from
// 198.18.0.0/15 (RFC 2544's benchmarking range, in the floor, so never a real upstream),
// one address per name for the sandbox's life. Every TCP connection to port 80 or 443 is
// redirected to brig's proxy whatever its destination, and the destination it was dialed
// to names, through this pool, the one name it may carry in its SNI or Host header. A
// connection to any other address (an IP literal, an address from some other resolver)
// names nothing and is refused. Pure; unit-tested.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brig::egress {

class NamePool {
 public:
  static constexpr uint32_t kNetwork = 0xc6120000;  // 198.18.0.0/15, host order
  static constexpr int kPrefix = 15;
  // Names one sandbox may resolve in its life; the pool's range holds 131070.
  static constexpr size_t kDefaultCapacity = 4096;

  explicit NamePool(size_t capacity = kDefaultCapacity);
  // The address of `name` (normalised), allocated on first use: 198.18.0.1, .2, ...
  // nullopt once `capacity` names have one.
  std::optional<uint32_t> AddressFor(const std::string& name);
  // The name `addr` (host order) was handed out for; null if none was.
  const std::string* NameAt(uint32_t addr) const;
  static bool Contains(uint32_t addr) { return (addr >> (32 - kPrefix)) == (kNetwork >> (32 - kPrefix)); }
  size_t size() const { return names_.size(); }
  bool full() const { return names_.size() >= capacity_; }
  bool Has(const std::string& name) const { return by_name_.count(name) != 0; }

 private:
  size_t capacity_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::string> names_;  // names_[i] has kNetwork + 1 + i
};

// A token bucket: `rate` tokens a second, at most `burst` saved up.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double rate, double burst) : rate_(rate), burst_(burst), tokens_(burst) {}
  // Takes one token if there is one.
  bool Take(Clock::time_point now);

 private:
  double rate_, burst_, tokens_;
  std::optional<Clock::time_point> last_;
};

}  // namespace brig::egress
