// libFuzzer target: a pod's annotations (pod/handler.h), which the pod's author writes and
// containerd passes into config.json. Lines "KEY=VALUE" are laid over containerd's own
// annotations of a sandbox; the handler and the profile are fixed. Besides "no crash, no
// UB": an error renders as one line, and a plan never widens the handler: its profile is
// one the handler names, its budget within the handler's and the profile's, its brokers
// the handler's, its hosts ones the allowlist parses, its audit file a plain name in the
// handler's directory. The bytes are also read as one `direct` entry.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/allowlist.h"
#include "fuzz_common.h"
#include "pod/handler.h"

namespace {

constexpr char kHandler[] = R"(name: "h"
root: "/run/brig/handlers/h"
profile: "untrusted-code-write"
permit: "untrusted-code-read"
egress_bytes: "10M"
brokers { name: "model" port: 4000 to: "https://model.test" headers { name: "k" from: "file:/k" } }
audit_dir: "/var/log/brig/pods"
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;
  static const brig::v1::RuntimeHandler handler = *brig::pod::ParseHandler(kHandler, "h", "h");
  std::string_view s(reinterpret_cast<const char*>(data), size);
  if (auto d = brig::net::ParseDirect(s); !d) {
    brig::fuzz::CheckRendersOneLine(d.error());
  } else {
    FUZZ_CHECK(d->prefix >= 0 && d->prefix <= 32);
  }
  brig::pod::Annotations a;
  a["io.kubernetes.cri.container-type"] = "sandbox";
  a["io.kubernetes.cri.sandbox-id"] = "0123456789abcdef";
  a["io.kubernetes.cri.sandbox-namespace"] = "ns";
  a["io.kubernetes.cri.sandbox-name"] = "pod";
  a["io.kubernetes.cri.sandbox-uid"] = "uid";
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view line = s.substr(start, end - start);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos)
      a[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    start = end + 1;
  }
  brig::v1::Profile profile;
  profile.set_isolation(brig::v1::ISOLATION_SANDBOX);
  profile.mutable_network()->set_posture(brig::v1::POSTURE_ALLOWLIST);
  profile.mutable_limits()->set_egress_bytes("5M");
  auto plan = brig::pod::PlanPod(handler, profile, a);
  if (!plan) {
    brig::fuzz::CheckRendersOneLine(plan.error());
    return 0;
  }
  const auto& run = plan->run;
  FUZZ_CHECK(run.profile == "untrusted-code-write" || run.profile == "untrusted-code-read");
  FUZZ_CHECK(run.egress_budget && *run.egress_budget <= (5u << 20));
  for (const auto& [name, b] : run.brokers) FUZZ_CHECK(name == "model" && b.name() == "model");
  FUZZ_CHECK(brig::egress::Allowlist::Parse(run.allow_hosts));
  const std::string dir = "/var/log/brig/pods/";
  FUZZ_CHECK(plan->audit_path.compare(0, dir.size(), dir) == 0);
  FUZZ_CHECK(plan->audit_path.find('/', dir.size()) == std::string::npos);
  FUZZ_CHECK(plan->audit_path.find("..") == std::string::npos);
  return 0;
}
