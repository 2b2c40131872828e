// An ordinary user's sandbox's network (postures allowlist and open; brig(1), WITHOUT
// ROOT). brig can make nothing in the host's network namespace, so the sandbox's own is
// sealed: its eth0 is one end of a veth pair whose other end ("brig") stays in the same
// namespace and leads nowhere, and brig serves it from inside. In it, brig's table (net/
// inside_rules.h, no mark, no direct destination) sends the sandbox's DNS to the resolver
// and TCP 80 and 443 to the proxy, on listeners brig made on the namespace's loopback, and
// refuses everything else at once. The resolver, proxy and brokers run in brig, in the
// host's namespace, so every upstream connection is brig's own socket, made as the user:
// nothing else (no pasta, no slirp4netns) carries the sandbox's traffic, and no packet of
// the sandbox's ever leaves its namespace.
//
// The namespace belongs to the sandbox's user namespace, in which the workload holds no
// capability (and a nested one gets none over it): it can neither change the table nor
// reach another interface. brig, as that namespace's owner's uid one level up, holds every
// capability there; it makes what it makes from a thread of its own (net::InNetns).
//
// The address is the subnet's second, its gateway the first, in every sandbox (no other
// sandbox shares the namespace); the ports are fixed (kSealedPorts), outside the kernel's
// ephemeral range, so the manifest names the exact table before the sandbox exists.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "brig/result.h"
#include "net/link.h"
#include "net/listeners.h"
#include "net/network.h"

namespace brig::net {

inline constexpr ListenerPorts kSealedPorts = {
    .http = 64880, .https = 64443, .dns_tcp = 64853, .dns_udp = 64853};

class SealedNet final : public Network {
 public:
  // Before clone: nothing is made.
  static std::unique_ptr<SealedNet> Prepare(const Subnet& subnet);
  // The sandbox's address in `subnet`, and the table brig installs. Pure.
  static SandboxAddress AddressIn(const Subnet& subnet);
  static std::string Table();

  const SandboxAddress& address() const override { return address_; }
  const Listeners& listeners() const override { return listeners_; }
  uint32_t peer() const override { return 0; }
  // In init's namespace: loopback up, the veth pair, the listeners and the table.
  Status Attach(int netns) override;
  // Nothing: all of it goes with the sandbox's namespace.
  Status Teardown() override { return {}; }

 private:
  SandboxAddress address_;
  Listeners listeners_;
};

}  // namespace brig::net
