// Kubernetes pods on a brig runtime handler (design.md, OCI mode, "Pods get brig's
// sandbox"; brig-engines(7), PODS). The operator binds each containerd runtime handler
// that runs brig to a posture on the node, one file HANDLER_DIR/NAME.textproto
// (v1::RuntimeHandler): the profile, the profiles a pod may pick instead, the most egress a
// pod may ask for, the brokers it may select, where its resolver asks, what it may reach
// directly, where its audit goes. brig knows which handler it serves from its --root:
// containerd's `Root` option for the handler, under which the shim adds its namespace.
//
// A pod chooses within that through annotations containerd passes into config.json
// (`pod_annotations = ["brig/*"]`), and never widens it:
//
//   brig/profile        a profile the handler names (profile or permit)
//   brig/allow-hosts    hosts added to the allowlist, comma-separated (posture allowlist)
//   brig/egress-budget  a byte budget ("100M"), within the handler's and the profile's
//   brig/brokers        brokers of the handler's, by name, comma-separated
//
// Any other brig/ key, a bad value or a choice the handler does not permit refuses the
// container's create with one line naming the annotation (the kubelet shows it in the
// pod's events). Pure but for reading the handler files; unit-tested.
#pragma once

#include <google/protobuf/map.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "config/overrides.h"
#include "net/inside_rules.h"
#include "net/link.h"
#include "proto/brig.pb.h"

namespace brig::pod {

inline constexpr char kHandlerDirEnv[] = "BRIG_HANDLER_DIR";
inline constexpr char kDefaultHandlerDir[] = "/etc/brig/handlers";
inline constexpr char kDefaultAuditDir[] = "/var/log/brig/pods";
inline constexpr char kAnnotationPrefix[] = "brig/";

using Annotations = google::protobuf::Map<std::string, std::string>;

// The handler directory: $BRIG_HANDLER_DIR (containerd's environment, which its shims
// pass on), else kDefaultHandlerDir.
std::string HandlerDir();

// Parses and checks one handler file's text: a name equal to `name`, an absolute root, a
// profile, sizes, `direct` entries, brokers whose headers come from files. Errors name
// file:line:column.
Result<v1::RuntimeHandler> ParseHandler(const std::string& text, const std::string& file,
                                        const std::string& name);

// The handler whose root is `root` or the directory above it, from `dir`'s *.textproto;
// nullopt if none is (a plain OCI runtime, as without handlers). A file that cannot be read
// or parsed is an error: brig never guesses a handler's posture.
Result<std::optional<v1::RuntimeHandler>> FindHandler(const std::string& dir,
                                                      const std::string& root);

// Who the container belongs to, from the annotations containerd sets itself.
struct Pod {
  std::string ns, name, uid;
  std::string sandbox_id;  // the pod sandbox's container id
  bool sandbox = false;    // this container is the sandbox (pause) container
  // "NAMESPACE/NAME" for messages and the audit's name.
  std::string Label() const { return ns + "/" + name; }
};
Result<Pod> IdentityOf(const Annotations& annotations);

// The profile the pod runs under: brig/profile if it names one the handler permits, else
// the handler's.
Result<std::string> ChooseProfile(const v1::RuntimeHandler& h, const Annotations& annotations);

// What a pod of the handler gets, its annotations laid over the handler's posture: the
// overrides config::Resolve takes with `profile` (ChooseProfile's, loaded), the direct
// destinations, its identity and its audit file.
struct Plan {
  config::Overrides run;
  std::vector<net::Direct> direct;
  Pod pod;
  std::string audit_path;
};
Result<Plan> PlanPod(const v1::RuntimeHandler& h, const v1::Profile& profile,
                     const Annotations& annotations);

}  // namespace brig::pod
