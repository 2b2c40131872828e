// The container's process, prepared in the parent as a container::ProcessSpec (process.h):
// its ids, groups, capabilities, rlimits and no_new_privs as security::Credentials, and its
// engine's seccomp policy compiled as runc enforces it; and its terminal, and brig's wait on it
// in the foreground.
#include "oci/process.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "config/probe.h"
#include "security/seccomp_cache.h"
#include "supervise/attend.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::oci {
namespace {

// An engine's policy as runc and crun enforce it, written out so that CompileSeccomp (which
// refuses what libseccomp would resolve silently) takes it:
// - a syscall name libseccomp does not know is left out of the rules that allow it (the
//   syscall then meets the default action, at least as strict), as runc and crun do for a
//   policy written for a newer kernel; in any other rule it stays, and is refused;
// - a syscall named by an unconditional rule takes that rule's action, the first such
//   rule's, and every other rule naming it is dropped: what libseccomp itself makes of
//   such a policy (seen with seccomp_export_pfc), and so what runc gives the engine. An
//   engine's default policy relies on it (podman's allows setns unconditionally and again
//   denies it without CAP_SYS_ADMIN; the allow is what runs).
brig::v1::SeccompPolicy AsLibseccompResolves(const brig::v1::SeccompPolicy& in) {
  auto allows = [](const brig::v1::SeccompRule& r) {
    return r.action() == brig::v1::SCMP_ACT_ALLOW || r.action() == brig::v1::SCMP_ACT_LOG;
  };
  auto left_out = [&](const brig::v1::SeccompRule& r, const std::string& name) {
    return allows(r) && !security::ResolveSyscallX86_64(name);
  };
  std::map<std::string, int> unconditional;  // name -> the first unconditional rule's index
  for (int i = 0; i < in.syscalls_size(); ++i) {
    if (in.syscalls(i).args_size() > 0) continue;
    for (const std::string& name : in.syscalls(i).names()) {
      if (!left_out(in.syscalls(i), name)) unconditional.emplace(name, i);
    }
  }
  brig::v1::SeccompPolicy out = in;
  out.clear_syscalls();
  for (int i = 0; i < in.syscalls_size(); ++i) {
    const brig::v1::SeccompRule& rule = in.syscalls(i);
    brig::v1::SeccompRule kept = rule;
    kept.clear_names();
    for (const std::string& name : rule.names()) {
      if (left_out(rule, name)) continue;
      if (auto u = unconditional.find(name); u != unconditional.end() && u->second != i) continue;
      kept.add_names(name);
    }
    if (kept.names_size() > 0) *out.add_syscalls() = std::move(kept);
  }
  return out;
}

}  // namespace

Status CheckSelinuxLabel(std::string_view property, const std::string& label) {
  if (label.empty() || access("/sys/fs/selinux/enforce", F_OK) < 0) return {};
  return BadInput(std::string(property), label,
                  "not supported: brig applies no SELinux label, and this host has SELinux");
}

Result<security::Credentials> CredentialsOf(const Process& p) {
  security::Credentials c;
  c.uid = p.user().uid();
  c.gid = p.user().gid();
  c.groups.assign(p.user().additional_gids().begin(), p.user().additional_gids().end());
  c.caps = BRIG_TRY(CapabilitySets(p));
  for (const Rlimit& r : p.rlimits()) {
    std::optional<int> res = RlimitResource(r.type());
    if (!res) return BadInput("process.rlimits", r.type(), "unknown rlimit");
    c.rlimits.push_back({*res, r.soft(), r.hard(), r.type()});
  }
  c.no_new_privs = p.no_new_privileges();
  c.prefix = "process.";
  return c;
}

