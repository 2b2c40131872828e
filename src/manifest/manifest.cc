#include "manifest/manifest.h"

#include <arpa/inet.h>
#include <google/protobuf/util/json_util.h>
#include <linux/mount.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>

#include <algorithm>
#include <cstdio>

#include "cgroup/groups.h"
#include "net/sealed_net.h"
#include "util/digest.h"
#include "util/dirs.h"
#include "util/parse.h"
#include "util/proto_json.h"

namespace brig::manifest {
namespace {

// Why a dry run's network section has no address and no set elements.
constexpr char kNotAllocated[] =
    "not allocated: a dry run leases no address, so this sandbox's set elements are not "
    "known yet (a real run's manifest lists them)";

v1::ManifestProfile Profile(const config::Sandbox& sb) {
  v1::ManifestProfile p;
  p.set_name(sb.profile);
  p.set_path(sb.profile_path);
  p.set_sha256(util::Sha256Hex(sb.profile_text));
  *p.mutable_profile() = sb.loaded_profile;
  return p;
}

// The set elements this sandbox gets: the very ones net::AddPortRules installs.
void NftSets(const net::PortRules& rules, net::Ipv4 gateway, v1::ManifestNetwork& n) {
  for (const net::SetElements& set : net::PortElements(rules, gateway)) {
    v1::ManifestNftSet* s = n.add_nft_sets();
    s->set_family(set.family == NFPROTO_BRIDGE ? "bridge" : "inet");
    s->set_table(set.table);
    s->set_set(set.set);
    for (std::string& e : net::RenderElements(set)) s->add_elements(std::move(e));
  }
}

v1::ManifestNetwork Network(const Inputs& in) {
  const config::Sandbox& sb = in.sb;
  v1::ManifestNetwork n;
  n.set_posture(sb.posture);
  n.set_on_deny(sb.deny_stop ? "stop" : "continue");
  if (!sb.network) return n;
  n.set_subnet(sb.network->Str());
  if (!sb.egress.open) {
    for (const auto& p : sb.egress.allowlist.patterns()) n.add_allow_hosts(p.Str());
  }
  for (const auto& a : sb.loaded_profile.network().allow_addresses()) n.add_allow_addresses(a);
  for (const auto& u : sb.egress.upstreams) n.add_dns_upstreams(u.Str());
  if (util::Rootless()) {
    // All of it is fixed: the dry run's is the run's.
    n.set_nft_rules(net::SealedNet::Table());
    n.set_address(net::SealedNet::AddressIn(*sb.network).addr.Str());
    return n;
  }
  n.set_nft_rules(net::BaseRules());
  if (!in.rules) {
    n.set_address(kNotAllocated);
    return n;
  }
  n.set_address(in.rules->addr.Str());
  NftSets(*in.rules, sb.network->Gateway(), n);
  return n;
}

std::string AddressStr(const broker::Address& a) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.sa.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a.sa);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  if (a.sa.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a.sa);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(v6->sin6_port));
  }
  return "unix";
}

// What the kernel is asked to set (and clear) on a mount, as mount(8) names it.
void AttrFlags(uint64_t set, uint64_t cleared, v1::ManifestMount& m) {
  if (set & MOUNT_ATTR_RDONLY) m.add_flags("ro");
  if (cleared & MOUNT_ATTR_RDONLY) m.add_flags("rw");
  if (set & MOUNT_ATTR_NOSUID) m.add_flags("nosuid");
  if (set & MOUNT_ATTR_NODEV) m.add_flags("nodev");
  if (cleared & MOUNT_ATTR_NODEV) m.add_flags("dev");
  if (set & MOUNT_ATTR_NOEXEC) m.add_flags("noexec");
}

v1::ManifestSeccomp Seccomp(const config::Sandbox& sb, const security::SeccompProgram& p) {
  v1::ManifestSeccomp s;
  s.set_policy(sb.seccomp_policy_name);
  s.set_path(sb.seccomp_policy);
  s.set_policy_sha256(util::Sha256Hex(p.text));
  s.set_bpf_sha256(util::Sha256Hex(std::string_view(
      reinterpret_cast<const char*>(p.insns.data()), p.insns.size() * sizeof(sock_filter))));
  s.set_bpf_instructions(static_cast<uint32_t>(p.insns.size()));
  return s;
}

