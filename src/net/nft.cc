#include "net/nft.h"

#include <nftables/libnftables.h>

#include <memory>

namespace brig::net {
namespace {

struct CtxFree {
  void operator()(nft_ctx* c) const { nft_ctx_free(c); }
};

std::string Chain(const std::string& id) { return "sb-" + id.substr(id.find('-') + 1); }

// The first line of nft's message is the one that says what was wrong.
std::string FirstLine(const char* text) {
  std::string s = text ? text : "";
  if (size_t nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s.empty() ? "failed" : s;
}

}  // namespace

Status RunNft(const std::string& script) {
  std::unique_ptr<nft_ctx, CtxFree> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return Fail("nftables", "", "cannot create a context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), script.c_str()) != 0) {
    return Fail("nftables", "", FirstLine(nft_ctx_get_error_buffer(ctx.get())));
  }
  return {};
}

namespace {

// Lateral traffic never reaches the bridge's forward path: a sandbox has a /32 and sends
// everything to the gateway, so traffic for another sandbox arrives at the host, where
// the inet table rejects it. The bridge forward chain drops what a sandbox could only
// craft by hand (it has no CAP_NET_RAW; the bridge family cannot reject here).
std::string InetTable() {
  std::string br = kBridge;
  return "table inet brig {\n"
         "  map redirect_tcp { type ipv4_addr . inet_service : inet_service; }\n"
         "  map redirect_udp { type ipv4_addr . inet_service : inet_service; }\n"
         "  set listeners { type ipv4_addr . inet_proto . inet_service; }\n"
         "  chain nat_redirect {\n"
         "    type nat hook prerouting priority dstnat; policy accept;\n"
         "    iifname \"" + br + "\" tcp dport { 53, 80, 443 } redirect to :ip saddr . tcp dport "
         "map @redirect_tcp\n"
         "    iifname \"" + br + "\" udp dport 53 redirect to :ip saddr . udp dport map "
         "@redirect_udp\n"
         "  }\n"
         "  chain from_sandbox {\n"
         "    type filter hook prerouting priority filter; policy accept;\n"
         "    iifname \"" + br + "\" ct status dnat accept\n"
         "    iifname \"" + br + "\" fib daddr type local accept\n"
         "    iifname \"" + br + "\" meta l4proto tcp reject with tcp reset\n"
         "    iifname \"" + br + "\" reject with icmpx admin-prohibited\n"
         "  }\n"
         "  chain to_host {\n"
         "    type filter hook input priority filter; policy accept;\n"
         "    iifname != \"" + br + "\" accept\n"
         "    ct state established,related accept\n"
         "    ct status dnat ip saddr . meta l4proto . th dport @listeners accept\n"
         "    meta l4proto tcp reject with tcp reset\n"
         "    reject with icmpx admin-prohibited\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority filter; policy accept;\n"
         "    iifname \"" + br + "\" meta l4proto tcp reject with tcp reset\n"
         "    iifname \"" + br + "\" reject with icmpx admin-prohibited\n"
         "    oifname \"" + br + "\" meta l4proto tcp reject with tcp reset\n"
         "    oifname \"" + br + "\" reject with icmpx admin-prohibited\n"
         "  }\n"
         "}\n";
}

std::string BridgeTable() {
  return "table bridge brig {\n"
         "  map ports { type ifname : verdict; }\n"
         "  chain prerouting {\n"
         "    type filter hook prerouting priority -200; policy accept;\n"
         "    iifname vmap @ports\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority 0; policy accept;\n"
         "    iifname \"" + std::string(kPortPrefix) + "*\" drop\n"
         "  }\n"
         "}\n";
}

}  // namespace

Status EnsureBaseRules() {
  // A table that exists was made whole by an earlier brig, in one transaction.
  if (!RunNft("list table inet brig\n")) BRIG_TRY_CTX(RunNft(InetTable()), "inet table");
  if (!RunNft("list table bridge brig\n")) BRIG_TRY_CTX(RunNft(BridgeTable()), "bridge table");
  return {};
}

std::string AddPortScript(const PortRules& r, const Subnet& subnet) {
  std::string chain = Chain(r.id), a = r.addr.Str(), gw = subnet.Gateway().Str();
  std::string mac = MacStr(r.mac);
  const ListenerPorts& l = r.listeners;
  auto port = [](uint16_t p) { return std::to_string(p); };
  return "add chain bridge brig " + chain + "\n" +
         // Frames must carry the port's own addresses; ARP is for the gateway only; the
         // port speaks IPv4 and ARP, nothing else.
         "add rule bridge brig " + chain + " ether saddr != " + mac + " drop\n" +
         "add rule bridge brig " + chain + " ether type arp arp saddr ether != " + mac + " drop\n" +
         "add rule bridge brig " + chain + " ether type arp arp saddr ip != " + a + " drop\n" +
         "add rule bridge brig " + chain + " ether type arp arp daddr ip != " + gw + " drop\n" +
         "add rule bridge brig " + chain + " ether type ip ip saddr != " + a + " drop\n" +
         "add rule bridge brig " + chain + " ether type != { ip, arp } drop\n" +
         "add element bridge brig ports { \"" + r.port + "\" : jump " + chain + " }\n" +
         "add element inet brig redirect_tcp { " + a + " . 80 : " + port(l.http) + ", " + a +
         " . 443 : " + port(l.https) + ", " + a + " . 53 : " + port(l.dns_tcp) + " }\n" +
         "add element inet brig redirect_udp { " + a + " . 53 : " + port(l.dns_udp) + " }\n" +
         "add element inet brig listeners { " + a + " . tcp . " + port(l.http) + ", " + a +
         " . tcp . " + port(l.https) + ", " + a + " . tcp . " + port(l.dns_tcp) + ", " + a +
         " . udp . " + port(l.dns_udp) + " }\n";
}

std::string RemovePortScript(const PortRules& r) {
  std::string chain = Chain(r.id), a = r.addr.Str();
  const ListenerPorts& l = r.listeners;
  auto port = [](uint16_t p) { return std::to_string(p); };
  return "delete element bridge brig ports { \"" + r.port + "\" }\n" +
         "delete chain bridge brig " + chain + "\n" +
         "delete element inet brig redirect_tcp { " + a + " . 80, " + a + " . 443, " + a +
         " . 53 }\n" +
         "delete element inet brig redirect_udp { " + a + " . 53 }\n" +
         "delete element inet brig listeners { " + a + " . tcp . " + port(l.http) + ", " + a +
         " . tcp . " + port(l.https) + ", " + a + " . tcp . " + port(l.dns_tcp) + ", " + a +
         " . udp . " + port(l.dns_udp) + " }\n";
}

Result<bool> RemovePortRules(const PortRules& r) {
  if (RunNft(RemovePortScript(r))) return true;
  // Some of it is gone already (a partial failure, or the tables were flushed): remove
  // what is left piece by piece.
  bool any = false;
  std::string script = RemovePortScript(r);
  for (size_t start = 0; start < script.size();) {
    size_t end = script.find('\n', start);
    any = RunNft(script.substr(start, end - start)) || any;
    start = end + 1;
  }
  return any;
}

}  // namespace brig::net