Result<container::ProcessSpec> PrepareProcess(
    const Process& p, const std::optional<brig::v1::SeccompPolicy>& seccomp) {
  BRIG_TRY(CheckSelinuxLabel("process.selinuxLabel", p.selinux_label()));
  container::ProcessSpec out;
  out.prefix = "process.";
  out.args.assign(p.args().begin(), p.args().end());
  out.env.assign(p.env().begin(), p.env().end());
  out.cwd = p.cwd().empty() ? "/" : p.cwd();
  if (p.user().has_umask()) out.umask = p.user().umask();
  out.credentials = BRIG_TRY(CredentialsOf(p));
  if (p.has_oom_score_adj()) out.oom_score_adj = p.oom_score_adj();
  if (seccomp) {
    // Compiling an engine's policy for three architectures costs several milliseconds of
    // every create and exec; the cache makes that once per policy and libseccomp version.
    out.seccomp = BRIG_TRY_CTX(security::CompileSeccompCached(
                                   *seccomp, security::SeccompCacheDir(), "oci",
                                   [](const brig::v1::SeccompPolicy& s) {
                                     return security::CompileOciSeccomp(AsLibseccompResolves(s));
                                   }),
                               "linux.seccomp");
  }
  return out;
}

Result<sys::UniqueFd> ConnectConsoleSocket(const std::string& path) {
  return sys::ConnectUnix(path, "--console-socket");
}

Status SetupConsole(int console_fd, const ConsoleSize& size, bool dev_console, uid_t owner) {
  sys::UniqueFd master(open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master.valid()) return SysError("open", "/dev/ptmx");
  if (unlockpt(master.get()) < 0) return SysError("unlockpt", "/dev/ptmx");
  char name[64];
  if (ptsname_r(master.get(), name, sizeof name) != 0) return SysError("ptsname", "/dev/ptmx");
  sys::UniqueFd slave(open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave.valid()) return SysError("open", name);
  if (size.height() || size.width()) {
    struct winsize ws = {};
    ws.ws_row = static_cast<unsigned short>(size.height());
    ws.ws_col = static_cast<unsigned short>(size.width());
    if (ioctl(slave.get(), TIOCSWINSZ, &ws) < 0) return SysError("ioctl", "TIOCSWINSZ");
  }
  // The process's own, as runc gives it (its group is the devpts mount's, gid=5 in runc's
  // spec): a user other than root could not use its terminal otherwise. An owner the
  // container's user namespace does not map leaves it as it is, as runc does.
  if (owner != 0 && fchown(slave.get(), owner, static_cast<gid_t>(-1)) < 0 && errno != EINVAL &&
      errno != EPERM) {
    return SysError("fchown", name);
  }
  char ptmx[] = "/dev/ptmx";  // the name runc sends with it
  struct iovec ptmx_name = {ptmx, sizeof ptmx - 1};
  BRIG_TRY(sys::SendWithFd(console_fd, &ptmx_name, 1, master.get(), "--console-socket"));
  master.Reset();
  if (ioctl(slave.get(), TIOCSCTTY, 0) < 0) return SysError("ioctl", "TIOCSCTTY");
  for (int fd = 0; fd <= 2; ++fd) {
    if (dup2(slave.get(), fd) < 0) return SysError("dup2", name);
  }
  if (!dev_console) return {};
  sys::UniqueFd console(open("/dev/console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!console.valid()) return SysError("open", "/dev/console");
  if (mount(name, "/dev/console", nullptr, MS_BIND, nullptr) < 0) {
    return SysError("mount", "/dev/console");
  }
  return {};
}

namespace {

// The master SetupConsole sent on `sock`, if it has sent one; none without a terminal.
Result<sys::UniqueFd> TakeConsole(int sock) {
  char name[64];
  sys::UniqueFd master;
  auto got = sys::RecvWithFd(sock, name, sizeof name, MSG_DONTWAIT, master);
  if (!got && got.error().err == EAGAIN) return sys::UniqueFd();
  if (!got) return std::move(got).error().Wrap("terminal");
  return master;
}

}  // namespace

Result<int> AttendProcess(sys::Child& process, int relay, const supervise::HeldSignals& signals) {
  std::unique_ptr<supervise::Stdio> stdio;
  if (relay >= 0) {
    sys::UniqueFd master = BRIG_TRY(TakeConsole(relay));
    if (master) {
      stdio = BRIG_TRY(
          supervise::Stdio::ForTerminal(std::move(master), config::TerminalCodesetOf(environ)));
      BRIG_TRY(stdio->Started());
    }
  }
  return supervise::Attend(process, stdio.get(), signals);
}

}  // namespace brig::oci
