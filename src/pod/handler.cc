#include "pod/handler.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

#include "broker/spec.h"
#include "egress/allowlist.h"
#include "egress/upstream.h"
#include "proto/textproto.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::pod {
namespace {

constexpr char kProfileKey[] = "brig/profile";
constexpr char kHostsKey[] = "brig/allow-hosts";
constexpr char kBudgetKey[] = "brig/egress-budget";
constexpr char kBrokersKey[] = "brig/brokers";

// containerd's own annotations (pkg/cri/annotations), which a pod cannot set: containerd
// passes only the pod's annotations its runtime's pod_annotations name, and writes these
// after them.
constexpr char kContainerType[] = "io.kubernetes.cri.container-type";
constexpr char kSandboxId[] = "io.kubernetes.cri.sandbox-id";
constexpr char kSandboxNs[] = "io.kubernetes.cri.sandbox-namespace";
constexpr char kSandboxName[] = "io.kubernetes.cri.sandbox-name";
constexpr char kSandboxUid[] = "io.kubernetes.cri.sandbox-uid";

Error BadAnnotation(const std::string& key, const std::string& value, const std::string& why) {
  return BadInput("annotation " + key, value, why);
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

// "a, b,c" into its non-empty pieces; an empty piece is refused.
Result<std::vector<std::string>> List(const std::string& key, const std::string& value) {
  std::vector<std::string> out;
  for (std::string_view piece : util::Split(value, ',')) {
    std::string item = Trim(piece);
    if (item.empty()) return BadAnnotation(key, value, "an empty item in the list");
    out.push_back(std::move(item));
  }
  return out;
}

const std::string* Find(const Annotations& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? nullptr : &it->second;
}

// A Kubernetes name, namespace or uid, safe as part of a file name.
bool IsNamePart(const std::string& s) {
  return !s.empty() && s.size() <= 253 && s != "." && s != ".." &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.';
         });
}

Status CheckHandler(const v1::RuntimeHandler& h, const std::string& file, const std::string& name) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return Fail(file, field, why, ErrorKind::kBadInput);
  };
  if (h.name() != name) return bad("name", "must be '" + name + "', the file's name");
  if (h.root().empty() || h.root()[0] != '/') return bad("root", "must be an absolute path");
  if (h.profile().empty()) return bad("profile", "missing");
  if (!h.egress_bytes().empty()) {
    if (auto s = util::ParseSize(h.egress_bytes()); !s)
      return bad("egress_bytes", s.error().Render());
  }
  if (!h.dns_upstream().empty()) {
    if (auto u = egress::ParseUpstream(h.dns_upstream()); !u) {
      return bad("dns_upstream", u.error().Render());
    }
  }
  for (const std::string& d : h.direct()) {
    if (auto p = net::ParseDirect(d); !p) return bad("direct", p.error().Render());
  }
  std::vector<broker::Config> brokers;
  for (const v1::Broker& b : h.brokers()) {
    auto c = broker::Check(b);
    if (!c) return bad("brokers " + b.name(), c.error().Render());
    if (b.port() == 0 || !b.unix_path().empty()) {
      return bad("brokers " + b.name(),
                 "a pod's broker is a TCP port on its loopback: port, no unix_path");
    }
    for (const v1::BrokerHeader& hd : b.headers()) {
      if (hd.from().rfind("file:/", 0) != 0) {
        return bad("brokers " + b.name(),
                   "header " + hd.name() + " must come from a node file (file:/PATH)");
      }
    }
    brokers.push_back(std::move(*c));
  }
  if (auto s = broker::CheckAll(brokers); !s) return bad("brokers", s.error().Render());
  if (!h.audit_dir().empty() && h.audit_dir()[0] != '/') {
    return bad("audit_dir", "must be an absolute path");
  }
  return {};
}

}  // namespace

std::string HandlerDir() {
  const char* dir = getenv(kHandlerDirEnv);
  return dir && *dir ? dir : kDefaultHandlerDir;
}

Result<v1::RuntimeHandler> ParseHandler(const std::string& text, const std::string& file,
                                        const std::string& name) {
  v1::RuntimeHandler h;
  BRIG_TRY(proto::ParseTextProto(text, file, &h));
  BRIG_TRY(CheckHandler(h, file, name));
  return h;
}

Result<std::optional<v1::RuntimeHandler>> FindHandler(const std::string& dir,
                                                      const std::string& root) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) {
    if (errno == ENOENT) return std::optional<v1::RuntimeHandler>();
    return SysError("opendir", "runtime handlers " + dir);
  }
  std::string parent = root.substr(0, root.find_last_of('/'));
  std::vector<std::string> names;
  while (dirent* e = readdir(d.get())) {
    std::string f = e->d_name;
    constexpr std::string_view ext = ".textproto";
    if (f.size() > ext.size() && f.compare(f.size() - ext.size(), ext.size(), ext) == 0) {
      names.push_back(f.substr(0, f.size() - ext.size()));
    }
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string file = dir + "/" + name + ".textproto";
    std::string text = BRIG_TRY(util::ReadFile(file));
    v1::RuntimeHandler h = BRIG_TRY(ParseHandler(text, file, name));
    if (h.root() == root || h.root() == parent) return std::optional(std::move(h));
  }
  return std::optional<v1::RuntimeHandler>();
}

