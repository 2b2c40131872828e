#include "net/nft_batch.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace brig::net {
namespace {

struct MnlClose {
  void operator()(mnl_socket* s) const { mnl_socket_close(s); }
};
struct SetFree {
  void operator()(nftnl_set* s) const { nftnl_set_free(s); }
};
struct BatchStop {
  void operator()(mnl_nlmsg_batch* b) const { mnl_nlmsg_batch_stop(b); }
};
using Socket = std::unique_ptr<mnl_socket, MnlClose>;

// One socket for the process's life: closing a netfilter netlink socket waits for the
// kernel to finish destroying the last transaction (an RCU grace period, ~10 ms here),
// so brig pays that once, at exit, not after every batch.
Result<mnl_socket*> Shared() {
  static mnl_socket* nl = nullptr;
  if (nl) return nl;
  Socket s(mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC));
  if (!s) return SysError("socket", "netlink netfilter");
  if (mnl_socket_bind(s.get(), 0, MNL_SOCKET_AUTOPID) < 0) return SysError("bind", "netlink");
  // An answer the kernel never sends must not hang the supervisor.
  struct timeval tv = {5, 0};
  (void)setsockopt(mnl_socket_get_fd(s.get()), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  nl = s.release();
  return nl;
}

// Reads acks for sequence numbers [first, last]; the first error wins.
Status ReadAcks(mnl_socket* nl, uint32_t first, uint32_t last, const std::string& what) {
  uint32_t port = mnl_socket_get_portid(nl);
  char buf[MNL_SOCKET_BUFFER_SIZE];
  uint32_t pending = last - first + 1;
  int err = 0;
  while (pending > 0) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0) return SysError("recv", "netlink netfilter");
    for (auto* nlh = reinterpret_cast<nlmsghdr*>(buf); mnl_nlmsg_ok(nlh, static_cast<int>(n));
         nlh = mnl_nlmsg_next(nlh, reinterpret_cast<int*>(&n))) {
      if (nlh->nlmsg_pid != port || nlh->nlmsg_seq < first || nlh->nlmsg_seq > last) continue;
      if (nlh->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        if (e->error != 0 && err == 0) err = -e->error;
        --pending;
      }
    }
    // An error aborts the batch: the kernel acks the failing message only.
    if (err != 0) break;
  }
  if (err != 0) {
    errno = err;
    return SysError("nftables", what);
  }
  return {};
}

}  // namespace

std::string IfnameField(const std::string& name) {
  std::string f(IFNAMSIZ, '\0');
  memcpy(f.data(), name.data(), std::min(name.size(), size_t{IFNAMSIZ - 1}));
  return f;
}

std::string EtherField(const uint8_t mac[6]) {
  std::string f(8, '\0');
  memcpy(f.data(), mac, 6);
  return f;
}

std::string Ipv4Field(uint32_t host_order) {
  uint32_t be = htonl(host_order);
  return std::string(reinterpret_cast<const char*>(&be), 4);
}

std::string PortField(uint16_t port) { return PortData(port) + std::string(2, '\0'); }

std::string ProtoField(uint8_t proto) {
  std::string f(4, '\0');
  f[0] = static_cast<char>(proto);
  return f;
}

std::string PortData(uint16_t port) {
  uint16_t be = htons(port);
  return std::string(reinterpret_cast<const char*>(&be), 2);
}

Status ApplyElements(bool add, const std::vector<SetElements>& sets) {
  mnl_socket* nl = BRIG_TRY(Shared());
  std::vector<char> buf(2 * MNL_SOCKET_BUFFER_SIZE);
  std::unique_ptr<mnl_nlmsg_batch, BatchStop> batch(
      mnl_nlmsg_batch_start(buf.data(), MNL_SOCKET_BUFFER_SIZE));
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), seq++);
  mnl_nlmsg_batch_next(batch.get());
  uint32_t first = seq;
  for (const auto& s : sets) {
    std::unique_ptr<nftnl_set, SetFree> set(nftnl_set_alloc());
    if (!set) return Fail("nftables", s.set, "out of memory");
    nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, s.table.c_str());
    nftnl_set_set_str(set.get(), NFTNL_SET_NAME, s.set.c_str());
    for (const auto& e : s.elems) {
      nftnl_set_elem* el = nftnl_set_elem_alloc();
      if (!el) return Fail("nftables", s.set, "out of memory");
      nftnl_set_elem_set(el, NFTNL_SET_ELEM_KEY, e.key.data(), static_cast<uint32_t>(e.key.size()));
      if (!e.data.empty()) {
        nftnl_set_elem_set(el, NFTNL_SET_ELEM_DATA, e.data.data(),
                           static_cast<uint32_t>(e.data.size()));
      }
      nftnl_set_elem_add(set.get(), el);
    }
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(
        static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
        add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM, s.family,
        static_cast<uint16_t>((add ? NLM_F_CREATE | NLM_F_EXCL : 0) | NLM_F_ACK), seq++);
    nftnl_set_elems_nlmsg_build_payload(nlh, set.get());
    if (!mnl_nlmsg_batch_next(batch.get())) {
      return Fail("nftables", s.set, "batch too large", ErrorKind::kInternal);
    }
  }
  uint32_t last = seq - 1;
  nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), seq++);
  mnl_nlmsg_batch_next(batch.get());
  if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(batch.get()),
                        mnl_nlmsg_batch_size(batch.get())) < 0) {
    return SysError("send", "netlink netfilter");
  }
  return ReadAcks(nl, first, last,
                  std::string(add ? "add" : "delete") + " elements of " +
                      (sets.empty() ? std::string() : sets[0].set));
}

Result<bool> TableExists(uint16_t family, const std::string& name) {
  mnl_socket* nl = BRIG_TRY(Shared());
  char buf[MNL_SOCKET_BUFFER_SIZE];
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, family, NLM_F_ACK, seq);
  mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, name.c_str());
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) return SysError("send", "netlink");
  uint32_t port = mnl_socket_get_portid(nl);
  bool found = false;
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0) return SysError("recv", "netlink netfilter");
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); mnl_nlmsg_ok(h, static_cast<int>(n));
         h = mnl_nlmsg_next(h, reinterpret_cast<int*>(&n))) {
      if (h->nlmsg_pid != port || h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        int e = -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(h))->error;
        if (e == 0) return found;
        if (e == ENOENT) return false;
        errno = e;
        return SysError("nftables", "get table " + name);
      }
      found = true;
    }
  }
}

}  // namespace brig::net
