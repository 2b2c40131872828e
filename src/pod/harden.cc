#include "pod/harden.h"

#include <algorithm>

#include "config/profile.h"
#include "config/resolve.h"
#include "security/seccomp_cache.h"
#include "sys/syscalls.h"

namespace brig::pod {
namespace {

// The namespace of `type` config.json gives the container, if any: "" for a new one, its
// path for one joined.
std::optional<std::string> NamespaceOf(const oci::Spec& spec, const std::string& type) {
  for (const oci::Namespace& n : spec.linux().namespaces()) {
    if (n.type() == type) return n.path();
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<Held>> HeldBy(const std::string& root, const oci::Spec& spec) {
  std::optional<v1::RuntimeHandler> h = BRIG_TRY(FindHandler(HandlerDir(), root));
  if (!h) return std::optional<Held>();
  std::string dir = config::ResolvePolicyDir("");
  std::string name = BRIG_TRY(ChooseProfile(*h, spec.annotations()));
  config::LoadedProfile loaded =
      BRIG_TRY_CTX(config::LoadProfileFile(dir, name, config::ProfileCacheDir()),
                   "runtime handler " + h->name());
  Held held;
  held.plan = BRIG_TRY(PlanPod(*h, loaded.profile, spec.annotations()));
  held.plan.run.policy_dir = dir;
  held.sb =
      BRIG_TRY_CTX(config::Resolve(loaded.profile, held.plan.run), "runtime handler " + h->name());
  held.sb.profile_path = loaded.path;
  held.handler = std::move(*h);
  return std::optional(std::move(held));
}

Status HardenSpec(oci::Spec& spec) {
  struct {
    const char *type, *proc, *host;
  } const own[] = {
      {"network", "net", "hostNetwork"}, {"pid", "pid", "hostPID"}, {"ipc", "ipc", "hostIPC"}};
  for (const auto& [type, proc, host] : own) {
    std::optional<std::string> ns = NamespaceOf(spec, type);
    if (!ns || (!ns->empty() && BRIG_TRY(sys::IsOwnNamespace(*ns, proc)))) {
      return BadInput("linux.namespaces", type,
                      std::string("a pod of a brig runtime handler has a ") + type +
                          " namespace of its own (no " + host + ")");
    }
  }
  if (spec.linux().devices_size() > 0) {
    return BadInput("linux.devices", spec.linux().devices(0).path(),
                    "a pod of a brig runtime handler gets no host device (privileged, or a "
                    "device plugin's)");
  }
  for (const oci::Mount& m : spec.mounts()) {
    bool ro = std::find(m.options().begin(), m.options().end(), "ro") != m.options().end();
    if (m.type() == "sysfs" && !ro) {
      return BadInput("mounts", m.destination(),
                      "a pod of a brig runtime handler gets /sys read-only (not privileged)");
    }
  }
  spec.mutable_root()->set_readonly(true);
  if (spec.has_process()) HardenProcess(*spec.mutable_process());
  return {};
}

void HardenProcess(oci::Process& p) {
  p.set_no_new_privileges(true);
  *p.mutable_capabilities() = oci::Capabilities();
}

Result<security::SeccompProgram> ProfileFilter(const Held& held) {
  return BRIG_TRY_CTX(
      security::CompileSeccompFile(held.sb.seccomp_policy, security::SeccompCacheDir()),
      "runtime handler " + held.handler.name() + ": profile '" + held.sb.profile + "' seccomp");
}

std::string NetnsPath(const oci::Spec& spec) {
  for (const oci::Namespace& n : spec.linux().namespaces()) {
    if (n.type() == "network") return n.path();
  }
  return "";
}

}  // namespace brig::pod
