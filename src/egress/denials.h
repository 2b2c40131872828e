// What brig tells the user about egress it refused (issue 16, item 3): at exit, one line
// per host name the sandbox was denied, with each reason and its remedy; one per broker
// that failed; one if the egress budget ran out. As it happens (issue 32), the same words
// for a name's first refusal for each reason: a client that retries quietly for minutes
// no longer hides why. The names and details come from the
// sandbox: every line is made one line of plain text (util::OneLine), and the name lines
// are bounded, so a workload cannot flood or drive the terminal. Pure; unit-tested.
#pragma once

#include <string>
#include <vector>

#include "proto/brig.pb.h"

namespace brig::egress {

// At most this many name lines; then one line says how many names more.
inline constexpr size_t kMaxDenialLines = 20;

// The lines, without "brig: ", in the order: names (as the summary sorts them), brokers,
// the budget.
std::vector<std::string> DenialLines(const v1::NetworkSummary& n);
// One refusal of `name` as it happens, in the summary's words ("denied NAME: reason
// (remedy)"), without "brig: ".
std::string DenialLine(const std::string& name, const v1::Denial& d);
// Whether a refusal for `reason` is brig's policy at work, which --deny stop ends the
// phase at: every reason but the upstream's failure and the client's own silence
// (upstream_failed, timeout).
bool StopsThePhase(const std::string& reason);
// What a user can do about a refusal of `name` for `reason` with `detail` (the audit's).
std::string Remedy(const std::string& name, const std::string& reason, const std::string& detail);

}  // namespace brig::egress
