#include "net/nft.h"

#include <nftables/libnftables.h>

#include <netinet/in.h>
// After netinet/in.h, which it must not redefine.
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "sys/library.h"
#include "util/files.h"

namespace brig::net {
namespace {

// libnftables, opened at the first script rather than at every start of brig: with the
// libraries it pulls in (libxtables, libjansson, libgmp) it cost each process 0.4 ms to
// load, and most runs of brig (every OCI verb, every run without a network) never use it.
struct Libnftables {
  decltype(&nft_ctx_new) ctx_new;
  decltype(&nft_ctx_free) ctx_free;
  decltype(&nft_ctx_buffer_output) buffer_output;
  decltype(&nft_ctx_buffer_error) buffer_error;
  decltype(&nft_run_cmd_from_buffer) run_cmd_from_buffer;
  decltype(&nft_ctx_get_error_buffer) get_error_buffer;
};

Result<const Libnftables*> OpenLibnftables() {
  static const Libnftables* lib = nullptr;
  static std::string error;
  if (!lib && error.empty()) {
    static Libnftables l;
    sys::Library so("libnftables.so.1");
    so.Find(l.ctx_new, "nft_ctx_new");
    so.Find(l.ctx_free, "nft_ctx_free");
    so.Find(l.buffer_output, "nft_ctx_buffer_output");
    so.Find(l.buffer_error, "nft_ctx_buffer_error");
    so.Find(l.run_cmd_from_buffer, "nft_run_cmd_from_buffer");
    so.Find(l.get_error_buffer, "nft_ctx_get_error_buffer");
    error = so.error();
    if (error.empty()) lib = &l;
  }
  if (!lib) return Fail("nftables", "libnftables.so.1", error);
  return lib;
}

// The first line of nft's message is the one that says what was wrong.
std::string FirstLine(const char* text) {
  std::string s = text ? text : "";
  if (size_t nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s.empty() ? "failed" : s;
}

}  // namespace

Status RunNft(const std::string& script) {
  const Libnftables* nft = BRIG_TRY(OpenLibnftables());
  std::unique_ptr<nft_ctx, decltype(nft->ctx_free)> ctx(nft->ctx_new(NFT_CTX_DEFAULT),
                                                        nft->ctx_free);
  if (!ctx) return Fail("nftables", "", "cannot create a context");
  nft->buffer_output(ctx.get());
  nft->buffer_error(ctx.get());
  if (nft->run_cmd_from_buffer(ctx.get(), script.c_str()) != 0) {
    return Fail("nftables", "", FirstLine(nft->get_error_buffer(ctx.get())));
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
         "  map redirect_tcp { type ipv4_addr . inet_service : inet_service; flags timeout; }\n"
         "  map redirect_udp { type ipv4_addr . inet_service : inet_service; flags timeout; }\n"
         "  set listeners { type ipv4_addr . inet_proto . inet_service; flags timeout; }\n"
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
  std::string port = std::string("\"") + kPortPrefix + "*\"";
  return "table bridge brig {\n"
         "  set ports_mac { type ifname . ether_addr; flags timeout; }\n"
         "  set ports_ip { type ifname . ipv4_addr; flags timeout; }\n"
         "  set ports_arp { type ifname . ether_addr . ipv4_addr . ipv4_addr; flags timeout; }\n"
         "  chain prerouting {\n"
         "    type filter hook prerouting priority -200; policy accept;\n"
         "    iifname != " + port + " accept\n"
         "    iifname . ether saddr != @ports_mac drop\n"
         "    ether type ip iifname . ip saddr != @ports_ip drop\n"
         "    ether type arp iifname . arp saddr ether . arp saddr ip . arp daddr ip != "
         "@ports_arp drop\n"
         "    ether type != { ip, arp } drop\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority 0; policy accept;\n"
         "    iifname " + port + " drop\n"
         "  }\n"
         "}\n";
}

// The field types of each set and map of the tables above, as they declare them, for
// rendering elements (RenderElements). A set missing here renders as hex.
enum class Field { kIfname, kEther, kIpv4, kService, kProto };
struct SetType {
  const char* name;
  std::vector<Field> key;
  bool map;  // data: an inet_service
};
const std::vector<SetType>& SetTypes() {
  using F = Field;
  static const std::vector<SetType> types = {
      {"ports_mac", {F::kIfname, F::kEther}, false},
      {"ports_ip", {F::kIfname, F::kIpv4}, false},
      {"ports_arp", {F::kIfname, F::kEther, F::kIpv4, F::kIpv4}, false},
      {"redirect_tcp", {F::kIpv4, F::kService}, true},
      {"redirect_udp", {F::kIpv4, F::kService}, true},
      {"listeners", {F::kIpv4, F::kProto, F::kService}, false},
  };
  return types;
}

size_t FieldSize(Field f) { return f == Field::kIfname ? 16 : f == Field::kEther ? 8 : 4; }

// One field at `b` as nft prints it.
std::string RenderField(Field f, const unsigned char* b) {
  char out[64];
  switch (f) {
    case Field::kIfname: {
      const char* name = reinterpret_cast<const char*>(b);
      return "\"" + std::string(name, strnlen(name, 16)) + "\"";
    }
    case Field::kEther:
      snprintf(out, sizeof out, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
               b[5]);
      return out;
    case Field::kIpv4:
      snprintf(out, sizeof out, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
      return out;
    case Field::kService:
      return std::to_string(b[0] << 8 | b[1]);
    case Field::kProto:
      return b[0] == IPPROTO_TCP ? "tcp" : b[0] == IPPROTO_UDP ? "udp" : std::to_string(b[0]);
  }
  return "";
}

std::string Hex(const std::string& bytes) {
  std::string h = "0x";
  for (unsigned char c : bytes) {
    static const char kHex[] = "0123456789abcdef";
    h += kHex[c >> 4];
    h += kHex[c & 15];
  }
  return h;
}

// `key`, a concatenation of `fields` in the kernel's layout, as nft prints it; hex if it
// does not have their size.
std::string RenderKey(const std::vector<Field>& fields, const std::string& key) {
  size_t want = 0;
  for (Field f : fields) want += FieldSize(f);
  if (key.size() != want) return Hex(key);
  std::string out;
  const auto* b = reinterpret_cast<const unsigned char*>(key.data());
  for (Field f : fields) {
    out += (out.empty() ? "" : " . ") + RenderField(f, b);
    b += FieldSize(f);
  }
  return out;
}

}  // namespace

std::string BaseRules() { return InetTable() + BridgeTable(); }

std::vector<std::string> RenderElements(const SetElements& set) {
  const SetType* type = nullptr;
  for (const SetType& t : SetTypes()) {
    if (set.set == t.name) type = &t;
  }
  std::vector<std::string> out;
  for (const SetElements::Elem& e : set.elems) {
    std::string line = type ? RenderKey(type->key, e.key) : Hex(e.key);
    if (!e.data.empty()) {
      const auto* d = reinterpret_cast<const unsigned char*>(e.data.data());
      line += " : " + (type && type->map && e.data.size() == 2 ? std::to_string(d[0] << 8 | d[1])
                                                              : Hex(e.data));
    }
    out.push_back(std::move(line));
  }
  return out;
}

namespace {

// Whether this kernel updates an element's expiry, tried on an element of the listeners set
// no sandbox has (address 0.0.0.0, port 0). Older kernels keep the expiry an element was
// made with (or refuse the update, or the query): the probe's element is then deleted.
Result<bool> ExpiryUpdates() {
  SetElements probe{NFPROTO_INET,
                    "brig",
                    "listeners",
                    {{Ipv4Field(0) + ProtoField(IPPROTO_TCP) + PortField(0), ""}}};
  Status added = ApplyElements(ElementOp::kAdd, {probe}, kElementTimeoutMs);
  if (!added && added.error().err != EEXIST) return std::move(added).error();
  if (ApplyElements(ElementOp::kExpire, {probe}, kElementTimeoutMs)) {
    auto left = ElementExpiry(probe);
    if (left && *left && **left <= 1000) return true;
  }
  (void)ApplyElements(ElementOp::kDelete, {probe});
  return false;
}

constexpr char kExpireNote[] = "expire", kDeleteNote[] = "delete";

}  // namespace

Result<Removal> EnsureBaseRules(const std::string& note) {
  // A table that exists was made whole by a brig, in one transaction.
  std::optional<uint32_t> inet = BRIG_TRY(SetFlags(NFPROTO_INET, "brig", "redirect_tcp"));
  std::optional<uint32_t> bridge = BRIG_TRY(SetFlags(NFPROTO_BRIDGE, "brig", "ports_mac"));
  bool made = !inet || !bridge;
  if (!inet) {
    BRIG_TRY_CTX(RunNft(InetTable()), "inet table");
    inet = NFT_SET_TIMEOUT;
  }
  if (!bridge) {
    BRIG_TRY_CTX(RunNft(BridgeTable()), "bridge table");
    bridge = NFT_SET_TIMEOUT;
  }
  // An older brig's tables have no timeouts: their elements can only be deleted.
  if (!(*inet & *bridge & NFT_SET_TIMEOUT)) return Removal::kDelete;
  // The kernel's answer, noted when the tables were made (they go with a reboot).
  if (!made && !note.empty()) {
    auto noted = util::ReadFile(note);
    if (noted && *noted == kExpireNote) return Removal::kExpire;
    if (noted && *noted == kDeleteNote) return Removal::kDelete;
  }
  bool updates = BRIG_TRY_CTX(ExpiryUpdates(), "nftables probe");
  if (!note.empty()) {
    BRIG_TRY(util::WriteFileAtomic(note, updates ? kExpireNote : kDeleteNote, 0600));
  }
  return updates ? Removal::kExpire : Removal::kDelete;
}

std::vector<SetElements> PortElements(const PortRules& r, Ipv4 gateway) {
  const ListenerPorts& l = r.listeners;
  std::string port = IfnameField(r.port), mac = EtherField(r.mac.data());
  std::string a = Ipv4Field(r.addr.v);
  std::string tcp = ProtoField(IPPROTO_TCP), udp = ProtoField(IPPROTO_UDP);
  return {
      {NFPROTO_BRIDGE, "brig", "ports_mac", {{port + mac, ""}}},
      {NFPROTO_BRIDGE, "brig", "ports_ip", {{port + a, ""}}},
      {NFPROTO_BRIDGE, "brig", "ports_arp", {{port + mac + a + Ipv4Field(gateway.v), ""}}},
      {NFPROTO_INET, "brig", "redirect_tcp",
       {{a + PortField(80), PortData(l.http)},
        {a + PortField(443), PortData(l.https)},
        {a + PortField(53), PortData(l.dns_tcp)}}},
      {NFPROTO_INET, "brig", "redirect_udp", {{a + PortField(53), PortData(l.dns_udp)}}},
      {NFPROTO_INET, "brig", "listeners",
       {{a + tcp + PortField(l.http), ""},
        {a + tcp + PortField(l.https), ""},
        {a + tcp + PortField(l.dns_tcp), ""},
        {a + udp + PortField(l.dns_udp), ""}}},
  };
}

Status AddPortRules(const PortRules& r, Ipv4 gateway, Removal removal) {
  return ApplyElements(ElementOp::kAdd, PortElements(r, gateway),
                       removal == Removal::kExpire ? kElementTimeoutMs : 0);
}

Status RemovePortRules(const PortRules& r, Ipv4 gateway, Removal removal) {
  if (removal == Removal::kExpire) {
    return ApplyElements(ElementOp::kExpire, PortElements(r, gateway), kElementTimeoutMs);
  }
  return ApplyElements(ElementOp::kDelete, PortElements(r, gateway));
}

Result<bool> RemoveStalePortRules(const PortRules& r, Ipv4 gateway, uint16_t family) {
  // Some may be gone already (the tables were flushed, or a half-made sandbox): each
  // element on its own, what is missing passed over.
  bool any = false;
  for (auto& set : PortElements(r, gateway)) {
    if (family != 0 && set.family != family) continue;
    for (auto& e : set.elems) {
      SetElements one{set.family, set.table, set.set, {e}};
      auto s = ApplyElements(ElementOp::kDelete, {one});
      if (s) {
        any = true;
      } else if (s.error().err != ENOENT) {
        return std::move(s).error();
      }
    }
  }
  return any;
}

}  // namespace brig::net
