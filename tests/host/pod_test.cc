// Kubernetes pods on a brig runtime handler (issue 30; pod/handler.h, pod/supervisor.h), at
// the OCI level: config.json as containerd's CRI writes a pod's sandbox and containers
// (its io.kubernetes.cri.* annotations, the pod's network namespace by path, the pod's
// brig/* annotations), brig run as the runc shim runs it, with --root under a handler's
// root. The pod's network namespace is made by the test as a CNI bridge plugin makes one: a
// veth to the test world (the node side), which forwards to the fake internet.
//
//   pod netns: eth0 10.233.9.2/24, default via 10.233.9.1
//        |
//   world (node side): pw0 10.233.9.1/24 ── wi0 ── fake internet (198.51.100.0/24)
//
// The clients are run in the pod's namespace by the test: busybox nslookup (to the
// cluster's DNS address, which brig redirects), curl with the address brig's resolver gave
// (--resolve, as its own resolver would have), and plain TCP connections.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "host/host_fixture.h"
#include "host/oci_fixture.h"
#include "host/test_world.h"
#include "proto/brig.pb.h"

namespace brig::testing::oci {
namespace {

constexpr char kPodAddr[] = "10.233.9.2";
constexpr char kNodeAddr[] = "10.233.9.1";
constexpr char kClusterDns[] = "10.96.0.10";  // nothing there: brig answers in its place
constexpr char kBrokerTarget[] = "198.51.100.30";
constexpr char kSecret[] = "s3cret-never-in-the-pod";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class Pod : public Oci {
 protected:
  void SetUp() override {
    Oci::SetUp();
    if (IsSkipped()) return;
    if (!IsBrig()) GTEST_SKIP() << "runtime handlers are brig's";
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/curl";
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({"allowed.test", "denied.test"}), "");
    world_.Dns().SetA("allowed.test", {kWebHost});
    world_.Dns().SetA("denied.test", {kWebHost});
    broker_ = world_.Record(kBrokerTarget, 8000);
    ASSERT_NE(broker_, nullptr);
    // The pod's namespace, as CNI's bridge plugin wires one.
    pod_fd_ = NewNetns();
    ASSERT_GE(pod_fd_, 0);
    pod_ns_ = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(pod_fd_);
    const std::vector<std::pair<bool, std::vector<std::string>>> steps = {
        {true, {"ip", "link", "set", "lo", "up"}},
        {false,
         {"ip", "link", "add", "pw0", "type", "veth", "peer", "name", "eth0", "netns", pod_ns_}},
        {false, {"ip", "addr", "add", std::string(kNodeAddr) + "/24", "dev", "pw0"}},
        {false, {"ip", "link", "set", "pw0", "up"}},
        {true, {"ip", "addr", "add", std::string(kPodAddr) + "/24", "dev", "eth0"}},
        {true, {"ip", "link", "set", "eth0", "up"}},
        {true, {"ip", "route", "add", "default", "via", kNodeAddr}},
    };
    for (const auto& [in_pod, cmd] : steps) {
      RunOutput r = in_pod ? InPod(cmd) : world_.InWorld(cmd);
      ASSERT_EQ(r.exit_code, 0) << cmd[0] << " " << cmd[1] << " " << cmd[2] << ": " << r.err;
    }
    ASSERT_EQ(
        world_.Run(TestWorld::kInternet, {"ip", "route", "add", "10.233.9.0/24", "via", kWorldAddr})
            .exit_code,
        0);
    // The node's handler: its root is the fixture's --root's parent, as containerd's Root
    // is the parent of the --root its shim passes (Root/k8s.io).
    handler_root_ = scratch_.path() + "/handler";
    root_ = handler_root_ + "/k8s.io";
    ASSERT_EQ(mkdir((scratch_.path() + "/handlers").c_str(), 0700), 0);
    key_ = scratch_.path() + "/model.key";
    WriteHandler({});
    setenv("BRIG_HANDLER_DIR", (scratch_.path() + "/handlers").c_str(), 1);
  }