v1::ManifestLimits Limits(const config::Sandbox& sb) {
  v1::ManifestLimits l;
  l.set_timeout_ms(static_cast<uint32_t>(sb.timeout.count()));
  l.set_grace_ms(static_cast<uint32_t>(sb.grace.count()));
  l.set_memory_bytes(sb.limits.memory.value_or(0));
  l.set_swap_bytes(sb.limits.memory ? sb.limits.swap.value_or(0) : 0);
  l.set_pids(sb.limits.pids.value_or(0));
  if (sb.limits.cpu_milli) l.set_cpus(CpuCount(*sb.limits.cpu_milli));
  l.set_tmp_size_bytes(sb.fs.tmp_size);
  l.set_disk_bytes(sb.fs.disk_size);
  l.set_output_limit_bytes(sb.output_limit.value_or(0));
  l.set_rlimit_nofile(sb.rlimits.nofile);
  l.set_rlimit_nproc(sb.rlimits.nproc);
  l.set_rlimit_core(sb.rlimits.core);
  l.set_rlimit_msgqueue(sb.rlimits.msgqueue);
  l.set_rlimit_sigpending(sb.rlimits.sigpending);
  v1::UserCounts* u = l.mutable_user_counts();
  u->set_inotify_instances(sb.user_counts.inotify_instances);
  u->set_inotify_watches(sb.user_counts.inotify_watches);
  u->set_fanotify_groups(sb.user_counts.fanotify_groups);
  u->set_fanotify_marks(sb.user_counts.fanotify_marks);
  u->set_namespaces(sb.user_counts.namespaces);
  l.set_egress_budget_bytes(sb.egress_budget.value_or(0));
  l.set_wait_all(sb.wait_all);
  for (const std::string& dir :
       cgroup::Groups::SandboxDirs(sb.cgroup_layout, sb.cgroup_plan, sb.id)) {
    l.add_cgroups(dir);
  }
  return l;
}

// An OCI step's mount(2) flags, as mount(8) names them.
void MsFlags(unsigned long flags, v1::ManifestMount& m) {
  static const std::pair<unsigned long, const char*> kNames[] = {
      {MS_RDONLY, "ro"},         {MS_NOSUID, "nosuid"},           {MS_NODEV, "nodev"},
      {MS_NOEXEC, "noexec"},     {MS_SYNCHRONOUS, "sync"},        {MS_DIRSYNC, "dirsync"},
      {MS_MANDLOCK, "mand"},     {MS_NOATIME, "noatime"},         {MS_NODIRATIME, "nodiratime"},
      {MS_RELATIME, "relatime"}, {MS_STRICTATIME, "strictatime"}, {MS_REMOUNT, "remount"},
      {MS_BIND, "bind"},         {MS_SHARED, "shared"},           {MS_SLAVE, "slave"},
      {MS_PRIVATE, "private"},   {MS_UNBINDABLE, "unbindable"},   {MS_REC, "rec"}};
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) m.add_flags(name);
  }
}

// What an OCI container's step adds to its entry: the config.json field it comes from, its
// mount(2) flags, and what its kind (kBindSource ... kPropagation) has. A native step has
// none of these.
void OciStep(const fs::Step& s, v1::ManifestMount& m) {
  using K = fs::StepKind;
  m.set_field(s.field);
  if (s.kind == K::kBindSource) m.add_flags(s.recursive ? "rbind" : "bind");
  if (s.kind == K::kBindSource && s.remount) m.add_flags("remount");
  MsFlags(s.flags, m);
  if (s.kind == K::kMount || s.kind == K::kTmpfsCopyUp) {
    m.set_type(s.kind == K::kTmpfsCopyUp ? "tmpfs" : s.type);
    m.set_options(s.data);
  }
  if (s.kind == K::kCgroupGroups) {
    for (const std::string& g : s.groups) {
      m.set_source(m.source() + (m.source().empty() ? "" : " ") + g);
    }
  }
  if (s.kind == K::kLinkInRoot) m.set_source(s.data);
  if (s.kind == K::kDevice) {
    m.set_type(S_ISBLK(s.mode) ? "b" : S_ISFIFO(s.mode) ? "p" : "c");
    m.set_source(std::to_string(major(s.rdev)) + ":" + std::to_string(minor(s.rdev)));
    char mode[16];
    snprintf(mode, sizeof mode, "mode=%o", s.mode & 07777);
    m.add_flags(mode);
    m.add_flags("uid=" + std::to_string(s.uid));
    m.add_flags("gid=" + std::to_string(s.gid));
  }
}

