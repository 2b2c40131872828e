#include "pod/supervisor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>

#include "audit/audit.h"
#include "broker/spec.h"
#include "config/resolve.h"
#include "egress/upstream.h"
#include "log/log.h"
#include "net/inside_rules.h"
#include "net/listeners.h"
#include "net/nft.h"
#include "net/upstream_socket.h"
#include "state/record.h"
#include "supervise/loop.h"
#include "supervise/services.h"
#include "sys/child.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

extern char** environ;

namespace brig::pod {
namespace {

constexpr int kReadyMs = 30000;
// The supervisor's image: its argv[0] and name, and the descriptors create hands it.
constexpr char kImageName[] = "brig-pod";
constexpr int kPlanFd = 3, kReadyFd = 4;
constexpr int kStopMs = 5000;
constexpr char kReady[] = "ok";

// A broker's credential is a node file only root may read (a Secret the node's agent
// mounts there), never one a pod's user could.
Status CheckCredentialFiles(const config::Sandbox& sb) {
  for (const broker::Config& b : sb.brokers) {
    for (const auto& h : b.headers) {
      if (h.from.rfind("file:", 0) != 0) continue;
      std::string path = h.from.substr(5);
      struct stat st;
      if (stat(path.c_str(), &st) < 0) return SysError("stat", "broker " + b.name + " " + path);
      if (st.st_uid != 0 || (st.st_mode & 077) != 0) {
        return Fail("broker " + b.name, path,
                    "a credential file must be root's and readable by root only (chmod 600)",
                    ErrorKind::kBadInput);
      }
    }
  }
  return {};
}

// Everything the supervisor holds, made in this order and released in reverse.
class Supervisor {
 public:
  Supervisor(const Plan& plan, const config::Sandbox& sb) : plan_(plan), sb_(sb) {}
  ~Supervisor() { TearDown(); }

  Status Prepare(const std::string& netns);
  Status Serve(int ready_fd);

 private:
  void Audit(v1::AuditEvent e);
  void TearDown();