  void TearDown() override {
    unsetenv("BRIG_HANDLER_DIR");
    if (pod_fd_ >= 0) close(pod_fd_);
    if (!IsSkipped()) EXPECT_EQ(world_.TearDown(), "");
    Oci::TearDown();
  }

  // The handler file, with `extra` lines.
  void WriteHandler(const std::vector<std::string>& extra) {
    std::string text = "name: \"pods\"\nroot: \"" + handler_root_ + "\"\nprofile: \"" +
                       SourceRoot() + "/tests/host/profiles/egress.textproto\"\n" +
                       "dns_upstream: \"" + kDnsHost + "\"\n" + "direct: \"tcp:" + kInternetHost +
                       "/32:8080\"\n" + "audit_dir: \"" + scratch_.path() + "/audit\"\n" +
                       "brokers { name: \"model\" port: 4000 to: \"http://" + kBrokerTarget +
                       ":8000\" headers { name: \"x-api-key\" from: \"file:" + key_ + "\" } }\n";
    for (const auto& l : extra) text += l + "\n";
    scratch_.Write("handlers/pods.textproto", text);
    scratch_.Write("model.key", kSecret, 0600);
  }

  RunOutput InPod(const std::vector<std::string>& cmd) const {
    std::vector<std::string> full = {"nsenter", "--net=" + pod_ns_};
    full.insert(full.end(), cmd.begin(), cmd.end());
    return RunCommand(full);
  }

  // config.json as containerd 1.6's CRI writes a pod's: `type` "sandbox" or "container".
  Config PodCfg(const std::string& id, const std::string& type,
                const std::map<std::string, std::string>& brig = {}) const {
    Config c = Cfg(id);
    c.namespaces = {"pid", "ipc", "uts", "mount", "network=" + pod_ns_, "cgroup"};
    c.annotations = {{"io.kubernetes.cri.container-type", type},
                     {"io.kubernetes.cri.sandbox-id", kSandboxId},
                     {"io.kubernetes.cri.sandbox-namespace", "agents"},
                     {"io.kubernetes.cri.sandbox-name", "phase-1"},
                     {"io.kubernetes.cri.sandbox-uid", "0b5c6f2e-9a1d-4e2f-8c3b-1d2e3f4a5b6c"}};
    for (const auto& [k, v] : brig) c.annotations[k] = v;
    return c;
  }

  // A refused create: one line, nothing under --root, no cgroup, no supervisor, no record,
  // no rules in the pod's namespace (the world's own servers are the test's processes).
  void ExpectRefused(const RunOutput& r, const std::string& id) {
    EXPECT_NE(r.exit_code, 0) << "create succeeded";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("brig: ", 0), 0u) << r.err;
    EXPECT_EQ(ListDir(root_), std::vector<std::string>{}) << "left under --root";
    EXPECT_EQ(GroupsOf(id), std::vector<std::string>{}) << "a cgroup was left";
    EXPECT_EQ(FindProcesses("brig-pod"), std::vector<pid_t>{}) << "a supervisor was left";
    EXPECT_FALSE(Exists(RecordPath()));
    EXPECT_EQ(Trim(InPod({"nft", "list", "tables"}).out), "");
  }

  std::string AuditPath() const {
    return scratch_.path() + "/audit/agents_phase-1_0b5c6f2e-9a1d-4e2f-8c3b-1d2e3f4a5b6c.jsonl";
  }
  static std::string RecordPath() { return "/run/brig/sandboxes/brig-pod-5a1d0c0ffee0"; }

