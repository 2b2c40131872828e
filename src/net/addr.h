// Sandbox addresses, unique among live sandboxes across brig processes: one lock file per
// address in a directory per network namespace, held under an exclusive flock by the
// supervisor for the sandbox's lifetime (brig init holds no host descriptor, like the
// sandbox record's). A crashed run's address is free again as soon as its brig is gone,
// and its sandbox with it (init dies with brig); brig gc removes its file.
#pragma once

#include <string>

#include "brig/result.h"
#include "net/link.h"
#include "sys/fd.h"

namespace brig::net {

class Lease {
 public:
  // Takes a free address of `subnet` (never the network, gateway or broadcast address),
  // starting the search at a random one. Its file lives in `dir`.
  static Result<Lease> Take(const std::string& dir, const Subnet& subnet);
  Lease() = default;
  Lease(Lease&& o) noexcept;
  Lease& operator=(Lease&& o) noexcept;
  ~Lease() { Release(); }
  Ipv4 addr() const { return addr_; }
  const std::string& path() const { return path_; }
  // Lets the lease go without removing its file, so brig gc can still find what it names.
  void Abandon();
  // What a crashed holder of this address wrote into its file (Note), if anything: its
  // leftovers can then be found and removed.
  const std::string& previous() const { return previous_; }
  // Replaces the file's content.
  Status Note(const std::string& text);
  void Release();

 private:
  Ipv4 addr_;
  std::string path_, previous_;
  sys::UniqueFd fd_;
};

// The most ports the kernel gives one bridge (BR_MAX_PORTS, 1024, less port 0, which it
// never hands out), and so the most sandboxes with an interface at one time in one network
// namespace: all of them hang off its one bridge.
inline constexpr uint32_t kBridgePorts = 1023;

// Holds one of `bridge`'s ports for a sandbox: a file `dir`/N (N below kBridgePorts, made
// if missing) locked with flock(2) while the returned fd is open, the search starting at a
// random N. With every one held the run is refused, naming the limit, before anything is
// made; so a sandbox is never refused by the kernel halfway, after its process started.
Result<sys::UniqueFd> TakePortSlot(const std::string& dir, const std::string& bridge);

// Takes the lease file `path` (made if missing) for brig gc, so that no sandbox can take
// the address while gc decides; fails with EWOULDBLOCK if a live sandbox holds it.
Result<sys::UniqueFd> LockLease(const std::string& path);

}  // namespace brig::net
