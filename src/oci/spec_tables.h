// The names the runtime-spec gives kernel values, for the spec reader (oci/spec.cc) and
// what `brig features` lists (oci/spec_json.cc): one table each, so that what brig says it
// supports is what it reads. Internal to src/oci/.
#pragma once

#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace brig::oci {

struct NamespaceName {
  std::string_view type;  // linux.namespaces[].type
  int flag;
  std::string_view proc;  // /proc/PID/ns/
};
inline constexpr NamespaceName kNamespaces[] = {
    {"pid", CLONE_NEWPID, "pid"},          {"network", CLONE_NEWNET, "net"},
    {"mount", CLONE_NEWNS, "mnt"},         {"ipc", CLONE_NEWIPC, "ipc"},
    {"uts", CLONE_NEWUTS, "uts"},          {"user", CLONE_NEWUSER, "user"},
    {"cgroup", CLONE_NEWCGROUP, "cgroup"}, {"time", CLONE_NEWTIME, "time"},
};

enum class Opt {
  kNone,         // accepted, changes nothing (defaults)
  kSet,          // MS_* set
  kClear,        // MS_* cleared
  kPropagation,  // MS_SHARED... (with MS_REC for the r forms)
  kAttrSet,      // MOUNT_ATTR_* set recursively
  kAttrClear,    // MOUNT_ATTR_* cleared recursively
  kAtime,        // one of the MOUNT_ATTR_ atime modes, recursively (an enum, not a bit)
  kBind,
  kRbind,
  kTmpcopyup,
  kIdmap,  // runc's idmap (value 0) and ridmap (1): an id-mapped bind mount
};
struct MountOption {
  std::string_view name;
  Opt kind;
  uint64_t value;
};
// As runc and crun read them (mount(8) names, the r forms of mount_setattr(2)).
inline constexpr MountOption kMountOptions[] = {
    {"defaults", Opt::kNone, 0},
    {"ro", Opt::kSet, MS_RDONLY},
    {"rw", Opt::kClear, MS_RDONLY},
    {"nosuid", Opt::kSet, MS_NOSUID},
    {"suid", Opt::kClear, MS_NOSUID},
    {"nodev", Opt::kSet, MS_NODEV},
    {"dev", Opt::kClear, MS_NODEV},
    {"noexec", Opt::kSet, MS_NOEXEC},
    {"exec", Opt::kClear, MS_NOEXEC},
    {"sync", Opt::kSet, MS_SYNCHRONOUS},
    {"async", Opt::kClear, MS_SYNCHRONOUS},
    {"dirsync", Opt::kSet, MS_DIRSYNC},
    {"remount", Opt::kSet, MS_REMOUNT},
    {"mand", Opt::kSet, MS_MANDLOCK},
    {"nomand", Opt::kClear, MS_MANDLOCK},
    {"noatime", Opt::kSet, MS_NOATIME},
    {"atime", Opt::kClear, MS_NOATIME},
    {"nodiratime", Opt::kSet, MS_NODIRATIME},
    {"diratime", Opt::kClear, MS_NODIRATIME},
    {"relatime", Opt::kSet, MS_RELATIME},
    {"norelatime", Opt::kClear, MS_RELATIME},
    {"strictatime", Opt::kSet, MS_STRICTATIME},
    {"nostrictatime", Opt::kClear, MS_STRICTATIME},
    {"lazytime", Opt::kSet, MS_LAZYTIME},
    {"nolazytime", Opt::kClear, MS_LAZYTIME},
    {"iversion", Opt::kSet, MS_I_VERSION},
    {"noiversion", Opt::kClear, MS_I_VERSION},
    {"silent", Opt::kSet, MS_SILENT},
    {"loud", Opt::kClear, MS_SILENT},
    {"nosymfollow", Opt::kSet, MS_NOSYMFOLLOW},
    {"symfollow", Opt::kClear, MS_NOSYMFOLLOW},
    {"bind", Opt::kBind, 0},
    {"rbind", Opt::kRbind, 0},
    {"shared", Opt::kPropagation, MS_SHARED},
    {"rshared", Opt::kPropagation, MS_SHARED | MS_REC},
    {"slave", Opt::kPropagation, MS_SLAVE},
    {"rslave", Opt::kPropagation, MS_SLAVE | MS_REC},
    {"private", Opt::kPropagation, MS_PRIVATE},
    {"rprivate", Opt::kPropagation, MS_PRIVATE | MS_REC},
    {"unbindable", Opt::kPropagation, MS_UNBINDABLE},
    {"runbindable", Opt::kPropagation, MS_UNBINDABLE | MS_REC},
    {"rro", Opt::kAttrSet, MOUNT_ATTR_RDONLY},
    {"rrw", Opt::kAttrClear, MOUNT_ATTR_RDONLY},
    {"rnosuid", Opt::kAttrSet, MOUNT_ATTR_NOSUID},
    {"rsuid", Opt::kAttrClear, MOUNT_ATTR_NOSUID},
    {"rnodev", Opt::kAttrSet, MOUNT_ATTR_NODEV},
    {"rdev", Opt::kAttrClear, MOUNT_ATTR_NODEV},
    {"rnoexec", Opt::kAttrSet, MOUNT_ATTR_NOEXEC},
    {"rexec", Opt::kAttrClear, MOUNT_ATTR_NOEXEC},
    {"rnodiratime", Opt::kAttrSet, MOUNT_ATTR_NODIRATIME},
    {"rdiratime", Opt::kAttrClear, MOUNT_ATTR_NODIRATIME},
    {"rnosymfollow", Opt::kAttrSet, MOUNT_ATTR_NOSYMFOLLOW},
    {"rsymfollow", Opt::kAttrClear, MOUNT_ATTR_NOSYMFOLLOW},
    // The kernel keeps one atime mode: "not noatime" is its default, relatime, and "not
    // relatime" is strictatime.
    {"rnoatime", Opt::kAtime, MOUNT_ATTR_NOATIME},
    {"ratime", Opt::kAtime, MOUNT_ATTR_RELATIME},
    {"rrelatime", Opt::kAtime, MOUNT_ATTR_RELATIME},
    {"rnorelatime", Opt::kAtime, MOUNT_ATTR_STRICTATIME},
    {"rstrictatime", Opt::kAtime, MOUNT_ATTR_STRICTATIME},
    {"rnostrictatime", Opt::kAtime, MOUNT_ATTR_RELATIME},
    {"tmpcopyup", Opt::kTmpcopyup, 0},
    {"idmap", Opt::kIdmap, 0},
    {"ridmap", Opt::kIdmap, 1},
};

