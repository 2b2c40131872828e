// The enforcement manifest (manifest/manifest.h) from a resolved plan: what it lists, and
// what it never does (a broker header's value, an environment variable's value).
#include <gtest/gtest.h>
#include <linux/mount.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>

#include <string>
#include <vector>

#include "config/profile.h"
#include "config/resolve.h"
#include "manifest/manifest.h"
#include "net/nft.h"
#include "util/digest.h"

namespace brig::manifest {
namespace {

constexpr char kSecret[] = "sk-the-secret-value-0123456789";

config::Sandbox Plan() {
  auto p = config::ParseProfile(
      "isolation: ISOLATION_SANDBOX\nfilesystem { workspace: WORKSPACE_RO }\n"
      "network { posture: POSTURE_ALLOWLIST allow_hosts: \"example.com\" "
      "allow_addresses: \"192.0.2.0/24\" }\nsecurity { seccomp_policy: \"default\" }\n",
      "p");
  EXPECT_TRUE(p) << p.error().Render();
  config::FillDefaults(*p);
  config::Overrides run;
  run.id = "brig-0123456789ab";
  run.argv = {"sh", "-c", "true"};
  run.allow_hosts = {"*.pkg.example"};
  run.set_env = {"TOKEN_NAME_ONLY=" + std::string(kSecret)};
  run.egress_budget = 1 << 20;
  run.wait_all = true;
  auto b = broker::ParseSpec("model=port=8080,to=https://api.example,header=x-api-key:env:KEY,"
                             "methods=POST,paths=/v1/");
  EXPECT_TRUE(b) << b.error().Render();
  run.brokers.emplace_back("model=...", *b);
  auto sb = config::Resolve(*p, run);
  EXPECT_TRUE(sb) << sb.error().Render();
  // What the probe reads on the host: the header's value.
  sb->brokers[0].headers[0].value = kSecret;
  return *sb;
}

TEST(Manifest, ListsTheEffectivePolicyAndNoValue) {
  config::Sandbox sb = Plan();
  fs::MountPlan plan;
  fs::Step ws;
  ws.kind = fs::StepKind::kBind;
  ws.dest = "workspace";
  ws.source = "/src/ws";
  ws.attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  plan.steps.push_back(std::move(ws));
  security::SeccompProgram prog;
  prog.insns.resize(3);
  prog.text = "policy text";
  v1::Manifest m = Build({sb, plan, &prog, nullptr});
  std::string json = Json(m);
  EXPECT_EQ(json.find(kSecret), std::string::npos) << json;
  EXPECT_EQ(json.back(), '\n');
  ASSERT_EQ(m.brokers_size(), 1);
  EXPECT_EQ(m.brokers(0).header_names(0), "x-api-key");
  EXPECT_EQ(m.brokers(0).target(), "https://api.example");
  EXPECT_EQ(m.brokers(0).methods(0), "POST");
  EXPECT_EQ(m.brokers(0).paths(0), "/v1/");
  bool named = false;
  for (const auto& n : m.env_names()) named |= n == "TOKEN_NAME_ONLY";
  EXPECT_TRUE(named);
  EXPECT_EQ(m.limits().egress_budget_bytes(), 1u << 20);
  EXPECT_TRUE(m.limits().wait_all());
  EXPECT_EQ(m.network().posture(), v1::POSTURE_ALLOWLIST);
  ASSERT_EQ(m.network().allow_hosts_size(), 2);
  EXPECT_EQ(m.network().allow_hosts(1), "*.pkg.example");
  EXPECT_EQ(m.network().allow_addresses(0), "192.0.2.0/24");
  EXPECT_NE(m.network().address().find("not allocated"), std::string::npos);
  EXPECT_EQ(m.network().nft_rules(), net::BaseRules());
  ASSERT_EQ(m.mounts_size(), 1);
  EXPECT_EQ(m.mounts(0).target(), "/workspace");
  EXPECT_EQ(m.mounts(0).source(), "/src/ws");
  EXPECT_EQ(m.mounts(0).flags(0), "ro");
  EXPECT_EQ(m.seccomp().bpf_instructions(), 3u);
  EXPECT_EQ(m.seccomp().policy_sha256(), util::Sha256Hex("policy text"));
  EXPECT_EQ(m.seccomp().bpf_sha256(), util::Sha256Hex(std::string(3 * sizeof(sock_filter), '\0')));
}

// The elements are rendered from what net::AddPortRules installs, as nft prints them.
// An OCI container's steps (oci/dry_run.h) are listed as a sandbox's are, with what
// their kinds add: the config.json field, the mount(2) flags, a file system's type and
// options, a device's numbers; a native step gets none of these.
TEST(Manifest, ListsAnOciContainersStepsWithTheirFields) {
  using K = fs::StepKind;
  fs::Step tmpfs{.kind = K::kMount, .dest = "tmp", .data = "mode=1777,size=65536k"};
  tmpfs.source = "tmpfs";
  tmpfs.type = "tmpfs";
  tmpfs.flags = MS_NOSUID | MS_NODEV;
  tmpfs.field = "mounts";
  v1::ManifestMount t = Mount(tmpfs);
  EXPECT_EQ(t.kind(), "mount");
  EXPECT_EQ(t.target(), "/tmp");
  EXPECT_EQ(t.type(), "tmpfs");
  EXPECT_EQ(t.options(), "mode=1777,size=65536k");
  EXPECT_EQ(t.field(), "mounts");
  EXPECT_EQ(std::vector<std::string>(t.flags().begin(), t.flags().end()),
            (std::vector<std::string>{"nosuid", "nodev"}));

  fs::Step bind{.kind = K::kBindSource, .dest = "data"};
  bind.source = "/srv/data";
  bind.recursive = true;
  bind.remount = true;
  bind.flags = MS_RDONLY | MS_BIND;
  bind.attrs = MOUNT_ATTR_RDONLY;
  bind.field = "mounts";
  v1::ManifestMount b = Mount(bind);
  EXPECT_EQ(b.source(), "/srv/data");
  EXPECT_EQ(std::vector<std::string>(b.flags().begin(), b.flags().end()),
            (std::vector<std::string>{"ro", "rbind", "remount", "bind"}))
      << "ro is listed once";

  fs::Step null{.kind = K::kDevice, .dest = "dev/null", .mode = S_IFCHR | 0666};
  null.rdev = makedev(1, 3);
  null.field = "linux.devices";
  v1::ManifestMount d = Mount(null);
  EXPECT_EQ(d.type(), "c");
  EXPECT_EQ(d.source(), "1:3");
  EXPECT_EQ(std::vector<std::string>(d.flags().begin(), d.flags().end()),
            (std::vector<std::string>{"mode=666", "uid=0", "gid=0"}));

  // brig run's own new file system is the same kind of step without a field: listed, as
  // brig-run(1) says, by its type, flags and options.
  fs::Step own{.kind = K::kMount, .dest = "tmp", .data = "size=1024,mode=1777"};
  own.type = own.source = "tmpfs";
  own.flags = MS_NOSUID | MS_NODEV;
  v1::ManifestMount n = Mount(own);
  EXPECT_EQ(n.kind(), "tmpfs");
  EXPECT_EQ(n.source(), "tmpfs");
  EXPECT_EQ(n.field(), "");
  EXPECT_EQ(n.type(), "");
  EXPECT_EQ(n.options(), "");
  EXPECT_EQ(std::vector<std::string>(n.flags().begin(), n.flags().end()),
            (std::vector<std::string>{"nosuid", "nodev", "size=1024", "mode=1777"}));
}

TEST(Manifest, RendersTheSandboxsSetElements) {
  config::Sandbox sb = Plan();
  net::PortRules rules{sb.id, "bv0123456789ab", {0x0ad50005}, {}, {1001, 1002, 1003, 1004}};
  rules.mac = net::MacFor(rules.addr);
  fs::MountPlan plan;
  v1::Manifest m = Build({sb, plan, nullptr, &rules});
  EXPECT_EQ(m.network().address(), "10.213.0.5");
  std::string all;
  for (const auto& s : m.network().nft_sets()) {
    for (const auto& e : s.elements()) all += s.family() + " " + s.set() + " " + e + "\n";
  }
  EXPECT_NE(all.find("bridge ports_ip \"bv0123456789ab\" . 10.213.0.5\n"), std::string::npos)
      << all;
  EXPECT_NE(all.find("bridge ports_mac \"bv0123456789ab\" . " + net::MacStr(rules.mac)),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("inet redirect_tcp 10.213.0.5 . 443 : 1002\n"), std::string::npos) << all;
  EXPECT_NE(all.find("inet listeners 10.213.0.5 . udp . 1004\n"), std::string::npos) << all;
  EXPECT_NE(all.find("bridge ports_arp \"bv0123456789ab\" . " + net::MacStr(rules.mac) +
                     " . 10.213.0.5 . 10.213.0.1\n"),
            std::string::npos)
      << all;
}

TEST(Manifest, UnknownSetsRenderAsHex) {
  net::SetElements s{NFPROTO_INET, "brig", "other", {{std::string("\x01\x02", 2), ""}}};
  EXPECT_EQ(net::RenderElements(s), std::vector<std::string>{"0x0102"});
}

}  // namespace
}  // namespace brig::manifest