Result<Pod> IdentityOf(const Annotations& a) {
  Pod p;
  const std::string* type = Find(a, kContainerType);
  if (!type || (*type != "sandbox" && *type != "container")) {
    return BadInput("annotation " + std::string(kContainerType), type ? *type : "",
                    "a runtime handler's containers come from containerd's CRI, which sets "
                    "'sandbox' or 'container'");
  }
  p.sandbox = *type == "sandbox";
  struct {
    const char* key;
    std::string* out;
  } fields[] = {{kSandboxId, &p.sandbox_id},
                {kSandboxNs, &p.ns},
                {kSandboxName, &p.name},
                {kSandboxUid, &p.uid}};
  for (auto& f : fields) {
    const std::string* v = Find(a, f.key);
    if (!v || !IsNamePart(*v)) {
      return BadInput("annotation " + std::string(f.key), v ? *v : "",
                      "missing or not a Kubernetes name");
    }
    *f.out = *v;
  }
  return p;
}

Result<std::string> ChooseProfile(const v1::RuntimeHandler& h, const Annotations& a) {
  const std::string* asked = Find(a, kProfileKey);
  if (!asked || *asked == h.profile()) return h.profile();
  if (std::find(h.permit().begin(), h.permit().end(), *asked) == h.permit().end()) {
    std::string allowed = h.profile();
    for (const auto& p : h.permit()) allowed += ", " + p;
    return BadAnnotation(kProfileKey, *asked,
                         "runtime handler " + h.name() + " permits only " + allowed);
  }
  return *asked;
}

Result<Plan> PlanPod(const v1::RuntimeHandler& h, const v1::Profile& profile,
                     const Annotations& a) {
  Plan plan;
  plan.pod = BRIG_TRY(IdentityOf(a));
  for (const auto& [key, value] : a) {
    if (key.rfind(kAnnotationPrefix, 0) != 0) continue;
    if (key != kProfileKey && key != kHostsKey && key != kBudgetKey && key != kBrokersKey) {
      return BadAnnotation(key, value,
                           "unknown: brig reads brig/profile, brig/allow-hosts, "
                           "brig/egress-budget and brig/brokers");
    }
  }
  if (profile.isolation() != v1::ISOLATION_SANDBOX) {
    return BadInput("runtime handler " + h.name(), h.profile(),
                    "a pod's profile must isolate (ISOLATION_SANDBOX)");
  }
  config::Overrides& run = plan.run;
  run.profile = BRIG_TRY(ChooseProfile(h, a));
  run.id = plan.pod.sandbox_id;
  run.name = plan.pod.Label();
  if (const std::string* hosts = Find(a, kHostsKey)) {
    if (profile.network().posture() != v1::POSTURE_ALLOWLIST) {
      return BadAnnotation(kHostsKey, *hosts,
                           "profile '" + run.profile + "' has no allowlist to add hosts to");
    }
    run.allow_hosts = BRIG_TRY(List(kHostsKey, *hosts));
    if (auto s = egress::Allowlist::Parse(run.allow_hosts); !s) {
      return BadAnnotation(kHostsKey, *hosts, s.error().Render());
    }
  }
  std::optional<uint64_t> budget;
  auto narrow = [&](uint64_t v) { budget = budget ? std::min(*budget, v) : v; };
  if (!profile.limits().egress_bytes().empty()) {
    narrow(BRIG_TRY(util::ParseSize(profile.limits().egress_bytes())));
  }
  if (!h.egress_bytes().empty()) narrow(BRIG_TRY(util::ParseSize(h.egress_bytes())));
  if (const std::string* asked = Find(a, kBudgetKey)) {
    auto v = util::ParseSize(*asked);
    if (!v) return BadAnnotation(kBudgetKey, *asked, v.error().Render());
    if (budget && *v > *budget) {
      return BadAnnotation(kBudgetKey, *asked,
                           "more than the " + std::to_string(*budget) + " bytes runtime handler " +
                               h.name() + " allows");
    }
    budget = *v;
  }
  run.egress_budget = budget;
  if (!h.dns_upstream().empty())
    run.dns_upstream = BRIG_TRY(egress::ParseUpstream(h.dns_upstream()));
  if (const std::string* names = Find(a, kBrokersKey)) {
    for (const std::string& name : BRIG_TRY(List(kBrokersKey, *names))) {
      auto it = std::find_if(h.brokers().begin(), h.brokers().end(),
                             [&](const v1::Broker& b) { return b.name() == name; });
      if (it == h.brokers().end()) {
        return BadAnnotation(kBrokersKey, name,
                             "runtime handler " + h.name() + " has no such broker");
      }
      if (std::any_of(run.brokers.begin(), run.brokers.end(),
                      [&](const auto& b) { return b.first == name; })) {
        return BadAnnotation(kBrokersKey, name, "named twice");
      }
      run.brokers.emplace_back(name, *it);
    }
  }
  for (const std::string& d : h.direct()) plan.direct.push_back(BRIG_TRY(net::ParseDirect(d)));
  std::string dir = h.audit_dir().empty() ? kDefaultAuditDir : h.audit_dir();
  plan.audit_path = dir + "/" + plan.pod.ns + "_" + plan.pod.name + "_" + plan.pod.uid + ".jsonl";
  run.audit_path = plan.audit_path;
  return plan;
}

}  // namespace brig::pod
