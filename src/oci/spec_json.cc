// What `brig spec` and `brig features` print: a config.json brig runs as it is, in the
// style of runc's, and features.md's object built from the tables brig reads configs with.
// Pretty JSON, written member by member so that numbers stay numbers (protobuf's JSON
// printer would quote the 64-bit ones) and members keep the spec's order.
#include "oci/spec.h"

#include <google/protobuf/descriptor.h>

#include <string>
#include <type_traits>
#include <vector>

#include "log/log.h"
#include "oci/spec_tables.h"

namespace brig::oci {
namespace {

using google::protobuf::EnumDescriptor;

// A JSON string: log::JsonEscape's escaping, in quotes.
std::string JsonString(std::string_view s) { return "\"" + log::JsonEscape(s) + "\""; }

class JsonWriter {
 public:
  JsonWriter& Open(std::string_view key, char bracket) {
    Item(key);
    out_ += bracket;
    open_.push_back({bracket == '{' ? '}' : ']', true});
    return *this;
  }
  JsonWriter& Close() {
    bool empty = open_.back().empty;
    char bracket = open_.back().close;
    open_.pop_back();
    if (!empty) out_ += "\n" + std::string(2 * open_.size(), ' ');
    out_ += bracket;
    return *this;
  }
  JsonWriter& Str(std::string_view key, std::string_view value) {
    Item(key);
    out_ += JsonString(value);
    return *this;
  }
  // A number or a boolean, as written.
  JsonWriter& Raw(std::string_view key, std::string_view value) {
    Item(key);
    out_ += value;
    return *this;
  }
  template <typename Names>
  JsonWriter& List(std::string_view key, const Names& names) {
    Open(key, '[');
    for (const auto& n : names) Str("", n);
    return Close();
  }
  std::string Text() const { return out_ + "\n"; }

