// What brig tells the user at exit about egress it refused (issue 16, item 3): one line
// per host name the sandbox was denied, with each reason and its remedy; one per broker
// that failed; one if the egress budget ran out. Until now the reasons were only in the
// audit log while a client retried for minutes. The names and details come from the
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
// What a user can do about a refusal of `name` for `reason` with `detail` (the audit's).
std::string Remedy(const std::string& name, const std::string& reason, const std::string& detail);

}  // namespace brig::egress
