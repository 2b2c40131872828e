// A runtime handler's posture and what a pod's annotations make of it (pod/handler.h), and
// the rules brig puts in a namespace it serves from inside, a pod's (net/inside_rules.h). Pure.
#include <gtest/gtest.h>

#include "net/inside_rules.h"
#include "pod/handler.h"
#include "testlib/testlib.h"

namespace brig::pod {
namespace {

constexpr char kHandler[] = R"(name: "agents"
root: "/run/brig/handlers/agents"
profile: "untrusted-code-write"
permit: "untrusted-code-read"
egress_bytes: "10M"
dns_upstream: "10.96.0.10"
direct: "udp:10.96.0.10/32:53"
direct: "tcp:10.0.0.0/16"
brokers { name: "model" port: 4000 to: "https://api.model.test" headers { name: "x-api-key" from: "file:/etc/brig/secrets/model" } }
)";

v1::RuntimeHandler Handler() {
  auto h = ParseHandler(kHandler, "agents.textproto", "agents");
  EXPECT_TRUE(h) << h.error().Render();
  return h ? *h : v1::RuntimeHandler();
}

v1::Profile Allowlist() {
  v1::Profile p;
  p.set_isolation(v1::ISOLATION_SANDBOX);
  p.mutable_network()->set_posture(v1::POSTURE_ALLOWLIST);
  return p;
}

Annotations Pod(const std::map<std::string, std::string>& extra = {}) {
  Annotations a;
  a["io.kubernetes.cri.container-type"] = "sandbox";
  a["io.kubernetes.cri.sandbox-id"] = "0123456789abcdef";
  a["io.kubernetes.cri.sandbox-namespace"] = "team-a";
  a["io.kubernetes.cri.sandbox-name"] = "agent-7";
  a["io.kubernetes.cri.sandbox-uid"] = "5e3c-11";
  for (const auto& [k, v] : extra) a[k] = v;
  return a;
}

std::string Refusal(const Result<Plan>& r) { return r ? "" : r.error().Render(); }

TEST(PodHandler, AHandlerFileIsCheckedWhole) {
  EXPECT_EQ(Handler().brokers_size(), 1);
  const std::pair<std::string, std::string> bad[] = {
      {R"(name: "other" root: "/r" profile: "p")", "the file's name"},
      {R"(name: "agents" root: "r" profile: "p")", "absolute"},
      {R"(name: "agents" root: "/r")", "profile"},
      {R"(name: "agents" root: "/r" profile: "p" direct: "10.0.0.1")", "direct"},
      {R"(name: "agents" root: "/r" profile: "p" egress_bytes: "lots")", "egress_bytes"},
      {R"(name: "agents" root: "/r" profile: "p" brokers { name: "m" port: 1 to: "http://m.test" headers { name: "k" from: "env:KEY" } })",
       "node file"},
      {R"(name: "agents" root: "/r" profile: "p" brokers { name: "m" unix_path: "/s" to: "http://m.test" })",
       "TCP port"},
      {R"(name: "agents" root: "/r" profile: "p" bogus: 1)", "bogus"},
  };
  for (const auto& [text, says] : bad) {
    auto h = ParseHandler(text, "agents.textproto", "agents");
    ASSERT_FALSE(h) << text;
    EXPECT_NE(h.error().Render().find(says), std::string::npos) << h.error().Render();
  }
}

TEST(PodHandler, TheHandlerIsFoundByItsRootOrTheNamespaceUnderIt) {
  testing::ScratchDir dir;
  dir.Write("agents.textproto", kHandler);
  dir.Write("README", "not a handler");
  for (const char* root : {"/run/brig/handlers/agents", "/run/brig/handlers/agents/k8s.io"}) {
    auto h = FindHandler(dir.path(), root);
    ASSERT_TRUE(h) << h.error().Render();
    ASSERT_TRUE(h->has_value()) << root;
    EXPECT_EQ((*h)->name(), "agents");
  }
  for (const char* root :
       {"/run/brig/oci", "/run/brig/handlers/agents/k8s.io/x", "/run/brig/handlers/agentsX"}) {
    auto h = FindHandler(dir.path(), root);
    ASSERT_TRUE(h) << h.error().Render();
    EXPECT_FALSE(h->has_value()) << root;
  }
  auto none = FindHandler(dir.path() + "/missing", "/run/brig/handlers/agents");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  dir.Write("broken.textproto", "name: ");
  EXPECT_FALSE(FindHandler(dir.path(), "/elsewhere"))
      << "a handler that cannot be read is an error";
}

TEST(PodHandler, ThePodIsNamedByContainerdsOwnAnnotations) {
  auto p = IdentityOf(Pod());
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_TRUE(p->sandbox);
  EXPECT_EQ(p->Label(), "team-a/agent-7");
  EXPECT_EQ(p->uid, "5e3c-11");
  EXPECT_FALSE(IdentityOf(Pod({{"io.kubernetes.cri.sandbox-name", "../etc"}})));
  EXPECT_FALSE(IdentityOf(Pod({{"io.kubernetes.cri.container-type", "vm"}})));
  Annotations none;
  EXPECT_FALSE(IdentityOf(none));
}

TEST(PodHandler, DirectDestinations) {
  auto d = net::ParseDirect("udp:10.96.0.10/32:53");
  ASSERT_TRUE(d) << d.error().Render();
  EXPECT_FALSE(d->tcp);
  EXPECT_EQ(d->network.Str(), "10.96.0.10");
  EXPECT_EQ(d->prefix, 32);
  EXPECT_EQ(d->port, 53);
  auto any = net::ParseDirect("tcp:10.0.0.0/8");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->port, 0);
  EXPECT_EQ(net::ParseDirect("tcp:10.1.2.3")->prefix, 32);
  for (const char* bad : {"10.0.0.1", "icmp:10.0.0.1", "tcp:10.0.0.1/33", "tcp:10.0.0.1/8",
                          "tcp:10.0.0.1:0", "tcp:10.0.0.1:65536", "tcp:host:80", "tcp:10.0.0.1/"}) {
    EXPECT_FALSE(net::ParseDirect(bad)) << bad;
  }
}

