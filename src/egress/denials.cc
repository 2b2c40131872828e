#include "egress/denials.h"

#include "egress/floor.h"
#include "util/parse.h"

namespace brig::egress {
namespace {

// A detail longer than this is cut: it may be the sandbox's own bytes.
constexpr size_t kMaxDetail = 200;

std::string Cut(const std::string& s) {
  return s.size() <= kMaxDetail ? s : s.substr(0, kMaxDetail) + "...";
}

// "ADDR: why" (upstream_client.cc, host_floor.cc): the profile's floor if `why` is the
// floor's own reason for ADDR, else the host's, which no profile can except.
std::string FloorRemedy(const std::string& detail) {
  size_t colon = detail.find(": ");
  if (colon == std::string::npos) return Cut(detail);
  std::string addr = detail.substr(0, colon), why = detail.substr(colon + 2);
  auto a = ParseAddress(addr);
  if (a && FloorReason(*a) == why) {
    bool vowel = std::string_view("aeioAEIO").find(why[0]) != std::string_view::npos ||
                 why.starts_with("un");
    std::string article = vowel ? "an " : "a ";
    if (why == "cloud metadata") {
      return addr + " is a cloud metadata address, which no profile can except";
    }
    return addr + " is " + article + why +
           " address; a profile can except it with network.allow_addresses";
  }
  return Cut(detail) + "; no profile can except the host's own addresses";
}

std::string Counted(const v1::Denial& d) {
  return d.count() > 1 ? d.reason() + ", " + std::to_string(d.count()) + " times" : d.reason();
}

// "reason[, N times] (remedy)"
std::string Reason(const std::string& name, const v1::Denial& d) {
  std::string remedy = Remedy(name, d.reason(), d.detail());
  return Counted(d) + (remedy.empty() ? "" : " (" + remedy + ")");
}

std::string NameLine(const v1::HostTraffic& h) {
  std::string line = "denied " + h.name() + ": ";
  for (int i = 0; i < h.denials_size(); ++i) {
    line += (i ? "; " : "") + Reason(h.name(), h.denials(i));
  }
  return util::OneLine(line);
}

std::string BrokerLine(const v1::BrokerTraffic& b) {
  bool http = b.requests() > 0;
  std::string line = "broker " + b.name() + " failed " + std::to_string(b.failed()) + " of " +
                     std::to_string(http ? b.requests() : b.connections()) +
                     (http ? " requests: " : " connections: ");
  for (int i = 0; i < b.failures_size(); ++i) {
    const v1::Denial& d = b.failures(i);
    line += (i ? "; " : "") + Counted(d) + (d.detail().empty() ? "" : " (" + Cut(d.detail()) + ")");
  }
  return util::OneLine(line);
}

}  // namespace

std::string Remedy(const std::string& name, const std::string& reason, const std::string& detail) {
  if (reason == "not_allowlisted") {
    return "not on the allowlist; allow it with --allow-host " + name +
           " or the profile's network.allow_hosts";
  }
  if (reason == "floor") return FloorRemedy(detail);
  if (reason == "budget") {
    return "the egress budget is spent; raise --egress-budget or the profile's "
           "limits.egress_bytes";
  }
  if (reason == "name_mismatch" || reason == "not_from_resolver") {
    return Cut(detail) + "; connect by the name, to the address brig's resolver gave for it";
  }
  return Cut(detail);
}

bool StopsThePhase(const std::string& reason) {
  return reason != "upstream_failed" && reason != "timeout";
}

std::string DenialLine(const std::string& name, const v1::Denial& d) {
  return util::OneLine("denied " + name + ": " + Reason(name, d));
}

std::vector<std::string> DenialLines(const v1::NetworkSummary& n) {
  std::vector<std::string> lines;
  size_t names = 0;
  for (const v1::HostTraffic& h : n.hosts()) {
    if (h.denials_size() == 0) continue;
    if (++names <= kMaxDenialLines) lines.push_back(NameLine(h));
  }
  if (names > kMaxDenialLines) {
    lines.push_back("and " + std::to_string(names - kMaxDenialLines) +
                    " more names denied (--result and --audit-log have them all)");
  }
  for (const v1::BrokerTraffic& b : n.brokers()) {
    if (b.failed() > 0) lines.push_back(BrokerLine(b));
  }
  if (n.budget_exceeded()) {
    lines.push_back("egress budget of " + std::to_string(n.egress_budget()) +
                    " bytes spent: connections and DNS queries past it were refused "
                    "(--egress-budget, limits.egress_bytes)");
  }
  return lines;
}

}  // namespace brig::egress
