// brig check's probes (preflight.h). Each runs in a forked child that unshares what it
// needs first: the child's mounts, tables and links die with its namespaces.
#include "cli/preflight.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>

#include "config/limits.h"
#include "net/inside_rules.h"
#include "net/link.h"
#include "net/nft.h"
#include "net/sealed_net.h"
#include "security/sandbox_ids.h"
#include "security/seccomp.h"
#include "sys/child.h"
#include "sys/id_map.h"
#include "sys/syscalls.h"
#include "util/dirs.h"
#include "util/files.h"

namespace brig::cli {
namespace {

// Runs `probe` in a child and returns its result; the child's error comes back as its
// rendered line on a pipe.
Status InChild(const std::function<Status()>& probe) {
  sys::FdPair report = BRIG_TRY(sys::FdPair::Pipe(true, "probe"));
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "probe");
  if (pid == 0) {
    report.TakeParentEnd().Reset();
    sys::UniqueFd write_end = report.TakeChildEnd();
    Status s = probe();
    if (!s) {
      std::string line = s.error().Render();
      (void)!write(write_end.get(), line.data(), line.size());
    }
    _exit(s ? 0 : 1);
  }
  report.TakeChildEnd().Reset();
  sys::UniqueFd read_end = report.TakeParentEnd();
  std::string line;
  int status = sys::ReadAllAndReap(read_end.get(), pid, line);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (line.empty()) line = "the probe died (wait status " + std::to_string(status) + ")";
  return Fail("probe", "", line);
}

Status Unshare(int flags, const char* what) {
  if (unshare(flags) < 0) return SysError("unshare", what);
  return {};
}

// A mount namespace of the child's own whose mounts propagate nowhere.
Status PrivateMounts() {
  BRIG_TRY(Unshare(CLONE_NEWNS, "mount namespace"));
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    return SysError("make mounts private", "/");
  }
  return {};
}

// A fresh tmpfs on /tmp of the child's private mount namespace (fsopen, fsmount,
// move_mount), with directories `dirs`.
Status TmpfsOnTmp(std::initializer_list<const char*> dirs) {
  BRIG_TRY(PrivateMounts());
  sys::UniqueFd fs = BRIG_TRY(sys::FsOpen("tmpfs"));
  BRIG_TRY(sys::FsConfigCreate(fs.get(), "tmpfs"));
  sys::UniqueFd tree = BRIG_TRY(sys::FsMount(fs.get(), 0, "tmpfs"));
  BRIG_TRY(sys::MoveMount(tree.get(), "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH));
  for (const char* d : dirs) {
    if (mkdir((std::string("/tmp/") + d).c_str(), 0755) < 0) return SysError("mkdir", d);
  }
  return {};
}

Status ProbeUserNs() {
  auto max = util::ReadFile("/proc/sys/user/max_user_namespaces");
  if (max && max->rfind("0", 0) == 0) {
    return Fail("user.max_user_namespaces", "", "is 0: no user namespace can be made");
  }
  return Unshare(CLONE_NEWUSER, "user namespace");
}

Status ProbeNamespaces() {
  return Unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                     CLONE_NEWUTS | CLONE_NEWCGROUP,
                 "user, mount, pid, net, ipc, uts and cgroup namespaces");
}

Status ProbeSeccomp(const std::string& policy_file) {
  std::string text = BRIG_TRY(util::ReadUserFile(policy_file));
  v1::SeccompPolicy policy = BRIG_TRY(security::ParseSeccompPolicy(text, policy_file));
  security::SeccompProgram prog = BRIG_TRY(security::CompileSeccomp(policy));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return SysError("prctl", "no_new_privs");
  BRIG_TRY(security::LoadSeccomp(prog));
  return {};
}

Status ProbeMountApi() {
  BRIG_TRY(PrivateMounts());
  // Without root, / holds the host's submounts locked together: only all of it is cloned.
  sys::UniqueFd tree = BRIG_TRY(
      sys::OpenTree(AT_FDCWD, "/", OPEN_TREE_CLONE | (util::Rootless() ? AT_RECURSIVE : 0)));
  BRIG_TRY(sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0, "/ (a copy)"));
  BRIG_TRY(TmpfsOnTmp({}));
  (void)BRIG_TRY(sys::Openat2(AT_FDCWD, "/tmp", O_PATH | O_DIRECTORY,
                              RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS));
  return {};
}