 private:
  struct Level {
    char close;
    bool empty;
  };
  void Item(std::string_view key) {
    if (!open_.empty()) {
      if (!open_.back().empty) out_ += ',';
      open_.back().empty = false;
      out_ += "\n" + std::string(2 * open_.size(), ' ');
    }
    if (!key.empty()) out_ += JsonString(key) + ": ";
  }
  std::string out_;
  std::vector<Level> open_;
};

void WriteMount(JsonWriter& w, std::string_view destination, std::string_view type,
                std::string_view source, const std::vector<std::string_view>& options) {
  w.Open("", '{').Str("destination", destination).Str("type", type).Str("source", source);
  if (!options.empty()) w.List("options", options);
  w.Close();
}

// runc's, less what a rootless container cannot mount.
void WriteMounts(JsonWriter& w, bool rootless) {
  w.Open("mounts", '[');
  WriteMount(w, "/proc", "proc", "proc", {});
  WriteMount(w, "/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"});
  // Rootless: no gid= (group 5 is not mapped), and no new sysfs outside a network
  // namespace of its own: the host's /sys, bound read-only.
  std::vector<std::string_view> pts = {"nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                       "mode=0620"};
  if (!rootless) pts.push_back("gid=5");
  WriteMount(w, "/dev/pts", "devpts", "devpts", pts);
  WriteMount(w, "/dev/shm", "tmpfs", "shm",
             {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"});
  WriteMount(w, "/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"});
  if (rootless) {
    WriteMount(w, "/sys", "none", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"});
  } else {
    WriteMount(w, "/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"});
  }
  WriteMount(w, "/sys/fs/cgroup", "cgroup", "cgroup",
             {"nosuid", "noexec", "nodev", "relatime", "ro"});
  w.Close();
}

void WriteIdMapping(JsonWriter& w, std::string_view key, unsigned host_id) {
  w.Open(key, '[').Open("", '{');
  w.Raw("containerID", "0").Raw("hostID", std::to_string(host_id)).Raw("size", "1");
  w.Close().Close();
}

// The names of an enum but its 0 (UNSPECIFIED) and `skip`.
std::vector<std::string> EnumNames(const EnumDescriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) {
    if (type->value(i)->number() != 0) names.push_back(type->value(i)->name());
  }
  return names;
}

template <typename Table>
std::vector<std::string_view> Names(const Table& table) {
  std::vector<std::string_view> names;
  for (const auto& e : table) {
    if constexpr (std::is_same_v<std::decay_t<decltype(e)>, NamespaceName>) {
      names.push_back(e.type);
    } else {
      names.push_back(e.name);
    }
  }
  return names;
}

// The hooks config.json names, from the schema.
std::vector<std::string> HookNames() {
  std::vector<std::string> names;
  const auto* hooks = Hooks::descriptor();
  for (int i = 0; i < hooks->field_count(); ++i) names.push_back(hooks->field(i)->json_name());
  return names;
}

}  // namespace

std::string DefaultSpecJson(bool rootless, uid_t uid, gid_t gid) {
  const std::vector<std::string_view> caps = {"CAP_AUDIT_WRITE", "CAP_KILL",
                                              "CAP_NET_BIND_SERVICE"};
  JsonWriter w;
  w.Open("", '{').Str("ociVersion", kSpecVersion);
  w.Open("process", '{').Raw("terminal", "true");
  w.Open("user", '{').Raw("uid", "0").Raw("gid", "0").Close();
  w.List("args", std::vector<std::string_view>{"sh"});
  w.List("env",
         std::vector<std::string_view>{
             "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"});
  w.Str("cwd", "/");
  w.Open("capabilities", '{').List("bounding", caps).List("effective", caps);
  w.List("permitted", caps).Close();
  w.Open("rlimits", '[').Open("", '{').Str("type", "RLIMIT_NOFILE");
  w.Raw("hard", "1024").Raw("soft", "1024").Close().Close();
  w.Raw("noNewPrivileges", "true").Close();
  w.Open("root", '{').Str("path", "rootfs").Raw("readonly", "true").Close();
  w.Str("hostname", "brig");
  WriteMounts(w, rootless);
  w.Open("linux", '{');
  if (rootless) {
    WriteIdMapping(w, "uidMappings", uid);
    WriteIdMapping(w, "gidMappings", gid);
  } else {
    // Rootless has no device cgroup to write to: runc's --rootless drops resources.
    w.Open("resources", '{').Open("devices", '[').Open("", '{');
    w.Raw("allow", "false").Str("access", "rwm").Close().Close().Close();
  }
  w.Open("namespaces", '[');
  // Rootless: no network namespace, which only root could give an interface.
  for (std::string_view ns : {"pid", "network", "ipc", "uts", "mount", "cgroup", "user"}) {
    if ((ns == "network" && rootless) || (ns == "user" && !rootless)) continue;
    w.Open("", '{').Str("type", ns).Close();
  }
  w.Close();
  w.List("maskedPaths",
         std::vector<std::string_view>{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                                       "/proc/latency_stats", "/proc/timer_list",
                                       "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
                                       "/sys/firmware", "/sys/devices/virtual/powercap"});
  w.List("readonlyPaths", std::vector<std::string_view>{"/proc/bus", "/proc/fs", "/proc/irq",
                                                        "/proc/sys", "/proc/sysrq-trigger"});
  w.Close().Close();
  return w.Text();
}

std::string FeaturesJson() {
  JsonWriter w;
  w.Open("", '{').Str("ociVersionMin", "1.0.0").Str("ociVersionMax", "1.1.0");
  w.List("hooks", HookNames()).List("mountOptions", Names(kMountOptions));
  w.Open("linux", '{').List("namespaces", Names(kNamespaces));
  w.List("capabilities", Names(kCapabilities));
  w.Open("cgroup", '{').Raw("v1", "true").Raw("v2", "true").Raw("systemd", "true");
  w.Raw("systemdUser", "false").Raw("rdma", "false").Close();
  w.Open("seccomp", '{').Raw("enabled", "true");
  w.List("actions", EnumNames(v1::SeccompAction_descriptor()));
  w.List("operators", EnumNames(v1::SeccompOp_descriptor()));
  w.List("archs", EnumNames(v1::SeccompArch_descriptor()));
  w.List("knownFlags", kSeccompKnownFlags).List("supportedFlags", kSeccompFlags).Close();
  w.Open("apparmor", '{').Raw("enabled", "false").Close();
  w.Open("selinux", '{').Raw("enabled", "false").Close();
  w.Open("intelRdt", '{').Raw("enabled", "false").Close();
  w.Open("mountExtensions", '{').Open("idmap", '{').Raw("enabled", "true").Close().Close();
  w.Close();
  w.Open("annotations", '{').Str("io.github.brig.version", BRIG_VERSION).Close();
  w.Close();
  return w.Text();
}

}  // namespace brig::oci
