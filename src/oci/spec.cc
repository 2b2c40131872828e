// An OCI bundle's config.json (or an exec's process.json) read into oci::Spec and checked
// property by property, and the spec's names turned into kernel values through the tables
// of oci/spec_tables.h (namespaces, mount options, capabilities, rlimits, signals). Pure
// but LoadSpec; nothing here touches the process or the host.
#include "oci/spec.h"

#include <sched.h>
#include <sys/personality.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "oci/spec_tables.h"
#include "util/files.h"

namespace brig::oci {
namespace {

using google::protobuf::EnumDescriptor;
using google::protobuf::RepeatedPtrField;
using google::protobuf::Value;

// ---------------------------------------------------------------------------------------
// Errors: the property's path is the op, so that a wrapped error reads
// "config.json: linux.namespaces[2].type: unknown namespace 'foo'".

std::string Field(std::string_view base, std::string_view name) {
  if (base.empty()) return std::string(name);
  return std::string(base) + "." + std::string(name);
}

std::string Index(std::string_view base, int i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

Error Bad(const std::string& path, std::string detail) {
  return BadInput(path, "", std::move(detail));
}

std::string Quote(std::string_view v) { return "'" + std::string(v) + "'"; }

bool IsAbsolute(std::string_view path) { return !path.empty() && path[0] == '/'; }

Status NeedAbsolute(const std::string& path, std::string_view value) {
  if (value.empty()) return Bad(path, "must be set");
  if (!IsAbsolute(value)) return Bad(path, "must be an absolute path, not " + Quote(value));
  return {};
}

// What JSON kind a property of field `f` must have, as the runtime spec's Go types decode
// it: a string for a string or an enum's name, true or false for a bool, a number for a
// number. protobuf's parser takes more (a quoted number, a lone value for a list) and would
// run a config that runc refuses.
const char* WantedKind(const google::protobuf::FieldDescriptor* f, const Value& v) {
  using FD = google::protobuf::FieldDescriptor;
  switch (f->cpp_type()) {
    case FD::CPPTYPE_STRING:
      return v.has_string_value() ? nullptr : "a string";
    case FD::CPPTYPE_BOOL:
      return v.has_bool_value() ? nullptr : "true or false";
    case FD::CPPTYPE_ENUM:
      return v.has_string_value() || v.has_number_value() ? nullptr : "a string";
    case FD::CPPTYPE_MESSAGE:
      return v.has_struct_value() ? nullptr : "an object";
    default:
      return v.has_number_value() ? nullptr : "a number";
  }
}

// Every property of `object` that `d` knows has the JSON kind its field needs (null is
// taken as absent, as protobuf and Go take it); the first that does not is named.
Status CheckKinds(const google::protobuf::Struct& object, const google::protobuf::Descriptor* d,
                  const std::string& at) {
  for (const auto& [key, v] : object.fields()) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(key);
    for (int i = 0; !f && i < d->field_count(); ++i) {
      if (d->field(i)->json_name() == key) f = d->field(i);
    }
    if (!f || v.has_null_value()) continue;
    std::string path = Field(at, key);
    if (f->is_map()) {
      if (!v.has_struct_value()) return Bad(path, "must be an object");
      const google::protobuf::FieldDescriptor* value = f->message_type()->map_value();
      for (const auto& [k, e] : v.struct_value().fields()) {
        if (const char* want = WantedKind(value, e)) {
          return Bad(Field(path, k), std::string("must be ") + want);
        }
      }
      continue;
    }
    if (f->is_repeated()) {
      if (!v.has_list_value()) return Bad(path, "must be an array");
      for (int i = 0; i < v.list_value().values_size(); ++i) {
        const Value& e = v.list_value().values(i);
        if (const char* want = WantedKind(f, e)) {
          return Bad(Index(path, i), std::string("must be ") + want);
        }
        if (e.has_struct_value()) {
          BRIG_TRY(CheckKinds(e.struct_value(), f->message_type(), Index(path, i)));
        }
      }
      continue;
    }
    if (const char* want = WantedKind(f, v)) return Bad(path, std::string("must be ") + want);
    if (v.has_struct_value()) BRIG_TRY(CheckKinds(v.struct_value(), f->message_type(), path));
  }
  return {};
}

// protobuf's JSON parse, unknown properties ignored. Its messages are "(a.b[0]): why" for a
// value of the wrong type, else a syntax error with the text and a caret on further lines.
Status ParseJson(std::string_view json, std::string_view name, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), message, options);
  if (st.ok()) {
    Value tree;
    if (!google::protobuf::util::JsonStringToMessage(std::string(json), &tree).ok() ||
        !tree.has_struct_value()) {
      return Bad("invalid JSON", "not an object").Wrap(name);
    }
    if (auto kinds = CheckKinds(tree.struct_value(), message->GetDescriptor(), ""); !kinds) {
      return std::move(kinds).error().Wrap(name);
    }
    return {};
  }
  std::string msg(st.message());
  msg = msg.substr(0, msg.find('\n'));
  if (msg.rfind(": ", 0) == 0) msg.erase(0, 2);
  if (size_t end = msg.find("): "); msg.rfind("(", 0) == 0 && end != std::string::npos) {
    return Bad(msg.substr(1, end - 1), msg.substr(end + 3)).Wrap(name);
  }
  return Bad("invalid JSON", msg.empty() ? "cannot parse" : msg).Wrap(name);
}

