// The sockets brig opens towards an upstream: the proxy's connections, the resolver's
// queries, the brokers' connections to their targets. In a pod's supervisor, which serves
// from inside the pod's own network namespace (pod/supervisor.h), each carries brig's mark,
// the one thing brig's rules there let out (net/inside_rules.h) besides what the operator names;
// the pod cannot set a mark (SO_MARK needs CAP_NET_ADMIN over that namespace, which no pod
// process of a brig handler has). A `brig run` supervisor sets none.
#pragma once

#include <cstdint>

namespace brig::net {

// From now on, every upstream socket of this process carries `mark` (0: none).
void SetUpstreamMark(uint32_t mark);
// socket(2), marked as SetUpstreamMark said; -1 with errno on failure.
int UpstreamSocket(int domain, int type);

}  // namespace brig::net