Status ProbeOverlay() {
  BRIG_TRY(TmpfsOnTmp({"lower", "upper", "work"}));
  sys::UniqueFd fs = BRIG_TRY(sys::FsOpen("overlay"));
  BRIG_TRY(sys::FsConfigString(fs.get(), "lowerdir", "/tmp/lower"));
  BRIG_TRY(sys::FsConfigString(fs.get(), "upperdir", "/tmp/upper"));
  BRIG_TRY(sys::FsConfigString(fs.get(), "workdir", "/tmp/work"));
  if (util::Rootless()) BRIG_TRY(sys::FsConfigFlag(fs.get(), "userxattr", "overlay"));
  BRIG_TRY(sys::FsConfigCreate(fs.get(), "overlay"));
  (void)BRIG_TRY(sys::FsMount(fs.get(), 0, "overlay"));
  return {};
}

// A user namespace mapping 0 to 65534, made by a holder (sys::Holder) while its maps are
// written and it is opened.
Result<sys::UniqueFd> MappedUserNs() {
  sys::Child holder = BRIG_TRY(sys::Holder(CLONE_NEWUSER, "user namespace holder"));
  BRIG_TRY(sys::WriteIdMaps(holder.pid(), {.uids = {{.host = 65534}}, .gids = {{.host = 65534}}}));
  std::string path = "/proc/" + std::to_string(holder.pid()) + "/ns/user";
  sys::UniqueFd ns(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return SysError("open", path);
  return ns;
}

// On a detached copy of the mount that holds /tmp, as a workspace would be.
Status ProbeIdmap() {
  BRIG_TRY(PrivateMounts());
  sys::UniqueFd userns = BRIG_TRY(MappedUserNs());
  sys::UniqueFd tree = BRIG_TRY(sys::OpenTree(AT_FDCWD, "/tmp", OPEN_TREE_CLONE));
  return sys::MountSetIdmap(tree.get(), 0, userns.get(), "MOUNT_ATTR_IDMAP on /tmp's filesystem");
}

Status ProbeNftables() {
  BRIG_TRY(Unshare(CLONE_NEWNET, "network namespace"));
  BRIG_TRY(net::EnsureBaseRules(""));
  return {};
}

Status ProbeBridgeVeth() {
  BRIG_TRY(Unshare(CLONE_NEWNET, "network namespace"));
  net::Subnet subnet = BRIG_TRY(net::ParseSubnet("10.213.0.0/16"));
  int bridge = BRIG_TRY(net::EnsureBridge(net::kBridge, subnet));
  sys::UniqueFd self(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!self) return SysError("open", "/proc/self/ns/net");
  return net::CreateSandboxVeth("bvprobe", bridge, self.get(), net::MacFor({subnet.network.v + 2}));
}

// brig without root: the probes below run in a user namespace of the child's own, mapped
// as brig maps its own (sys::EnterOwnUserNamespace), as a run's host-side steps do.
std::function<Status()> AsUser(std::function<Status()> probe) {
  return [probe = std::move(probe)]() -> Status {
    BRIG_TRY(sys::EnterOwnUserNamespace());
    return probe();
  };
}

// The sandbox's own network without root (net/sealed_net.h): its veth pair and its table,
// with the listeners, in a network namespace of the child's.
Status ProbeSealedNet() {
  BRIG_TRY(Unshare(CLONE_NEWNET, "network namespace"));
  BRIG_TRY(net::CreateSandboxVeth("brig", 0, -1, net::MacFor({0x0ad50002})));
  (void)BRIG_TRY(net::SetUpInside(net::kSealedPorts, {}, 0));
  return {};
}

// Subordinate ids without root: a grant in /etc/subuid and /etc/subgid, and the helpers.
Status ProbeSubordinate() {
  std::string warning;
  auto sub = security::CallersSubordinate(&warning);
  if (!sub) return std::move(sub).error();
  if (!*sub) {
    return Fail("/etc/subuid, /etc/subgid", "",
                "grant this user no ids: the sandbox keeps its supplementary groups");
  }
  if (!warning.empty()) return Fail("subordinate ids", "", warning);
  return {};
}

// Ubuntu's kernel.apparmor_restrict_unprivileged_userns: where it is 1, a user namespace
// made without an AppArmor profile that allows it has no capability in it.
Status ProbeAppArmor() {
  auto restrict = util::ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  if (!restrict || restrict->rfind("1", 0) != 0) return {};
  BRIG_TRY(sys::EnterOwnUserNamespace());
  sys::UniqueFd fs = BRIG_TRY(sys::FsOpen("tmpfs"));
  if (sys::FsConfigCreate(fs.get(), "tmpfs")) return {};
  return Fail("kernel.apparmor_restrict_unprivileged_userns", "1",
              "no AppArmor profile lets brig use its user namespaces; install "
              "policies/apparmor/brig (brig-check(1))");
}

}  // namespace

