// What one sandbox's egress service enforces: the posture's names, the address floor with
// the profile's exceptions, and where names are resolved. Built in the parent from the
// profile and the run's flags, before anything is cloned.
#pragma once

#include <string>
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

  // Whether the posture lets the sandbox reach `name` (on `port`; 0: any port it allows).
  bool Allows(const std::string& name, uint16_t port) const {
    return open ? !name.empty() : allowlist.Allows(name, port);
  }
  // The audit reason of an allowed query or connection.
  std::string AllowReason() const { return open ? "open" : "allowlisted"; }
};

}  // namespace brig::egress