// ---------------------------------------------------------------------------------------
// The process.

Result<security::CapSets> CapabilitiesOf(const Process& p, std::string_view at) {
  security::CapSets sets;
  if (!p.has_capabilities()) return sets;
  const Capabilities& c = p.capabilities();
  std::string base = Field(at, "capabilities");
  sets.bounding = BRIG_TRY(CapabilityMask(c.bounding(), Field(base, "bounding")));
  sets.effective = BRIG_TRY(CapabilityMask(c.effective(), Field(base, "effective")));
  sets.inheritable = BRIG_TRY(CapabilityMask(c.inheritable(), Field(base, "inheritable")));
  sets.permitted = BRIG_TRY(CapabilityMask(c.permitted(), Field(base, "permitted")));
  sets.ambient = BRIG_TRY(CapabilityMask(c.ambient(), Field(base, "ambient")));
  return sets;
}

Status CheckRlimits(const Process& p, std::string_view at) {
  std::set<std::string> seen;
  for (int i = 0; i < p.rlimits_size(); ++i) {
    const Rlimit& r = p.rlimits(i);
    std::string base = Index(Field(at, "rlimits"), i);
    if (!RlimitResource(r.type())) {
      return Bad(Field(base, "type"), "unknown rlimit " + Quote(r.type()));
    }
    if (!seen.insert(r.type()).second) {
      return Bad(Field(base, "type"), "duplicate rlimit " + Quote(r.type()));
    }
    if (r.soft() > r.hard()) {
      return Bad(Field(base, "soft"),
                 std::to_string(r.soft()) + " is above hard " + std::to_string(r.hard()));
    }
  }
  return {};
}

