// Where a broker's listeners are made: the supervisor makes them all and holds them; no
// brig process runs inside the sandbox for a broker (issue 8).
//
// A TCP port is a socket the supervisor opens inside the sandbox's network namespace
// (setns there and back), on 127.0.0.1, once brig init has brought loopback up. A unix
// socket is bound in a detached tmpfs that no path on the host names and reaches the
// sandbox as a file bind in the mount plan, at the path the broker gives.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "brig/result.h"
#include "broker/spec.h"
#include "fs/mount_plan.h"
#include "sys/fd.h"

namespace brig::broker {

// A unix socket's inode, detached, and the absolute path inside the sandbox where the mount
// plan puts it (fs::MountPlan::AddFileBind).
struct Placed {
  std::string path;
  sys::UniqueFd tree;
  std::string source;  // SocketSource: what the manifest calls it
};

// What the mount plan's step for `broker`'s unix socket is made from (no host path names
// it: the socket is bound in a directory brig removes at once).
inline std::string SocketSource(const Config& broker) {
  return "unix socket of broker " + broker.name;
}

// The listening sockets, one slot per broker; -1 where the broker has none of that kind.
struct Listeners {
  std::vector<sys::UniqueFd> tcp, local;  // local: unix sockets
  std::vector<Placed> placed;             // where each unix socket goes, until it is placed
};

// Before clone: every unix socket, listening, and where each goes in the sandbox.
Status ListenUnix(const std::vector<Config>& brokers, Listeners& out);
// After brig init is Ready (loopback is up) and before the workload starts: every TCP
// port, in the network namespace `netns` names (-1: the one brig is in, a pod's).
Status ListenTcp(const std::vector<Config>& brokers, int netns, Listeners& out);

}  // namespace brig::broker