  // The address brig's resolver gives `name`, asked at the cluster's DNS address.
  std::string Lookup(const std::string& name) {
    RunOutput r = InPod({kBusybox, "nslookup", name, kClusterDns});
    std::string last;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Address: ", 0) == 0) last = line.substr(9);
    }
    return Trim(last);
  }

  static constexpr char kSandboxId[] =
      "5a1d0c0ffee0aa11bb22cc33dd44ee55ff66778899aabbccddeeff0011223344";
  TestWorld world_;
  RecordingServer* broker_ = nullptr;
  int pod_fd_ = -1;
  std::string pod_ns_, handler_root_, key_;
};

TEST_F(Pod, ItsEgressIsHeldToTheHandlersProfileAndItsAuditIsWrittenOnTheNode) {
  // As containerd's shim runs brig: --log FILE --log-format json (and --debug).
  std::string log = scratch_.path() + "/log.json";
  RunOutput created =
      Run({"--log", log, "--log-format", "json", "--debug", "create", "--bundle",
           Bundle(PodCfg(kSandboxId, "sandbox", {{"brig/brokers", "model"}})), kSandboxId});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_TRUE(Exists(RecordPath())) << "the supervisor is in brig's records";
  RunOutput list = RunBrig({"list"});
  EXPECT_TRUE(Contains(list.out, "brig-pod-5a1d0c0ffee0")) << list.out;
  EXPECT_TRUE(Contains(list.out, "agents/phase-1")) << list.out;

  // DNS: an allowlisted name gets an address of brig's pool; a denied one NXDOMAIN, and
  // never leaves the node.
  std::string addr = Lookup("allowed.test");
  EXPECT_EQ(addr.rfind("198.1", 0), 0u) << addr;
  EXPECT_EQ(Lookup("denied.test"), "");
  for (const auto& q : world_.Dns().Queries()) EXPECT_FALSE(Contains(q, "denied.test")) << q;

  // HTTPS to the allowlisted name goes through brig's proxy, from the pod's namespace.
  std::string ca = world_.CaPem();
  RunOutput ok = InPod({"curl", "-sS", "-m", "10", "--cacert", ca, "--resolve",
                        "allowed.test:443:" + addr, "https://allowed.test/hello.txt"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(Contains(brig::testing::Lines(world_.WebLog()),
                       "sni https " + std::string(kWebHost) + ":443 allowed.test"))
      << brig::testing::Lines(world_.WebLog());
  EXPECT_TRUE(Contains(brig::testing::Lines(world_.WebLog()), "from=" + std::string(kPodAddr)))
      << "upstream connections leave from the pod's own address\n"
      << brig::testing::Lines(world_.WebLog());
  // The real address of an allowed name, dialed directly, names nothing: refused.
  RunOutput direct =
      InPod({"curl", "-sS", "-m", "10", "--cacert", ca, "--resolve",
             "allowed.test:443:" + std::string(kWebHost), "https://allowed.test/hello.txt"});
  EXPECT_NE(direct.exit_code, 0);
  // The metadata address: refused at once, on 80 by the proxy, elsewhere by the rules.
  RunOutput meta = InPod({"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                          "http://169.254.169.254/latest/meta-data/"});
  EXPECT_EQ(meta.out.substr(0, 1), "4") << meta.out << meta.err;
  RunOutput meta_tcp = InPod({kBusybox, "nc", "-w", "5", "169.254.169.254", "8080"});
  EXPECT_NE(meta_tcp.exit_code, 0);
  world_.ClearHits();
  // Another pod, and the node itself: refused at once, nothing reaches them.
  RunOutput node = InPod({kBusybox, "nc", "-w", "5", kNodeAddr, "8080"});
  EXPECT_NE(node.exit_code, 0);
  EXPECT_TRUE(world_.AllHits().empty()) << brig::testing::Lines(world_.AllHits());
  // What the handler names directly is reachable; the same host on another port is not.
  RunOutput other = InPod({kBusybox, "nc", "-w", "5", kDnsHost, "8080"});
  EXPECT_NE(other.exit_code, 0);
  RunOutput named = InPod({kBusybox, "nc", "-w", "5", kInternetHost, "8080"});
  Eventually([&] { return !world_.AllHits().empty(); });
  std::string hits = brig::testing::Lines(world_.AllHits());
  EXPECT_TRUE(Contains(hits, "-> " + std::string(kInternetHost) + ":8080")) << hits;
  EXPECT_FALSE(Contains(hits, std::string(kDnsHost) + ":8080")) << hits;

  // The node reaches the pod (the kubelet's probes).
  pid_t server = SpawnQuiet({"nsenter", "--net=" + pod_ns_, kBusybox, "nc", "-l", "-p", "8081"},
                            scratch_.path() + "/nc.err");
  ASSERT_GT(server, 0);
  EXPECT_TRUE(
      Eventually([&] { return world_.Connect(TestWorld::kWorld, kPodAddr, 8081) == "ok"; }));
  kill(server, SIGKILL);
  WaitExit(server);

  // The broker adds its header on the node; the pod never holds the key.
  RunOutput model = InPod({"python3", "-c",
                           "import socket\n"
                           "s = socket.create_connection(('127.0.0.1', 4000))\n"
                           "s.sendall(b'GET /v1/messages HTTP/1.1\\r\\nHost: "
                           "model\\r\\nConnection: close\\r\\n\\r\\n')\n"
                           "s.shutdown(socket.SHUT_WR)\n"
                           "print(s.recv(4096).decode())\n"});
  EXPECT_TRUE(Contains(model.out, "200 OK")) << model.out << model.err;
  Eventually([&] { return !broker_->Received().empty(); });
  ASSERT_FALSE(broker_->Received().empty());
  EXPECT_TRUE(Contains(broker_->Received()[0], std::string("x-api-key: ") + kSecret))
      << broker_->Received()[0];
  EXPECT_FALSE(
      Contains(ReadFileOrEmpty(scratch_.path() + "/" + kSandboxId + "/config.json"), kSecret));

  // Delete: no supervisor, no rules in the pod's namespace, no record.
  pid_t supervisor = 0;
  {
    std::istringstream rec(ReadFileOrEmpty(RecordPath()));
    for (std::string line; std::getline(rec, line);) {
      if (line.rfind("about pid=", 0) == 0) supervisor = std::stoi(line.substr(10));
    }
  }
  ASSERT_GT(supervisor, 0);
  EXPECT_EQ(Run({"delete", "--force", kSandboxId}).exit_code, 0);
  EXPECT_FALSE(Alive(supervisor));
  EXPECT_FALSE(Exists(RecordPath()));
  EXPECT_EQ(Trim(InPod({"nft", "list", "tables"}).out), "");

  // The audit: every line names the pod.
  std::vector<v1::AuditEvent> audit = ReadAuditEvents(AuditPath());
  ASSERT_FALSE(audit.empty()) << AuditPath();
  bool start = false, end = false, query = false, conn = false, denied = false, brokered = false;
  for (const auto& e : audit) {
    EXPECT_EQ(e.pod().namespace_(), "agents");
    EXPECT_EQ(e.pod().name(), "phase-1");
    EXPECT_EQ(e.pod().uid(), "0b5c6f2e-9a1d-4e2f-8c3b-1d2e3f4a5b6c");
    start |= e.has_sandbox_start();
    end |= e.has_sandbox_exit();
    query |= e.has_dns_query() && e.dns_query().name() == "allowed.test";
    denied |= e.has_dns_query() && e.dns_query().name() == "denied.test";
    conn |=
        e.has_connection() && e.connection().name() == "allowed.test" && e.connection().allowed();
    brokered |= e.has_broker_request();
  }
  EXPECT_TRUE(start && end && query && denied && conn && brokered) << ReadFileOrEmpty(AuditPath());
}

TEST_F(Pod, ItsContainersAreHeldToTheProfileWhateverTheirSpecAsks) {
  ASSERT_GT(Create(PodCfg(kSandboxId, "sandbox"), kSandboxId), 0);
  Config c = PodCfg("app", "container");
  c.readonly = false;
  c.no_new_privileges = false;
  c.bounding = c.effective = c.permitted = {"CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_CHOWN"};
  // The pod's own filter refuses uname(2) and allows the rest; the profile's refuses
  // unshare(2): both hold.
  c.seccomp_json = R"({"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],)"
                   R"("syscalls":[{"names":["uname"],"action":"SCMP_ACT_ERRNO"}]})";
  c.args = {"sh", "-c",
            "grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp_filters)' /proc/self/status; "
            "touch /x && echo wrote-root; sleep 1000000"};
  pid_t app = CreateAndStart(c, "app", "sleep");
  ASSERT_GT(app, 0);
  std::string status = ReadFileOrEmpty("/proc/" + std::to_string(app) + "/status");
  EXPECT_TRUE(Contains(status, "CapEff:\t0000000000000000")) << status;
  EXPECT_TRUE(Contains(status, "CapPrm:\t0000000000000000")) << status;
  EXPECT_TRUE(Contains(status, "NoNewPrivs:\t1")) << status;
  EXPECT_TRUE(Contains(status, "Seccomp:\t2")) << status;
  EXPECT_TRUE(Contains(status, "Seccomp_filters:\t2")) << status;
  RunOutput uname = Run({"exec", "app", "uname"});
  EXPECT_FALSE(Contains(uname.out, "Linux")) << "the pod's own filter: " << uname.out;
  RunOutput userns = Run({"exec", "app", "unshare", "-U", "true"});
  EXPECT_NE(userns.exit_code, 0) << "the profile's filter: " << userns.out;
  RunOutput plain = Run({"exec", "app", "true"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  // An exec that asks for a capability gets none either.
  RunOutput e =
      Run({"exec", "--cap", "CAP_NET_ADMIN", "app", "grep", "CapEff", "/proc/self/status"});
  EXPECT_TRUE(Contains(e.out, "0000000000000000")) << e.out << e.err;
  RunOutput rules = Run({"exec", "app", "touch", "/x"});
  EXPECT_NE(rules.exit_code, 0) << "the root is read-only";
  EXPECT_EQ(Run({"delete", "--force", "app"}).exit_code, 0);
  EXPECT_EQ(Run({"delete", "--force", kSandboxId}).exit_code, 0);
}

TEST_F(Pod, AnAnnotationThatWidensTheHandlerIsRefusedAndNothingIsLeft) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"brig/profile", "none"}}, "annotation brig/profile"},
      {{{"brig/egress-budget", "1G"}}, ""},
      {{{"brig/brokers", "elsewhere"}}, "annotation brig/brokers"},
      {{{"brig/unknown", "x"}}, "annotation brig/unknown"},
  };
  WriteHandler({"egress_bytes: \"10M\""});
  const std::string id = kSandboxId;
  for (const auto& [annotations, says] : cases) {
    RunOutput r = Run({"create", "--bundle", Bundle(PodCfg(id, "sandbox", annotations), "b"), id});
    std::string want = says.empty() ? "annotation brig/egress-budget" : says;
    EXPECT_TRUE(Contains(r.err, want)) << r.err;
    ExpectRefused(r, id);
    RunCommand({"rm", "-rf", scratch_.path() + "/b"});
  }
  // A pod on the node's own network (hostNetwork) is refused too.
  Config host = PodCfg(id, "sandbox");
  host.namespaces = {"pid", "ipc", "uts", "mount", "cgroup"};
  RunOutput r = Run({"create", "--bundle", Bundle(host, "h"), id});
  EXPECT_TRUE(Contains(r.err, "hostNetwork")) << r.err;
  ExpectRefused(r, id);
  // So is a container that joins the node's own namespace by path, which containerd never
  // writes but a config.json can.
  Config joined = PodCfg("app", "container");
  joined.namespaces = {"pid", "ipc=/proc/" + std::to_string(getpid()) + "/ns/ipc", "uts", "mount", "network=" + pod_ns_, "cgroup"};
  RunOutput j = Run({"create", "--bundle", Bundle(joined, "j"), "app"});
  EXPECT_TRUE(Contains(j.err, "hostIPC")) << j.err;
  ExpectRefused(j, "app");
}