  const Plan& plan_;
  const config::Sandbox& sb_;
  std::string id_ = RecordId(plan_.pod.sandbox_id);
  supervise::HeldSignals signals_;
  state::Record record_;
  sys::UniqueFd node_ns_;
  std::optional<net::Listeners> listeners_;
  bool rules_ = false, started_ = false;
  supervise::Services services_;
};

void Supervisor::Audit(v1::AuditEvent e) {
  v1::PodIdentity* p = e.mutable_pod();
  p->set_namespace_(plan_.pod.ns);
  p->set_name(plan_.pod.name);
  p->set_uid(plan_.pod.uid);
  (void)audit::Append(plan_.audit_path, id_, std::move(e), plan_.pod.Label());
}

Status Supervisor::Prepare(const std::string& netns) {
  signals_ = BRIG_TRY(supervise::HeldSignals::Hold({SIGTERM, SIGINT, SIGHUP}));
  record_ = BRIG_TRY(state::Record::Create(state::SandboxDir(), id_));
  BRIG_TRY(record_.Describe({{"name", plan_.pod.Label()},
                             {"profile", sb_.profile},
                             {"posture", sb_.posture_name},
                             {"pid", std::to_string(getpid())},
                             {"brig_pid", std::to_string(getpid())},
                             {"pod_uid", plan_.pod.uid},
                             {"audit", plan_.audit_path}}));
  // The node's namespace, where the floor's own addresses are asked, then the pod's.
  node_ns_.Reset(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!node_ns_) return SysError("open", "/proc/self/ns/net");
  sys::UniqueFd pod(open(netns.c_str(), O_RDONLY | O_CLOEXEC));
  if (!pod) return SysError("open", "linux.namespaces network " + netns);
  struct stat mine, theirs;
  if (fstat(node_ns_.get(), &mine) < 0 || fstat(pod.get(), &theirs) < 0) {
    return SysError("fstat", netns);
  }
  if (mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino) {
    return BadInput("linux.namespaces network", netns,
                    "is the node's own: a pod of a brig runtime handler needs a network "
                    "namespace of its own (no hostNetwork)");
  }
  if (setns(pod.get(), CLONE_NEWNET) < 0) return SysError("setns", netns);
  rules_ = true;
  std::optional<net::ListenerPorts> ports;
  if (sb_.network) ports.emplace();
  listeners_ =
      BRIG_TRY_CTX(net::SetUpInside(ports, plan_.direct, net::kMark), "the pod's namespace");
  net::SetUpstreamMark(net::kMark);
  std::string dir = plan_.audit_path.substr(0, plan_.audit_path.rfind('/'));
  BRIG_TRY(util::MakeDirs(dir));
  return {};
}

Status Supervisor::Serve(int ready_fd) {
  supervise::Services::Where where{.attribution = id_ + "/1"};
  if (sb_.network) {
    where.listeners = &*listeners_;
    where.subnet = *sb_.network;
    where.host_netns = node_ns_.get();
  }
  services_ = BRIG_TRY(supervise::Services::Start(
      {.egress = sb_.egress, .budget = sb_.egress_budget.value_or(0), .brokers = sb_.brokers},
      std::move(where), [this](v1::AuditEvent e) { Audit(std::move(e)); }));
  v1::AuditEvent start;
  v1::SandboxStart* s = start.mutable_sandbox_start();
  s->set_profile(sb_.profile);
  s->set_isolated(true);
  s->set_posture(sb_.posture);
  s->set_seccomp_policy(sb_.seccomp_policy);
  for (const auto& h : sb_.loaded_profile.network().allow_hosts()) s->add_allow_hosts(h);
  for (const auto& h : plan_.run.allow_hosts) s->add_allow_hosts(h);
  Audit(std::move(start));
  started_ = true;
  auto loop = BRIG_TRY(supervise::Loop::Create());
  BRIG_TRY(services_.Watch(loop));
  BRIG_TRY(loop.Watch(signals_, [&loop](int) { loop.Stop(); }));
  (void)!write(ready_fd, kReady, sizeof kReady - 1);
  close(ready_fd);
  malloc_trim(0);
  return loop.Run();
}

void Supervisor::TearDown() {
  services_.Close();
  services_ = {};
  if (rules_) (void)net::RunNft("delete table inet brig\n");
  if (started_) {
    v1::AuditEvent end;
    end.mutable_sandbox_exit();
    Audit(std::move(end));
  }
  record_.Remove();
}

// The plan and the profile resolved again, in the supervisor's own image, from what create
// handed over, then what only the node can say: the nameservers (without dns_upstream),
// that credentials are root's alone, the brokers' header values and targets.
Result<std::pair<Plan, config::Sandbox>> Replan(const v1::PodSupervisor& m) {
  Plan plan = BRIG_TRY(PlanPod(m.handler(), m.profile(), m.annotations()));
  plan.run.policy_dir = m.policy_dir();
  config::Sandbox sb = BRIG_TRY(config::Resolve(m.profile(), plan.run));
  sb.profile_path = m.profile_path();
  if (sb.network && sb.egress.upstreams.empty()) {
    sb.egress.upstreams = BRIG_TRY_CTX(egress::HostUpstreams(), "the pod's resolver");
  }
  BRIG_TRY(CheckCredentialFiles(sb));
  for (broker::Config& b : sb.brokers) {
    BRIG_TRY_CTX(broker::Resolve(b, environ), "broker " + b.name);
  }
  return std::pair(std::move(plan), std::move(sb));
}

}  // namespace

std::string RecordId(const std::string& sandbox_id) {
  return "brig-pod-" + sandbox_id.substr(0, 12);
}

bool IsSupervisorImage(const char* argv0) {
  std::string_view a = argv0 ? argv0 : "";
  return a == kImageName;
}

int SupervisorMain() {
  setsid();
  prctl(PR_SET_NAME, kImageName);
  bool ready = false;
  Status st = [&]() -> Status {
    std::string bytes = BRIG_TRY(util::ReadFd(kPlanFd, 0));
    close(kPlanFd);
    v1::PodSupervisor m;
    if (!m.ParseFromString(bytes)) {
      return Fail("pod supervisor", "", "cannot read its plan", ErrorKind::kInternal);
    }
    auto [plan, sb] = BRIG_TRY(Replan(m));
    Supervisor sup(plan, sb);
    BRIG_TRY(sup.Prepare(m.netns()));
    ready = true;
    return sup.Serve(kReadyFd);
  }();
  if (!st && !ready) {
    std::string text = st.error().Render();
    (void)!write(kReadyFd, text.data(), text.size());
  }
  return st ? 0 : 1;
}

Result<SupervisorRef> Start(const Held& held, const Annotations& annotations,
                            const std::string& netns) {
  if (netns.empty()) {
    return BadInput("linux.namespaces network", "",
                    "a pod of a brig runtime handler needs a network namespace of its own "
                    "(no hostNetwork)");
  }
  v1::PodSupervisor m;
  *m.mutable_handler() = held.handler;
  *m.mutable_profile() = held.sb.loaded_profile;
  m.set_profile_path(held.sb.profile_path);
  m.set_policy_dir(held.plan.run.policy_dir);
  *m.mutable_annotations() = annotations;
  m.set_netns(netns);
  sys::UniqueFd plan_fd(static_cast<int>(syscall(SYS_memfd_create, "brig-pod-plan", MFD_CLOEXEC)));
  if (!plan_fd) return SysError("memfd_create", "pod supervisor");
  std::string bytes = m.SerializeAsString();
  if (write(plan_fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    return SysError("write", "pod supervisor's plan");
  }
  sys::FdPair pipe = BRIG_TRY(sys::FdPair::Pipe(true, "pod supervisor"));
  pid_t pid = fork();
  if (pid < 0) return SysError("fork", "pod supervisor");
  if (pid == 0) {
    // Nothing of create's but the plan and the pipe, each at its number, into a fresh image
    // of brig's: none of create's memory (its parsed bundle, its stack) stays the
    // supervisor's for the pod's life.
    int ready = fcntl(pipe.TakeChildEnd().Release(), F_DUPFD_CLOEXEC, 10);
    int plan = fcntl(plan_fd.get(), F_DUPFD_CLOEXEC, 10);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (ready < 0 || plan < 0 || null < 0) _exit(127);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    if (dup2(plan, kPlanFd) < 0 || dup2(ready, kReadyFd) < 0 || lseek(kPlanFd, 0, SEEK_SET) < 0 ||
        syscall(SYS_close_range, kReadyFd + 1, ~0U, 0) < 0) {
      _exit(127);
    }
    const char* argv[] = {kImageName, nullptr};
    const char* envp[] = {nullptr};
    execve("/proc/self/exe", const_cast<char**>(argv), const_cast<char**>(envp));
    _exit(127);
  }
  plan_fd.Reset();
  sys::UniqueFd in = pipe.TakeParentEnd();
  pipe.TakeChildEnd().Reset();
  std::string said;
  char buf[512];
  for (;;) {
    pollfd p = {in.get(), POLLIN, 0};
    int r = poll(&p, 1, kReadyMs);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t n = read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    said.append(buf, static_cast<size_t>(n));
  }
  if (said == kReady) {
    std::optional<uint64_t> start = sys::StartTimeOf(pid);
    if (start) return SupervisorRef{pid, *start};
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return Fail("pod supervisor", held.plan.pod.Label(),
              said.empty() || said == kReady ? "ended before it served" : said);
}

Status Stop(const SupervisorRef& s) {
  if (s.pid <= 0) return {};
  auto fd = sys::PidfdOpen(s.pid, "pod supervisor");
  if (!fd) return {};                                      // gone
  if (sys::StartTimeOf(s.pid) != s.start_time) return {};  // the pid is another's now
  for (int sig : {SIGTERM, SIGKILL}) {
    if (!sys::PidfdSendSignal(fd->get(), sig)) return {};
    pollfd p = {fd->get(), POLLIN, 0};
    int r;
    while ((r = poll(&p, 1, kStopMs)) < 0 && errno == EINTR) {
    }
    if (r > 0) return {};
  }
  return Fail("pod supervisor", std::to_string(s.pid), "did not end on SIGKILL");
}

}  // namespace brig::pod