struct Named {
  std::string_view name;
  int value;
};
// <linux/capability.h>, in its order: the bit of each is its value.
inline constexpr Named kCapabilities[] = {
    {"CAP_CHOWN", CAP_CHOWN},
    {"CAP_DAC_OVERRIDE", CAP_DAC_OVERRIDE},
    {"CAP_DAC_READ_SEARCH", CAP_DAC_READ_SEARCH},
    {"CAP_FOWNER", CAP_FOWNER},
    {"CAP_FSETID", CAP_FSETID},
    {"CAP_KILL", CAP_KILL},
    {"CAP_SETGID", CAP_SETGID},
    {"CAP_SETUID", CAP_SETUID},
    {"CAP_SETPCAP", CAP_SETPCAP},
    {"CAP_LINUX_IMMUTABLE", CAP_LINUX_IMMUTABLE},
    {"CAP_NET_BIND_SERVICE", CAP_NET_BIND_SERVICE},
    {"CAP_NET_BROADCAST", CAP_NET_BROADCAST},
    {"CAP_NET_ADMIN", CAP_NET_ADMIN},
    {"CAP_NET_RAW", CAP_NET_RAW},
    {"CAP_IPC_LOCK", CAP_IPC_LOCK},
    {"CAP_IPC_OWNER", CAP_IPC_OWNER},
    {"CAP_SYS_MODULE", CAP_SYS_MODULE},
    {"CAP_SYS_RAWIO", CAP_SYS_RAWIO},
    {"CAP_SYS_CHROOT", CAP_SYS_CHROOT},
    {"CAP_SYS_PTRACE", CAP_SYS_PTRACE},
    {"CAP_SYS_PACCT", CAP_SYS_PACCT},
    {"CAP_SYS_ADMIN", CAP_SYS_ADMIN},
    {"CAP_SYS_BOOT", CAP_SYS_BOOT},
    {"CAP_SYS_NICE", CAP_SYS_NICE},
    {"CAP_SYS_RESOURCE", CAP_SYS_RESOURCE},
    {"CAP_SYS_TIME", CAP_SYS_TIME},
    {"CAP_SYS_TTY_CONFIG", CAP_SYS_TTY_CONFIG},
    {"CAP_MKNOD", CAP_MKNOD},
    {"CAP_LEASE", CAP_LEASE},
    {"CAP_AUDIT_WRITE", CAP_AUDIT_WRITE},
    {"CAP_AUDIT_CONTROL", CAP_AUDIT_CONTROL},
    {"CAP_SETFCAP", CAP_SETFCAP},
    {"CAP_MAC_OVERRIDE", CAP_MAC_OVERRIDE},
    {"CAP_MAC_ADMIN", CAP_MAC_ADMIN},
    {"CAP_SYSLOG", CAP_SYSLOG},
    {"CAP_WAKE_ALARM", CAP_WAKE_ALARM},
    {"CAP_BLOCK_SUSPEND", CAP_BLOCK_SUSPEND},
    {"CAP_AUDIT_READ", CAP_AUDIT_READ},
    {"CAP_PERFMON", CAP_PERFMON},
    {"CAP_BPF", CAP_BPF},
    {"CAP_CHECKPOINT_RESTORE", CAP_CHECKPOINT_RESTORE},
};

inline constexpr Named kRlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

// Without the SIG prefix, as kill -l prints them; IOT, CLD and POLL are the aliases.
inline constexpr Named kSignals[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},   {"IOT", SIGIOT},   {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"KILL", SIGKILL},   {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},   {"CLD", SIGCHLD},  {"CONT", SIGCONT},
    {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},
    {"URG", SIGURG},       {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},     {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"POLL", SIGPOLL},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},
};
// glibc keeps 32 and 33 for itself: the first real-time signal a process can use is 34.
inline constexpr int kRtMin = 34;
inline constexpr int kRtMax = 64;

template <typename Table>
auto Find(const Table& table, std::string_view name) -> decltype(&table[0]) {
  for (const auto& e : table) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

template <size_t N>
bool Contains(const std::string_view (&list)[N], std::string_view s) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// Seccomp filter flags brig applies (security/seccomp.cc), and those the spec knows.
inline constexpr std::string_view kSeccompFlags[] = {"SECCOMP_FILTER_FLAG_LOG",
                                                     "SECCOMP_FILTER_FLAG_SPEC_ALLOW"};
inline constexpr std::string_view kSeccompKnownFlags[] = {
    "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"};

}  // namespace brig::oci