Status CheckProcess(const Process& p, std::string_view at) {
  if (p.args().empty()) return Bad(Field(at, "args"), "must not be empty");
  BRIG_TRY(NeedAbsolute(Field(at, "cwd"), p.cwd()));
  BRIG_TRY(CapabilitiesOf(p, at));
  BRIG_TRY(CheckRlimits(p, at));
  if (!p.apparmor_profile().empty()) {
    return Bad(Field(at, "apparmorProfile"), "not supported: brig applies no AppArmor profile (" +
                                                 Quote(p.apparmor_profile()) + ")");
  }
  if (p.has_oom_score_adj() && (p.oom_score_adj() < -1000 || p.oom_score_adj() > 1000)) {
    return Bad(Field(at, "oomScoreAdj"),
               std::to_string(p.oom_score_adj()) + " is not in -1000..1000");
  }
  if (p.has_io_priority()) {
    const std::string& c = p.io_priority().class_();
    if (c != "IOPRIO_CLASS_RT" && c != "IOPRIO_CLASS_BE" && c != "IOPRIO_CLASS_IDLE") {
      return Bad(Field(at, "ioPriority.class"), "unknown class " + Quote(c));
    }
    if (p.io_priority().priority() < 0 || p.io_priority().priority() > 7) {
      return Bad(Field(at, "ioPriority.priority"),
                 std::to_string(p.io_priority().priority()) + " is not in 0..7");
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------
// The rest of the spec.

Status CheckVersion(const std::string& v) {
  if (v.empty()) return Bad("ociVersion", "must be set");
  // SemVer: 1.MINOR.PATCH and any suffix; a later major may mean anything.
  if (v.size() < 3 || v.compare(0, 2, "1.") != 0 || !isdigit(static_cast<unsigned char>(v[2]))) {
    return Bad("ociVersion", Quote(v) + " is not a 1.x version, which brig reads");
  }
  return {};
}

// The spec allows a relative destination, deprecated, "relative to /": it is made absolute.
Status CheckMounts(RepeatedPtrField<Mount>* mounts) {
  for (int i = 0; i < mounts->size(); ++i) {
    Mount& m = (*mounts)[i];
    std::string base = Index("mounts", i);
    if (m.destination().empty()) return Bad(Field(base, "destination"), "must be set");
    if (!IsAbsolute(m.destination())) m.set_destination("/" + m.destination());
    if (m.uid_mappings().empty() != m.gid_mappings().empty()) {
      return Bad(Field(base, m.uid_mappings().empty() ? "uidMappings" : "gidMappings"),
                 "must be given with " +
                     std::string(m.uid_mappings().empty() ? "gidMappings" : "uidMappings"));
    }
  }
  return {};
}

// Every list of hooks.prestart ... hooks.poststop, named as the schema names it.
Status CheckHooks(const Hooks& hooks) {
  const auto* type = Hooks::descriptor();
  for (int f = 0; f < type->field_count(); ++f) {
    auto list = hooks.GetReflection()->GetRepeatedFieldRef<Hook>(hooks, type->field(f));
    Hook scratch;
    for (int i = 0; i < list.size(); ++i) {
      const Hook& h = list.Get(i, &scratch);
      std::string base = Index(Field("hooks", type->field(f)->json_name()), i);
      BRIG_TRY(NeedAbsolute(Field(base, "path"), h.path()));
      if (h.has_timeout() && h.timeout() <= 0) {
        return Bad(Field(base, "timeout"), "must be greater than zero");
      }
    }
  }
  return {};
}

}  // namespace

std::optional<int> SysctlNamespace(std::string_view key) {
  std::string k(key);
  std::replace(k.begin(), k.end(), '/', '.');
  for (const char* ipc : {"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
                          "kernel.shmall", "kernel.shmmax", "kernel.shmmni",
                          "kernel.shm_rmid_forced"}) {
    if (k == ipc) return CLONE_NEWIPC;
  }
  if (k.starts_with("fs.mqueue.")) return CLONE_NEWIPC;
  if (k.starts_with("net.")) return CLONE_NEWNET;
  if (k == "kernel.hostname" || k == "kernel.domainname") return CLONE_NEWUTS;
  return std::nullopt;
}

namespace {

// Which namespaces the spec names, and which of them are new (no path).
struct NamespaceSet {
  int named = 0;
  int fresh = 0;
};

Result<NamespaceSet> CheckNamespaces(const Linux& lnx) {
  NamespaceSet set;
  for (int i = 0; i < lnx.namespaces_size(); ++i) {
    const Namespace& ns = lnx.namespaces(i);
    std::string base = Index("linux.namespaces", i);
    std::optional<int> flag = NamespaceFlag(ns.type());
    if (!flag) return Bad(Field(base, "type"), "unknown namespace " + Quote(ns.type()));
    // A new namespace named twice is one, as runc takes it (its suite adds a cgroup
    // namespace to a spec that may have one); one also joined by path is a conflict.
    if ((set.named & *flag) && ns.path().empty() && (set.fresh & *flag)) continue;
    if (set.named & *flag) {
      return Bad(Field(base, "type"), "duplicate namespace " + Quote(ns.type()));
    }
    set.named |= *flag;
    if (ns.path().empty()) {
      set.fresh |= *flag;
    } else if (!IsAbsolute(ns.path())) {
      return Bad(Field(base, "path"), "must be an absolute path, not " + Quote(ns.path()));
    }
  }
  return set;
}

// No mapping of `maps` (named `path`) is empty.
Status CheckSizes(const RepeatedPtrField<IdMapping>& maps, const std::string& path) {
  for (int i = 0; i < maps.size(); ++i) {
    if (maps[i].size() == 0) return Bad(Field(Index(path, i), "size"), "must not be 0");
  }
  return {};
}

Status CheckIdMappings(const RepeatedPtrField<IdMapping>& maps, const std::string& path,
                       const NamespaceSet& ns) {
  if (maps.empty()) {
    if (ns.fresh & CLONE_NEWUSER) return Bad(path, "a new user namespace needs mappings");
    return {};
  }
  if (!(ns.named & CLONE_NEWUSER)) return Bad(path, "needs a user namespace in linux.namespaces");
  return CheckSizes(maps, path);
}

Status CheckDevices(const Linux& lnx) {
  for (int i = 0; i < lnx.devices_size(); ++i) {
    const Device& d = lnx.devices(i);
    std::string base = Index("linux.devices", i);
    if (d.type() != "c" && d.type() != "b" && d.type() != "u" && d.type() != "p") {
      return Bad(Field(base, "type"), "unknown device type " + Quote(d.type()) + " (c, b, u or p)");
    }
    BRIG_TRY(NeedAbsolute(Field(base, "path"), d.path()));
  }
  if (!lnx.has_resources()) return {};
  for (int i = 0; i < lnx.resources().devices_size(); ++i) {
    const DeviceRule& r = lnx.resources().devices(i);
    std::string base = Index("linux.resources.devices", i);
    if (!r.type().empty() && r.type() != "a" && r.type() != "c" && r.type() != "b") {
      return Bad(Field(base, "type"), "unknown device type " + Quote(r.type()) + " (a, c or b)");
    }
    if (r.access().find_first_not_of("rwm") != std::string::npos) {
      return Bad(Field(base, "access"), "unknown access " + Quote(r.access()) + " (r, w, m)");
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------
// linux.seccomp. protobuf keeps an unknown enum name as 0 in a field and drops it from a
// list, so the names are checked in a generic parse of the same text first.

const Value* Member(const Value& object, std::string_view json_name, std::string_view name) {
  if (object.kind_case() != Value::kStructValue) return nullptr;
  const auto& fields = object.struct_value().fields();
  auto it = fields.find(std::string(json_name));
  if (it == fields.end()) it = fields.find(std::string(name));
  return it == fields.end() ? nullptr : &it->second;
}

// A list's elements; a single value stands for a list of one, as protobuf reads it.
std::vector<const Value*> Elements(const Value* v) {
  std::vector<const Value*> out;
  if (!v || v->kind_case() == Value::kNullValue) return out;
  if (v->kind_case() != Value::kListValue) return {v};
  for (const auto& e : v->list_value().values()) out.push_back(&e);
  return out;
}

Status CheckEnumName(const Value* v, const std::string& path, const EnumDescriptor* type,
                     std::string_view what) {
  if (!v || v->kind_case() == Value::kNullValue) return {};
  if (v->kind_case() != Value::kStringValue) {
    return Bad(path, "must be the name of " + std::string(what));
  }
  const auto* value = type->FindValueByName(v->string_value());
  if (!value || value->number() == 0) {
    return Bad(path, "unknown " + std::string(what) + " " + Quote(v->string_value()));
  }
  return {};
}

Status CheckSeccompNames(std::string_view json) {
  Value doc;
  if (auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &doc); !st.ok()) {
    std::string msg(st.message());
    return Bad("invalid JSON", msg.substr(0, msg.find('\n')));
  }
  const Value* seccomp = Member(doc, "linux", "linux");
  if (seccomp) seccomp = Member(*seccomp, "seccomp", "seccomp");
  if (!seccomp) return {};
  const std::string base = "linux.seccomp";
  BRIG_TRY(CheckEnumName(Member(*seccomp, "defaultAction", "default_action"),
                         Field(base, "defaultAction"), v1::SeccompAction_descriptor(), "action"));
  auto archs = Elements(Member(*seccomp, "architectures", "architectures"));
  for (size_t i = 0; i < archs.size(); ++i) {
    BRIG_TRY(CheckEnumName(archs[i], Index(Field(base, "architectures"), i),
                           v1::SeccompArch_descriptor(), "architecture"));
  }
  auto rules = Elements(Member(*seccomp, "syscalls", "syscalls"));
  for (size_t i = 0; i < rules.size(); ++i) {
    std::string rule = Index(Field(base, "syscalls"), i);
    BRIG_TRY(CheckEnumName(Member(*rules[i], "action", "action"), Field(rule, "action"),
                           v1::SeccompAction_descriptor(), "action"));
    auto args = Elements(Member(*rules[i], "args", "args"));
    for (size_t j = 0; j < args.size(); ++j) {
      BRIG_TRY(CheckEnumName(Member(*args[j], "op", "op"),
                             Field(Index(Field(rule, "args"), j), "op"), v1::SeccompOp_descriptor(),
                             "operator"));
    }
  }
  return {};
}

Status CheckAction(v1::SeccompAction action, const std::string& path) {
  if (action == v1::SECCOMP_ACTION_UNSPECIFIED) return Bad(path, "must be set");
  if (!v1::SeccompAction_IsValid(action)) {
    return Bad(path, "unknown action " + std::to_string(action));
  }
  return {};
}

Status CheckSeccomp(const v1::SeccompPolicy& s, std::string_view json) {
  BRIG_TRY(CheckSeccompNames(json));
  const std::string base = "linux.seccomp";
  BRIG_TRY(CheckAction(s.default_action(), Field(base, "defaultAction")));
  if (s.default_action() == v1::SCMP_ACT_NOTIFY) {
    return Bad(Field(base, "defaultAction"), "SCMP_ACT_NOTIFY cannot be used as default action");
  }
  for (int i = 0; i < s.architectures_size(); ++i) {
    int a = s.architectures(i);
    if (a == 0 || !v1::SeccompArch_IsValid(a)) {
      return Bad(Index(Field(base, "architectures"), i),
                 "unknown architecture " + std::to_string(a));
    }
  }
  for (int i = 0; i < s.flags_size(); ++i) {
    const std::string& f = s.flags(i);
    if (Contains(kSeccompFlags, f)) continue;
    bool known = Contains(kSeccompKnownFlags, f);
    return Bad(Index(Field(base, "flags"), i),
               (known ? "not supported: " : "unknown flag ") + Quote(f));
  }
  for (int i = 0; i < s.syscalls_size(); ++i) {
    const v1::SeccompRule& r = s.syscalls(i);
    std::string rule = Index(Field(base, "syscalls"), i);
    if (r.names().empty()) return Bad(Field(rule, "names"), "must not be empty");
    BRIG_TRY(CheckAction(r.action(), Field(rule, "action")));
    if (r.action() == v1::SCMP_ACT_NOTIFY && s.listener_path().empty()) {
      return Bad(Field(rule, "action"),
                 "SCMP_ACT_NOTIFY needs a seccomp agent: linux.seccomp.listenerPath is empty");
    }
    for (int j = 0; j < r.args_size(); ++j) {
      std::string arg = Index(Field(rule, "args"), j);
      if (r.args(j).index() > 5) return Bad(Field(arg, "index"), "must be 0 to 5");
      int op = r.args(j).op();
      if (op == 0 || !v1::SeccompOp_IsValid(op)) {
        return Bad(Field(arg, "op"),
                   op == 0 ? "must be set" : "unknown operator " + std::to_string(op));
      }
    }
  }
  return {};
}

Result<NamespaceSet> CheckLinux(const Spec& spec, std::string_view json) {
  const Linux& lnx = spec.linux();
  NamespaceSet ns = BRIG_TRY(CheckNamespaces(lnx));
  BRIG_TRY(CheckIdMappings(lnx.uid_mappings(), "linux.uidMappings", ns));
  BRIG_TRY(CheckIdMappings(lnx.gid_mappings(), "linux.gidMappings", ns));
  // As runc: a uts namespace of its own or one joined by path (a pod's), not the host's.
  if (!spec.hostname().empty() && !(ns.named & CLONE_NEWUTS)) {
    return Bad("hostname", "needs a uts namespace in linux.namespaces");
  }
  if (!spec.domainname().empty() && !(ns.named & CLONE_NEWUTS)) {
    return Bad("domainname", "needs a uts namespace in linux.namespaces");
  }
  BRIG_TRY(CheckDevices(lnx));
  BRIG_TRY(RootfsPropagation(lnx.rootfs_propagation()));
  if (lnx.has_personality()) BRIG_TRY(PersonalityValue(lnx.personality()));
  if (lnx.has_seccomp()) BRIG_TRY(CheckSeccomp(lnx.seccomp(), json));
  if (lnx.has_intel_rdt()) return Bad("linux.intelRdt", "not supported: brig has no Intel RDT");
  for (const auto& [key, value] : lnx.sysctl()) {
    if (key.empty()) return Bad("linux.sysctl", "a key is empty");
    std::optional<int> owner = SysctlNamespace(key);
    std::string at = "linux.sysctl " + Quote(key);
    if (!owner) return Bad(at, "not in a namespace of the container's: it would set the host's");
    if (!(ns.named & *owner)) {
      return Bad(at, "needs a" + std::string(*owner == CLONE_NEWIPC   ? "n ipc"
                                             : *owner == CLONE_NEWNET ? " network"
                                                                      : " uts") +
                         " namespace in linux.namespaces, or it would set the host's");
    }
  }
  return ns;
}

// An id-mapped mount (runtime-spec 1.1's uidMappings and gidMappings, runc's idmap and
// ridmap options) is a bind mount; idmap or ridmap alone takes the mappings of the
// container's own user namespace, written into the mount here.
Status CheckIdmappedMounts(Spec* spec, const NamespaceSet& ns) {
  for (int i = 0; i < spec->mounts_size(); ++i) {
    Mount& m = *spec->mutable_mounts(i);
    std::string base = Index("mounts", i);
    MountOptions o = ParseMountOptions({m.options().begin(), m.options().end()});
    if (m.uid_mappings().empty() && !o.idmap) continue;
    if (!o.bind && !IsBind(m)) {
      return Bad(Field(base, m.uid_mappings().empty() ? "options" : "uidMappings"),
                 "id-mapped mounts are only supported for bind mounts");
    }
    if (m.uid_mappings().empty()) {
      if (!(ns.fresh & CLONE_NEWUSER)) {
        return Bad(Field(base, "options"),
                   "idmap without uidMappings takes the container's own user namespace's "
                   "mappings, and linux.namespaces makes none");
      }
      *m.mutable_uid_mappings() = spec->linux().uid_mappings();
      *m.mutable_gid_mappings() = spec->linux().gid_mappings();
    }
    BRIG_TRY(CheckSizes(m.uid_mappings(), Field(base, "uidMappings")));
    BRIG_TRY(CheckSizes(m.gid_mappings(), Field(base, "gidMappings")));
  }
  return {};
}

Status CheckSpec(Spec* spec, std::string_view json) {
  BRIG_TRY(CheckVersion(spec->oci_version()));
  if (spec->root().path().empty()) return Bad("root.path", "must be set");
  if (!spec->has_process()) return Bad("process", "must be set");
  BRIG_TRY(CheckProcess(spec->process(), "process"));
  BRIG_TRY(CheckMounts(spec->mutable_mounts()));
  BRIG_TRY(CheckHooks(spec->hooks()));
  NamespaceSet ns = BRIG_TRY(CheckLinux(*spec, json));
  return CheckIdmappedMounts(spec, ns);
}

}  // namespace

Result<Spec> ParseSpec(std::string_view json, std::string_view name) {
  Spec spec;
  BRIG_TRY(ParseJson(json, name, &spec));
  if (auto st = CheckSpec(&spec, json); !st) return std::move(st).error().Wrap(name);
  return spec;
}

Result<Spec> LoadSpec(const std::string& bundle) {
  std::string text = BRIG_TRY(util::ReadUserFile(bundle + "/config.json"));
  return ParseSpec(text);
}

Result<Process> ParseProcess(std::string_view json, std::string_view name) {
  Process p;
  BRIG_TRY(ParseJson(json, name, &p));
  if (auto st = CheckProcess(p, ""); !st) return std::move(st).error().Wrap(name);
  return p;
}

std::optional<int> NamespaceFlag(std::string_view type) {
  for (const auto& n : kNamespaces) {
    if (n.type == type) return n.flag;
  }
  return std::nullopt;
}

std::string_view NamespaceProcName(int flag) {
  for (const auto& n : kNamespaces) {
    if (n.flag == flag) return n.proc;
  }
  return "";
}

MountOptions ParseMountOptions(const std::vector<std::string>& options) {
  MountOptions m;
  for (const auto& o : options) {
    const MountOption* known = Find(kMountOptions, o);
    if (!known) {
      if (o.empty()) continue;
      if (!m.data.empty()) m.data += ',';
      m.data += o;
      continue;
    }
    uint64_t v = known->value;
    switch (known->kind) {
      case Opt::kNone:
        break;
      case Opt::kSet:
        m.flags |= v;
        m.clear &= ~v;
        break;
      case Opt::kClear:
        m.clear |= v;
        m.flags &= ~v;
        break;
      case Opt::kPropagation:
        m.propagation = v;
        break;
      case Opt::kAttrSet:
        m.attr_set |= v;
        m.attr_clr &= ~v;
        break;
      case Opt::kAttrClear:
        m.attr_clr |= v;
        m.attr_set &= ~v;
        break;
      case Opt::kAtime:
        m.attr_set = (m.attr_set & ~uint64_t{MOUNT_ATTR__ATIME}) | v;
        m.attr_clr |= MOUNT_ATTR__ATIME;
        break;
      case Opt::kBind:
        m.bind = true;
        break;
      case Opt::kRbind:
        m.bind = m.recursive = true;
        break;
      case Opt::kTmpcopyup:
        m.tmpcopyup = true;
        break;
      case Opt::kIdmap:
        m.idmap = true;
        m.idmap_recursive = v != 0;
        break;
    }
  }
  return m;
}

std::vector<sys::IdMapping> IdMappings(const RepeatedPtrField<IdMapping>& from) {
  std::vector<sys::IdMapping> out;
  for (const IdMapping& m : from) out.push_back({m.container_id(), m.host_id(), m.size()});
  return out;
}

bool IsBind(const Mount& m) {
  if (m.type() == "bind" || m.type() == "rbind") return true;
  for (const auto& o : m.options()) {
    if (o == "bind" || o == "rbind") return true;
  }
  return false;
}

Result<unsigned long> RootfsPropagation(std::string_view value) {
  // runc's default: host mounts keep propagating in, nothing propagates out.
  if (value.empty()) return MS_SLAVE | MS_REC;
  const MountOption* o = Find(kMountOptions, value);
  if (!o || o->kind != Opt::kPropagation) {
    return Bad("linux.rootfsPropagation", "unknown propagation " + Quote(value));
  }
  return static_cast<unsigned long>(o->value);
}

Result<uint64_t> CapabilityMask(const RepeatedPtrField<std::string>& names,
                                std::string_view field) {
  uint64_t mask = 0;
  for (int i = 0; i < names.size(); ++i) {
    const Named* cap = Find(kCapabilities, names[i]);
    if (!cap) return Bad(Index(field, i), "unknown capability " + Quote(names[i]));
    mask |= uint64_t{1} << cap->value;
  }
  return mask;
}

Result<security::CapSets> CapabilitySets(const Process& p) {
  return CapabilitiesOf(p, "process");
}

std::optional<int> RlimitResource(std::string_view name) {
  if (const Named* r = Find(kRlimits, name)) return r->value;
  return std::nullopt;
}

Result<int> ParseSignal(std::string_view s) {
  auto bad = [&] { return BadInput("signal", std::string(s), "unknown signal"); };
  auto number = [](std::string_view digits) -> std::optional<int> {
    int n = 0;
    if (digits.empty() || !isdigit(static_cast<unsigned char>(digits[0]))) return std::nullopt;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      return std::nullopt;
    }
    return n;
  };
  if (!s.empty() && isdigit(static_cast<unsigned char>(s[0]))) {
    std::optional<int> n = number(s);
    if (!n || *n < 1 || *n > kRtMax) return bad();
    return *n;
  }
  std::string name;
  for (char c : s) name += static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
  if (const Named* sig = Find(kSignals, name)) return sig->value;
  if (name == "RTMIN") return kRtMin;
  if (name == "RTMAX") return kRtMax;
  std::optional<int> n;
  if (name.rfind("RTMIN+", 0) == 0) n = number(std::string_view(name).substr(6));
  if (n && *n <= kRtMax - kRtMin) return kRtMin + *n;
  n.reset();
  if (name.rfind("RTMAX-", 0) == 0) n = number(std::string_view(name).substr(6));
  if (n && *n <= kRtMax - kRtMin) return kRtMax - *n;
  return bad();
}

Result<unsigned long> PersonalityValue(const Personality& p) {
  if (!p.flags().empty()) {
    return Bad("linux.personality.flags", "not supported: brig sets no personality flags");
  }
  if (p.domain() == "LINUX") return static_cast<unsigned long>(PER_LINUX);
  if (p.domain() == "LINUX32") return static_cast<unsigned long>(PER_LINUX32);
  return Bad("linux.personality.domain",
             "unknown domain " + Quote(p.domain()) + " (LINUX or LINUX32)");
}

}  // namespace brig::oci