TEST_F(Pod, AKilledSupervisorLeavesThePodClosedAndDeleteStillEndsIt) {
  ASSERT_GT(Create(PodCfg(kSandboxId, "sandbox"), kSandboxId), 0);
  std::string addr = Lookup("allowed.test");
  ASSERT_EQ(addr.rfind("198.1", 0), 0u) << addr;
  pid_t supervisor = 0;
  std::istringstream rec(ReadFileOrEmpty(RecordPath()));
  for (std::string line; std::getline(rec, line);) {
    if (line.rfind("about pid=", 0) == 0) supervisor = std::stoi(line.substr(10));
  }
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  Eventually([&] { return !Alive(supervisor); });
  // Its rules stay: nothing gets out, and nothing is forwarded past them.
  RunOutput r = InPod({"curl", "-sS", "-m", "10", "--cacert", world_.CaPem(), "--resolve",
                       "allowed.test:443:" + addr, "https://allowed.test/hello.txt"});
  EXPECT_EQ(r.exit_code, 7) << "refused at once: " << r.err;
  EXPECT_NE(Trim(InPod({"nft", "list", "tables"}).out), "");
  EXPECT_EQ(Run({"delete", "--force", kSandboxId}).exit_code, 0);
  // brig gc removes the record it left.
  RunOutput gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(Exists(RecordPath()));
}

