// `brig check`'s probes: each kernel feature brig's sandboxes use, tried for real in a
// throwaway child of its own (its own mount or network namespace), so that whatever a
// probe mounts or creates goes with it and the host is left as it was. No probe writes to
// a cgroup. Which profiles can run here follows from the results.
#pragma once

#include <string>
#include <vector>

#include "brig/result.h"
#include "cgroup/cgroup.h"
#include "net/nft.h"
#include "proto/brig.pb.h"

namespace brig::cli {

struct Feature {
  std::string name;  // "user namespaces", "nftables", ...
  std::string why;   // what brig uses it for, one phrase
  Status result;     // ok, or why the probe failed
};

// Probes every feature; the seccomp probe loads `seccomp_policy` (a file), the policy the
// default profile names. Needs root.
std::vector<Feature> ProbeFeatures(const std::string& seccomp_policy);

// How long a process that added and removed a sandbox's nftables elements, as a run does,
// waits to exit, in milliseconds (the median of three, each in a network namespace of its
// own), and how this kernel lets it remove them. Deleted elements are freed after an RCU
// grace period, and closing the netfilter socket waits for it: a run with an interface
// pays it at its end. Expired ones are not waited for. An error if the probe could not run.
struct NftExitWait {
  double ms;
  net::Removal removal;
};
Result<NftExitWait> MeasureNftExitWait();

// What keeps `profile` from running here: the names of the missing features it needs and
// the cgroup controllers its limits need that `plan` lacks. Empty: it can run.
std::vector<std::string> ProfileBlockers(const v1::Profile& profile, const std::string& file,
                                         const std::vector<Feature>& features,
                                         const cgroup::Plan& plan);

}  // namespace brig::cli