TEST(PodHandler, APodChoosesOnlyAProfileTheHandlerPermits) {
  v1::RuntimeHandler h = Handler();
  EXPECT_EQ(*ChooseProfile(h, Pod()), "untrusted-code-write");
  EXPECT_EQ(*ChooseProfile(h, Pod({{"brig/profile", "untrusted-code-read"}})),
            "untrusted-code-read");
  for (const char* wider : {"none", "trusted-code-write", "/tmp/mine.textproto"}) {
    auto r = ChooseProfile(h, Pod({{"brig/profile", wider}}));
    ASSERT_FALSE(r) << wider;
    EXPECT_NE(r.error().Render().find("annotation brig/profile"), std::string::npos);
  }
}

TEST(PodHandler, APodsAnnotationsNarrowAndNeverWiden) {
  v1::RuntimeHandler h = Handler();
  auto plan = PlanPod(h, Allowlist(),
                      Pod({{"brig/allow-hosts", "registry.test, git.test"},
                           {"brig/egress-budget", "1M"},
                           {"brig/brokers", "model"}}));
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(plan->run.allow_hosts, (std::vector<std::string>{"registry.test", "git.test"}));
  EXPECT_EQ(plan->run.egress_budget, 1u << 20);
  ASSERT_EQ(plan->run.brokers.size(), 1u);
  EXPECT_EQ(plan->run.brokers[0].second.headers(0).from(), "file:/etc/brig/secrets/model");
  EXPECT_EQ(plan->run.dns_upstream->Str(), "10.96.0.10:53");
  EXPECT_EQ(plan->direct.size(), 2u);
  EXPECT_EQ(plan->audit_path, "/var/log/brig/pods/team-a_agent-7_5e3c-11.jsonl");
  EXPECT_EQ(plan->run.name, "team-a/agent-7");
  // The handler's budget holds without an annotation; a smaller profile's holds over it.
  EXPECT_EQ(PlanPod(h, Allowlist(), Pod())->run.egress_budget, 10u << 20);
  v1::Profile tight = Allowlist();
  tight.mutable_limits()->set_egress_bytes("2M");
  EXPECT_EQ(PlanPod(h, tight, Pod())->run.egress_budget, 2u << 20);
  EXPECT_NE(Refusal(PlanPod(h, tight, Pod({{"brig/egress-budget", "3M"}}))).find("more than"),
            std::string::npos);

  v1::Profile none = Allowlist();
  none.mutable_network()->set_posture(v1::POSTURE_NONE);
  v1::Profile unconfined = Allowlist();
  unconfined.set_isolation(v1::ISOLATION_NONE);
  const std::tuple<v1::Profile, std::map<std::string, std::string>, std::string> refused[] = {
      {Allowlist(), {{"brig/egress-budget", "20M"}}, "annotation brig/egress-budget"},
      {Allowlist(), {{"brig/egress-budget", "-1"}}, "annotation brig/egress-budget"},
      {Allowlist(), {{"brig/brokers", "other"}}, "no such broker"},
      {Allowlist(), {{"brig/brokers", "model,model"}}, "named twice"},
      {Allowlist(), {{"brig/allow-hosts", "a.test,,b.test"}}, "empty item"},
      {Allowlist(), {{"brig/allow-hosts", "*"}}, "annotation brig/allow-hosts"},
      {none, {{"brig/allow-hosts", "a.test"}}, "no allowlist"},
      {Allowlist(), {{"brig/privileged", "true"}}, "annotation brig/privileged"},
      {unconfined, {}, "must isolate"},
  };
  for (const auto& [profile, extra, says] : refused) {
    std::string why = Refusal(PlanPod(h, profile, Pod(extra)));
    EXPECT_NE(why.find(says), std::string::npos) << says << ": " << why;
  }
}

TEST(InsideRules, RedirectAndRefuseAllButTheMarkAndTheDirect) {
  net::ListenerPorts l{.http = 1080, .https = 1443, .dns_tcp = 1053, .dns_udp = 2053};
  std::vector<net::Direct> direct = {*net::ParseDirect("udp:10.96.0.10/32:53"),
                                     *net::ParseDirect("tcp:10.0.0.0/16")};
  std::string s = net::InsideRules(l, direct, net::kMark);
  for (const char* line :
       {"type nat hook output priority -100; policy accept;", "meta mark 1651665255 return",
        "meta nfproto ipv4 udp dport 53 redirect to :2053",
        "meta nfproto ipv4 tcp dport 53 redirect to :1053",
        "meta nfproto ipv4 tcp dport 80 redirect to :1080",
        "meta nfproto ipv4 tcp dport 443 redirect to :1443",
        "type filter hook output priority 0; policy drop;", "meta mark 1651665255 accept",
        "ip daddr 127.0.0.1 ct status dnat accept", "ip daddr 10.96.0.10/32 udp dport 53 accept",
        "ip daddr 10.0.0.0/16 tcp accept", "meta l4proto tcp reject with tcp reset",
        "reject with icmpx admin-prohibited"}) {
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n" << s;
  }
  std::string none = net::InsideRules(std::nullopt, {}, 0);
  EXPECT_EQ(none.find("redirect"), std::string::npos) << none;
  EXPECT_NE(none.find("policy drop"), std::string::npos);
}

}  // namespace
}  // namespace brig::pod
