// An OCI container's plan described (dry_run.h): the namespaces and the process from
// config.json as create prepared them, the groups and their writes as cgroup::Groups::Plan
// planned them, the root's steps as PlanRootfs planned them.
#include "oci/dry_run.h"

#include <linux/capability.h>

#include "manifest/manifest.h"
#include "oci/spec_tables.h"

namespace brig::oci {
namespace {

void CapNames(uint64_t set, google::protobuf::RepeatedPtrField<std::string>* out) {
  for (const Named& c : kCapabilities) {
    if (set & (uint64_t{1} << c.value)) out->Add(std::string(c.name));
  }
}

v1::OciPlanProcess ProcessOf(const Spec& spec, const container::ProcessSpec& p) {
  v1::OciPlanProcess out;
  for (const std::string& a : p.args) out.add_args(a);
  for (const std::string& kv : p.env) out.add_env_names(kv.substr(0, kv.find('=')));
  out.set_cwd(p.cwd);
  const security::Credentials& c = *p.credentials;
  out.set_uid(c.uid);
  out.set_gid(c.gid);
  for (gid_t g : c.groups) out.add_additional_gids(g);
  v1::OciPlanCapabilities* caps = out.mutable_capabilities();
  CapNames(c.caps.bounding, caps->mutable_bounding());
  CapNames(c.caps.effective, caps->mutable_effective());
  CapNames(c.caps.inheritable, caps->mutable_inheritable());
  CapNames(c.caps.permitted, caps->mutable_permitted());
  CapNames(c.caps.ambient, caps->mutable_ambient());
  out.set_no_new_privs(c.no_new_privs);
  out.set_seccomp(p.seccomp.has_value());
  if (p.seccomp) out.set_seccomp_instructions(static_cast<uint32_t>(p.seccomp->insns.size()));
  out.set_terminal(spec.process().terminal());
  return out;
}

v1::OciPlanCgroups CgroupsOf(const cgroup::Groups::Planned& g) {
  v1::OciPlanCgroups out;
  for (const std::string& d : g.dirs) out.add_dirs(d);
  for (const cgroup::Groups::Noted& n : g.noted) {
    if (n.owned) {
      out.add_make(n.dir);
    } else {
      out.add_join(n.dir);
    }
  }
  for (const cgroup::ControlWrite& w : g.writes.writes) {
    v1::OciPlanCgroupWrite* o = out.add_writes();
    o->set_property(w.property);
    o->set_file(w.dir + "/" + w.file);
    o->set_value(w.value);
  }
  out.set_device_filter(g.writes.v2_devices);
  return out;
}

}  // namespace

v1::OciPlan Describe(const CreateOptions& o, const CreatePlan& p) {
  v1::OciPlan out;
  out.set_id(o.id);
  out.set_dry_run(true);
  out.set_bundle(o.bundle);
  out.set_rootfs(p.rootfs);
  for (const Namespace& n : p.spec.linux().namespaces()) {
    v1::OciPlanNamespace* ns = out.add_namespaces();
    ns->set_type(n.type());
    ns->set_path(n.path());
  }
  for (const fs::Step& s : p.rootfs_plan.before_pivot) *out.add_mounts() = manifest::Mount(s);
  for (const auto* steps : {&p.rootfs_plan.after_pivot, &p.rootfs_plan.last}) {
    for (const fs::Step& s : *steps) *out.add_mounts_after_pivot() = manifest::Mount(s);
  }
  *out.mutable_cgroups() = CgroupsOf(p.cgroups);
  *out.mutable_process() = ProcessOf(p.spec, p.process);
  return out;
}

Result<std::string> DryRun(const CreateOptions& o) {
  CreatePlan p = BRIG_TRY(PlanCreate(o));
  return manifest::Json(Describe(o, p));
}

}  // namespace brig::oci