// brig run's own new file system (a kMount with no config.json field): listed by its type
// ("tmpfs", "proc", "devpts"), its flags and its options ("size=N", "mode=M").
void NativeNewFs(const fs::Step& s, v1::ManifestMount& m) {
  m.set_kind(s.type);
  MsFlags(s.flags, m);
  for (std::string_view opt : util::Split(s.data, ',')) {
    if (!opt.empty()) m.add_flags(std::string(opt));
  }
}

}  // namespace

v1::ManifestBroker Broker(const broker::Config& b) {
  v1::ManifestBroker m;
  m.set_name(b.name);
  m.set_port(b.port);
  m.set_unix_path(b.unix_path);
  m.set_target(b.to.Str());
  m.set_mode(b.http ? "http" : "tcp");
  for (const broker::Header& h : b.headers) m.add_header_names(h.name);
  m.set_attribution_header(b.attribution);
  for (const auto& x : b.methods) m.add_methods(x);
  for (const auto& x : b.paths) m.add_paths(x);
  for (const auto& a : b.addresses) m.add_addresses(AddressStr(a));
  for (const auto& u : b.unread) m.add_unread_headers(u);
  return m;
}

v1::ManifestMount Mount(const fs::Step& s) {
  using K = fs::StepKind;
  v1::ManifestMount m;
  m.set_target("/" + s.dest);
  m.set_kind(std::string(fs::StepName(s.kind)));
  m.set_source(s.kind == K::kSymlink ? s.data : s.source);
  AttrFlags(s.attrs, s.cleared, m);
  // These steps are read-only by what they are (fs/rootfs.cc makes them so).
  if (s.kind == K::kMask || s.kind == K::kReadOnly || s.kind == K::kSealRoRecursive ||
      s.kind == K::kProtect || s.kind == K::kHide) {
    m.add_flags("ro");
  }
  if (s.field.empty() && s.kind == K::kMount) {
    NativeNewFs(s, m);
  } else {
    OciStep(s, m);
  }
  // A flag two parts name (a read-only step's "ro" and its MS_RDONLY) is listed once.
  auto* f = m.mutable_flags();
  for (int i = f->size() - 1; i > 0; --i) {
    if (std::find(f->begin(), f->begin() + i, f->Get(i)) != f->begin() + i) {
      f->DeleteSubrange(i, 1);
    }
  }
  return m;
}

v1::Manifest Build(const Inputs& in) {
  const config::Sandbox& sb = in.sb;
  v1::Manifest m;
  m.set_sandbox_id(sb.id);
  m.set_dry_run(sb.dry_run);
  *m.mutable_profile() = Profile(sb);
  m.set_isolated(sb.isolated);
  for (const auto& a : sb.argv) m.add_argv(a);
  m.set_workspace(sb.fs.workspace);
  if (!sb.fs.workspace.empty()) m.set_workspace_mode(fs::WorkspaceModeName(sb.fs.workspace_mode));
  // The sandbox user's host ids: its own (the plan's), or without isolation the owner's.
  m.set_host_uid(sb.isolated ? in.plan.sandbox_uid : sb.host_uid);
  m.set_host_gid(sb.isolated ? in.plan.sandbox_gid : sb.host_gid);
  *m.mutable_network() = Network(in);
  for (const broker::Config& b : sb.brokers) *m.add_brokers() = Broker(b);
  for (const fs::Step& s : in.plan.steps) *m.add_mounts() = Mount(s);
  // Sorted: the plan has them in the order the directories listed them.
  std::vector<std::string> hidden = in.plan.hidden;
  std::sort(hidden.begin(), hidden.end());
  for (const std::string& h : hidden) m.add_hidden("/workspace/" + h);
  if (in.seccomp) *m.mutable_seccomp() = Seccomp(sb, *in.seccomp);
  *m.mutable_limits() = Limits(sb);
  for (const std::string& kv : sb.env) m.add_env_names(kv.substr(0, kv.find('=')));
  m.set_attempt(sb.attempt);
  return m;
}

std::string Json(const google::protobuf::Message& m) { return util::ProtoJson(m) + "\n"; }

std::string CpuCount(uint64_t milli) {
  char cpus[32];
  snprintf(cpus, sizeof cpus, "%llu.%03llu", static_cast<unsigned long long>(milli / 1000),
           static_cast<unsigned long long>(milli % 1000));
  std::string c = cpus;
  while (c.back() == '0') c.pop_back();
  if (c.back() == '.') c.pop_back();
  return c;
}

}  // namespace brig::manifest
