// What one sandbox's egress service enforces: the posture's names, the address floor with
// the profile's exceptions, and where names are resolved. Built in the parent from the
// profile and the run's flags, before anything is cloned.
#pragma once

#include <vector>

#include "egress/allowlist.h"
#include "egress/floor.h"
#include "egress/upstream.h"

namespace brig::egress {

struct Policy {
  bool open = false;    // posture open: any host name; else the allowlist
  Allowlist allowlist;  // posture allowlist
  Floor floor;
  std::vector<Upstream> upstreams;
};

}  // namespace brig::egress
