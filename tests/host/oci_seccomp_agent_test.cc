// SCMP_ACT_NOTIFY with a seccomp agent (config.md linux.seccomp.listenerPath), against an
// agent of the test's own that answers as runc's contrib agent does: each process's listener
// reaches it with the process's state, its answers are what the container's syscalls
// return, the listener is never left in the container, and without an agent nothing runs.
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/oci_fixture.h"

namespace brig::testing::oci {
namespace {

// An agent on a unix socket: it takes each connection's one message (the state as JSON, the
// listener as SCM_RIGHTS) and answers every notification: mkdir and mkdirat fail with
// ENOMEDIUM, anything else goes on as if not notified. With `drop`, it closes each
// listener at once, as an agent that died.
class Agent {
 public:
  Agent(const std::string& path, bool drop) : drop_(drop) {
    sock_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ok_ = sock_.valid() &&
          bind(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          listen(sock_.get(), 8) == 0;
    stop_.Reset(eventfd(0, EFD_CLOEXEC));
    thread_ = std::thread([this] { Loop(); });
  }
  ~Agent() {
    uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  bool ok() const { return ok_; }
  // The JSON of each message, in the order they came.
  std::vector<std::string> States() {
    std::lock_guard<std::mutex> l(mu_);
    return states_;
  }

 private:
  void Loop() {
    std::vector<sys::UniqueFd> listeners;
    for (;;) {
      std::vector<pollfd> p = {{stop_.get(), POLLIN, 0}, {sock_.get(), POLLIN, 0}};
      for (const auto& l : listeners) p.push_back({l.get(), POLLIN, 0});
      if (poll(p.data(), p.size(), -1) < 0) continue;
      if (p[0].revents) return;
      if (p[1].revents & POLLIN) Accept(listeners);
      for (size_t i = 2; i < p.size(); ++i) {
        if (p[i].revents & POLLIN) Answer(p[i].fd);
        if (p[i].revents & (POLLHUP | POLLERR)) listeners[i - 2].Reset();
      }
      std::erase_if(listeners, [](const sys::UniqueFd& l) { return !l.valid(); });
    }
  }

  void Accept(std::vector<sys::UniqueFd>& listeners) {
    sys::UniqueFd conn(accept4(sock_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) return;
    char buf[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    ssize_t n = recvmsg(conn.get(), &mh, MSG_CMSG_CLOEXEC);
    if (n <= 0) return;
    sys::UniqueFd listener;
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_type == SCM_RIGHTS) {
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
        listener.Reset(fd);
      }
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      states_.emplace_back(buf, static_cast<size_t>(n));
      if (!listener) states_.back() += " (no listener came)";
    }
    if (listener && !drop_) listeners.push_back(std::move(listener));
  }

  static void Answer(int listener) {
    struct seccomp_notif req = {};
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) return;  // the caller is gone
    struct seccomp_notif_resp resp = {};
    resp.id = req.id;
    if (req.data.nr == SYS_mkdir || req.data.nr == SYS_mkdirat) {
      resp.error = -ENOMEDIUM;
    } else {
      resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }

  bool drop_;
  bool ok_ = false;
  sys::UniqueFd sock_, stop_;
  std::mutex mu_;
  std::vector<std::string> states_;
  std::thread thread_;
};

// The pid a message names: the process's own, the first "pid" (the state's comes after).
pid_t PidIn(const std::string& json) {
  size_t at = json.find(R"("pid":)");
  return at == std::string::npos ? 0 : atoi(json.c_str() + at + 6);
}

class OciSeccompAgent : public Oci {
 protected:
  // A container whose mkdir and mkdirat are notified to the agent at `socket`.
  Config Notifying(const std::string& id, const std::string& socket) const {
    Config c = Cfg(id);
    c.mounts.push_back({"/tmp", "tmpfs", "tmpfs", {"mode=1777"}});
    c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ALLOW","listenerPath":")" + socket +
                     R"(","listenerMetadata":"meta-7f","syscalls":[{"names":["mkdir","mkdirat"],)"
                     R"("action":"SCMP_ACT_NOTIFY"}]})";
    return c;
  }
  std::string Socket() const { return scratch_.path() + "/agent.sock"; }
};

// What a shell in the container shows: mkdir's own error, and its descriptors' targets,
// where a listener left behind would show as "anon_inode:seccomp notify".
constexpr char kTryMkdir[] =
    "mkdir /tmp/made 2>&1; echo mkdir=$?; test -d /tmp/made && echo made; "
    "ls -l /proc/$$/fd/ | grep -c seccomp; true";

TEST_F(OciSeccompAgent, TheAgentAnswersTheContainersNotifiedSyscalls) {
  for (bool nnp : {true, false}) {
    SCOPED_TRACE(nnp ? "noNewPrivileges" : "without noNewPrivileges");
    Agent agent(Socket(), false);
    ASSERT_TRUE(agent.ok());
    Config c = Notifying("notify", Socket());
    c.no_new_privileges = nnp;
    c.args = {"sh", "-c", kTryMkdir};
    RunOutput r = Run({"run", "--bundle", Bundle(c, nnp ? "nnp" : "no-nnp"), "notify"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("No medium found"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mkdir=1"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("made\n"), std::string::npos) << "the kernel ran what the agent refused";
    ASSERT_FALSE(Lines(r.out).empty());
    EXPECT_EQ(Lines(r.out).back(), "0") << "the listener was left in the container: " << r.out;
    std::vector<std::string> states = agent.States();
    ASSERT_EQ(states.size(), 1u);
    const std::string& s = states[0];
    EXPECT_NE(s.find(R"("fds":["seccompFd"])"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("metadata":"meta-7f")"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("id":"notify")"), std::string::npos) << s;
    EXPECT_EQ(s.find("no listener came"), std::string::npos) << s;
    unlink(Socket().c_str());
  }
}

// The listener reaches the agent while `create` runs, with the pid of the container's
// process, which waits for `start` under its filter.
TEST_F(OciSeccompAgent, CreateHandsTheListenerOverWithTheContainersPid) {
  Agent agent(Socket(), false);
  ASSERT_TRUE(agent.ok());
  pid_t pid = Create(Notifying("created", Socket()), "created");
  ASSERT_GT(pid, 0);
  std::vector<std::string> states = agent.States();
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(PidIn(states[0]), pid) << states[0];
  if (IsBrig()) {
    EXPECT_NE(states[0].find(R"("status":"creating")"), std::string::npos) << states[0];
  }
  EXPECT_EQ(Fields(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status"))["Seccomp"], "2")
      << "the process waits for start under its filter";
  EXPECT_EQ(Run({"delete", "--force", "created"}).exit_code, 0);
}

// Each exec's process hands its own listener over, as the container's.
TEST_F(OciSeccompAgent, AnExecsProcessHasTheAgentToo) {
  Agent agent(Socket(), false);
  ASSERT_TRUE(agent.ok());
  Config c = Notifying("execd", Socket());
  pid_t pid = CreateAndStart(c, "execd", "sleep");
  ASSERT_GT(pid, 0);
  RunOutput r = Run({"exec", "execd", "sh", "-c", kTryMkdir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("No medium found"), std::string::npos) << r.out;
  ASSERT_FALSE(Lines(r.out).empty());
  EXPECT_EQ(Lines(r.out).back(), "0") << "the listener was left in the process: " << r.out;
  std::vector<std::string> states = agent.States();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_GT(PidIn(states[1]), 0) << states[1];
  EXPECT_NE(PidIn(states[1]), pid)
      << "the exec's message names the container's process, not the exec's: " << states[1];
  EXPECT_NE(states[1].find(R"("status":"running")"), std::string::npos) << states[1];
  EXPECT_EQ(Run({"delete", "--force", "execd"}).exit_code, 0);
}

// Once the agent is gone (its copy closed, and brig keeps none), a notified syscall fails
// with ENOSYS instead of waiting for ever.
TEST_F(OciSeccompAgent, WithoutItsAgentANotifiedSyscallFailsAndNeverHangs) {
  Agent agent(Socket(), true);
  ASSERT_TRUE(agent.ok());
  Config c = Notifying("dropped", Socket());
  c.args = {"sh", "-c", "mkdir /tmp/made 2>&1; echo mkdir=$?"};
  RunOutput r = Run({"run", "--bundle", Bundle(c, "dropped"), "dropped"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Function not implemented"), std::string::npos) << r.out;
  EXPECT_EQ(agent.States().size(), 1u);
}

// No agent listening: the container never starts, and nothing of it is left.
TEST_F(OciSeccompAgent, NoAgentNoContainer) {
  RunOutput r =
      Run({"create", "--bundle", Bundle(Notifying("lonely", Socket()), "lonely"), "lonely"});
  ExpectCleanFailure(r, "lonely");
  EXPECT_NE(r.err.find("failed to connect with seccomp agent"), std::string::npos) << r.err;
}

// What can never work is refused before anything is made: a notifying rule with no agent,
// notification as the default action, and the one syscall the hand-over needs.
TEST_F(OciSeccompAgent, WhatCouldNeverBeAnsweredIsRefusedFirst) {
  if (!IsBrig()) GTEST_SKIP() << "brig's own refusals";
  struct Case {
    std::string seccomp, words;
  };
  const std::string agent = R"("listenerPath":")" + Socket() + R"(",)";
  for (const Case& k : std::vector<Case>{
           {R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],)"
            R"("action":"SCMP_ACT_NOTIFY"}]})",
            "listenerPath is empty"},
           {"{" + agent + R"("defaultAction":"SCMP_ACT_NOTIFY"})", "as default action"},
           {"{" + agent +
                R"("defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["sendmsg"],)"
                R"("action":"SCMP_ACT_NOTIFY"}]})",
            "sendmsg"}}) {
    Agent listening(Socket(), false);
    Config c = Cfg("refused");
    c.seccomp_json = k.seccomp;
    RunOutput r = Run({"create", "--bundle", Bundle(c, "refused"), "refused"});
    ExpectCleanFailure(r, "refused");
    EXPECT_NE(r.err.find(k.words), std::string::npos) << r.err;
    EXPECT_EQ(listening.States().size(), 0u) << "the agent was reached: " << k.seccomp;
    unlink(Socket().c_str());
  }
}

}  // namespace
}  // namespace brig::testing::oci