// The floor's "the node's own addresses" are the node's, though the supervisor serves from
// inside the pod's namespace: brig runs in the world here (the node, as brig runs in a
// node's namespace), which gains a public address with a service of its own; a name that
// resolves to it is refused, and nothing reaches the service.
TEST_F(Pod, TheNodesOwnAddressesStayInTheFloorFromInsideThePodsNamespace) {
  ASSERT_EQ(world_.InWorld({"ip", "addr", "add", "11.0.0.1/32", "dev", "pw0"}).exit_code, 0);
  ASSERT_NE(world_.ServeHttp(TestWorld::kWorld, "11.0.0.1", 80, "the node's own\n"), nullptr);
  world_.Dns().SetA("node.allowed.test", {"11.0.0.1"});
  std::string err = scratch_.path() + "/create.err";
  pid_t create =
      SpawnQuiet({"nsenter", "--net=" + world_.NsPath(TestWorld::kWorld), BrigBinary(), "--root",
                  root_, "create", "--bundle", Bundle(PodCfg(kSandboxId, "sandbox")), kSandboxId},
                 err);
  ASSERT_GT(create, 0);
  ASSERT_EQ(WaitExit(create), 0) << ReadFileOrEmpty(err);
  EXPECT_EQ(Lookup("node.allowed.test"), "");
  EXPECT_EQ(Lookup("allowed.test").rfind("198.1", 0), 0u) << "the resolver works";
  RunOutput r = InPod({"curl", "-sS", "-m", "10", "http://11.0.0.1/"});
  EXPECT_FALSE(Contains(r.out, "the node's own")) << r.out;
  EXPECT_EQ(Run({"delete", "--force", kSandboxId}).exit_code, 0);
  bool floor = false;
  for (const auto& e : ReadAuditEvents(AuditPath())) {
    floor |= e.has_dns_query() && e.dns_query().name() == "node.allowed.test" &&
             e.dns_query().reason() == "floor";
  }
  EXPECT_TRUE(floor) << ReadFileOrEmpty(AuditPath());
  for (const auto& hit : world_.AllHits()) EXPECT_FALSE(Contains(hit, "11.0.0.1:80")) << hit;
}

}  // namespace
}  // namespace brig::testing::oci
