// The sandbox's own network namespace: with posture none it holds only `lo`, brought up
// here by brig init. (Interfaces, bridges and nftables live beside this, in src/net/.)
#pragma once

#include "brig/result.h"

namespace brig::net {

Status BringUpLoopback();

}  // namespace brig::net