Result<NftExitWait> MeasureNftExitWait() {
  std::vector<double> waits;
  char removal = 0;
  for (int i = 0; i < 3; ++i) {
    sys::FdPair report = BRIG_TRY(sys::FdPair::Pipe(true, "probe"));
    sys::UniqueFd read_end = report.TakeParentEnd(), write_end = report.TakeChildEnd();
    pid_t pid = fork();
    if (pid < 0) return SysError("fork", "probe");
    if (pid == 0) {
      read_end.Reset();
      // As a run: the base tables, a sandbox's elements, and their removal last.
      net::Ipv4 gateway{0x0ad50001}, addr{0x0ad50002};  // 10.213.0.1, .2
      net::PortRules rules{"probe", "bvprobe", addr, net::MacFor(addr), {1, 2, 3, 4}};
      char made = '0';
      if (Unshare(CLONE_NEWNET, "network namespace")) {
        auto how = net::EnsureBaseRules("");
        if (how && net::AddPortRules(rules, gateway, *how) &&
            net::RemovePortRules(rules, gateway, *how)) {
          made = *how == net::Removal::kExpire ? 'e' : 'd';
        }
      }
      // The transaction is done: what is left is the exit, the socket's close among it.
      (void)!write(write_end.get(), &made, 1);
      _exit(made != '0' ? 0 : 1);
    }
    write_end.Reset();
    char made = 0;
    ssize_t n = read(read_end.get(), &made, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (n != 1 || (made != 'e' && made != 'd')) {
      return Fail("probe", "nftables", "no transaction was made");
    }
    removal = made;
    waits.push_back((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  }
  std::sort(waits.begin(), waits.end());
  return NftExitWait{waits[1], removal == 'e' ? net::Removal::kExpire : net::Removal::kDelete};
}

std::vector<Feature> ProbeFeatures(const std::string& seccomp_policy) {
  struct Probe {
    std::string name, why;
    std::function<Status()> run;
  };
  // Without root, brig's host-side steps run in a user namespace of its own (AsUser), and
  // it uses neither host ids, id-mapped mounts, nor the host's tables and bridge.
  const bool user = util::Rootless();
  std::vector<Probe> probes;
  if (user) {
    probes.push_back({"subordinate ids",
                      "the sandbox has none of the caller's supplementary groups "
                      "(newuidmap and newgidmap map the user's grant)",
                      ProbeSubordinate});
    probes.push_back({"apparmor",
                      "user namespaces with capabilities in them "
                      "(kernel.apparmor_restrict_unprivileged_userns)",
                      ProbeAppArmor});
  } else {
    // The range is read here, and named in the line.
    auto range = security::ReadIdRange();
    probes.push_back(
        {"host ids",
         "each sandbox's own host uid and gid" +
             (range ? ", from " + std::to_string(range->uid) + "-" +
                          std::to_string(range->uid + range->count - 1) + " (" + range->source + ")"
                    : std::string()),
         [range]() -> Status { return range ? Status() : Status(range.error()); }});
  }
  probes.push_back({"user namespaces",
                    user ? "brig's own and every sandbox's (user.max_user_namespaces > 0)"
                         : "every sandbox's ids are its own (user.max_user_namespaces > 0)",
                    ProbeUserNs});
  probes.push_back({"namespaces",
                    "mount, pid, net, ipc, uts and cgroup namespaces with the user one",
                    ProbeNamespaces});
  probes.push_back({"seccomp filters", "the profile's syscall policy (the default one, loaded)",
                    [&] { return ProbeSeccomp(seccomp_policy); }});
  probes.push_back({"mount API",
                    std::string("open_tree, mount_setattr, fsopen, fsmount, move_mount, openat2 "
                                "build the root") +
                        (user ? ", in brig's own user namespace" : ""),
                    user ? AsUser(ProbeMountApi) : ProbeMountApi});
  probes.push_back({"overlayfs",
                    std::string("a copy workspace is an overlay on the host's directory") +
                        (user ? " (userxattr)" : ""),
                    user ? AsUser(ProbeOverlay) : ProbeOverlay});
  if (user) {
    probes.push_back({"sealed network",
                      "an allowlist or open posture's veth pair and table in the sandbox's own "
                      "network namespace",
                      AsUser(ProbeSealedNet)});
  } else {
    probes.push_back({"id-mapped mounts",
                      "a workspace on /tmp's file system is id-mapped to the sandbox's ids",
                      ProbeIdmap});
    probes.push_back({"nftables",
                      "an allowlist or open posture's traffic goes through brig's tables",
                      ProbeNftables});
    probes.push_back({"bridge and veth",
                      "an allowlist or open posture's sandbox has a veth on brig0",
                      ProbeBridgeVeth});
  }
  std::vector<Feature> out;
  for (const Probe& p : probes) out.push_back({p.name, p.why, InChild(p.run)});
  return out;
}

std::vector<std::string> ProfileBlockers(const v1::Profile& profile, const std::string& file,
                                         const std::vector<Feature>& features,
                                         const cgroup::Plan& plan) {
  std::vector<std::string> needs;
  if (profile.isolation() == v1::ISOLATION_SANDBOX) {
    needs = {util::Rootless() ? "apparmor" : "host ids", "user namespaces", "namespaces",
             "seccomp filters", "mount API"};
    if (profile.filesystem().workspace() == v1::WORKSPACE_COPY) needs.push_back("overlayfs");
    v1::NetworkPosture posture = profile.network().posture();
    if (util::Rootless() && (posture == v1::POSTURE_ALLOWLIST || posture == v1::POSTURE_OPEN)) {
      needs.push_back("sealed network");
    } else if (posture == v1::POSTURE_ALLOWLIST || posture == v1::POSTURE_OPEN) {
      needs.insert(needs.end(), {"nftables", "bridge and veth"});
    }
  }
  std::vector<std::string> blockers;
  for (const Feature& f : features) {
    for (const std::string& n : needs) {
      if (f.name == n && !f.result) blockers.push_back(n);
    }
  }
  auto limits = config::ParseLimits(profile.limits(), file);
  if (!limits) return {limits.error().Render()};
  if (util::Rootless()) {
    for (const cgroup::LimitSlot& h : cgroup::Slots(limits->cgroup)) {
      if (!h.value || h.optional || plan.For(h.controller) == cgroup::Path::kV2) continue;
      blockers.push_back(std::string("limits.") + h.name +
                         " needs a cgroup delegated to this user (or --" + h.name + " none)");
    }
    return blockers;
  }
  if (auto fit = cgroup::FitLimits(plan, limits->cgroup); !fit) {
    blockers.push_back(fit.error().Render());
  }
  return blockers;
}

}  // namespace brig::cli
