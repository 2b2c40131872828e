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
#include <functional>
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
// kernel to finish destroying what its transactions deleted (an RCU grace period, ~10 ms
// here), so a brig that deletes elements pays that once, at exit, not after every batch;
// one that only adds and expires them (nft.h's Removal) pays nothing.
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

// The first request of a batch the kernel refused, by offset from the batch's first
// sequence number, and why; err 0 if it refused none.
struct Refusal {
  uint32_t at = 0;
  int err = 0;
};

// Reads the answers to requests [first, last] until each is acked or one is refused (which
// aborts a batch: the kernel acks only the failing message); `each`, if given, sees every
// message of them that is not an ack.
Result<Refusal> ReadAnswers(mnl_socket* nl, uint32_t first, uint32_t last,
                            const std::function<void(const nlmsghdr*)>& each = {}) {
  uint32_t port = mnl_socket_get_portid(nl);
  char buf[MNL_SOCKET_BUFFER_SIZE];
  uint32_t pending = last - first + 1;
  while (pending > 0) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0) return SysError("recv", "netlink netfilter");
    for (auto* nlh = reinterpret_cast<nlmsghdr*>(buf); mnl_nlmsg_ok(nlh, static_cast<int>(n));
         nlh = mnl_nlmsg_next(nlh, reinterpret_cast<int*>(&n))) {
      if (nlh->nlmsg_pid != port || nlh->nlmsg_seq < first || nlh->nlmsg_seq > last) continue;
      if (nlh->nlmsg_type != NLMSG_ERROR) {
        if (each) each(nlh);
        continue;
      }
      int err = -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(nlh))->error;
      if (err != 0) return Refusal{nlh->nlmsg_seq - first, err};
      --pending;
    }
  }
  return Refusal{};
}

// Sends request `req` on the shared socket and calls `each` for every message of its answer.
// Returns the ack's error number, 0 for none.
Result<int> Query(nlmsghdr* req, const std::function<void(const nlmsghdr*)>& each) {
  mnl_socket* nl = BRIG_TRY(Shared());
  if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0) return SysError("send", "netlink");
  Refusal r = BRIG_TRY(ReadAnswers(nl, req->nlmsg_seq, req->nlmsg_seq, each));
  return r.err;
}

// `s` as libnftnl's set (its table, its name, its elements' keys and data), each element
// given `timeout_ms` if not 0 and, with `expire`, an expiry 1 ms ahead. Null if out of
// memory.
std::unique_ptr<nftnl_set, SetFree> NewSet(const SetElements& s, uint64_t timeout_ms = 0,
                                           bool expire = false) {
  std::unique_ptr<nftnl_set, SetFree> set(nftnl_set_alloc());
  if (!set) return set;
  nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, s.table.c_str());
  nftnl_set_set_str(set.get(), NFTNL_SET_NAME, s.set.c_str());
  for (const auto& e : s.elems) {
    nftnl_set_elem* el = nftnl_set_elem_alloc();
    if (!el) return nullptr;
    nftnl_set_elem_set(el, NFTNL_SET_ELEM_KEY, e.key.data(), static_cast<uint32_t>(e.key.size()));
    if (!e.data.empty()) {
      nftnl_set_elem_set(el, NFTNL_SET_ELEM_DATA, e.data.data(),
                         static_cast<uint32_t>(e.data.size()));
    }
    if (timeout_ms != 0) nftnl_set_elem_set_u64(el, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
    if (expire) nftnl_set_elem_set_u64(el, NFTNL_SET_ELEM_EXPIRATION, 1);
    nftnl_set_elem_add(set.get(), el);
  }
  return set;
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

Status ApplyElements(ElementOp op, const std::vector<SetElements>& sets, uint64_t timeout_ms) {
  if (sets.empty()) return {};
  mnl_socket* nl = BRIG_TRY(Shared());
  std::vector<char> buf(2 * MNL_SOCKET_BUFFER_SIZE);
  std::unique_ptr<mnl_nlmsg_batch, BatchStop> batch(
      mnl_nlmsg_batch_start(buf.data(), MNL_SOCKET_BUFFER_SIZE));
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), seq++);
  mnl_nlmsg_batch_next(batch.get());
  uint32_t first = seq;
  // An update is a "new" message without NLM_F_EXCL.
  uint16_t type = op == ElementOp::kDelete ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM;
  uint16_t flags = op == ElementOp::kAdd      ? NLM_F_CREATE | NLM_F_EXCL
                   : op == ElementOp::kExpire ? NLM_F_CREATE
                                              : 0;
  for (const auto& s : sets) {
    auto set = NewSet(s, op == ElementOp::kDelete ? 0 : timeout_ms, op == ElementOp::kExpire);
    if (!set) return Fail("nftables", s.set, "out of memory");
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                                          type, s.family, flags | NLM_F_ACK, seq++);
    nftnl_set_elems_nlmsg_build_payload(nlh, set.get());
    if (!mnl_nlmsg_batch_next(batch.get())) {
      return Fail("nftables", s.set, "batch too large", ErrorKind::kInternal);
    }
  }
  nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), seq++);
  mnl_nlmsg_batch_next(batch.get());
  if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(batch.get()),
                        mnl_nlmsg_batch_size(batch.get())) < 0) {
    return SysError("send", "netlink netfilter");
  }
  Refusal r = BRIG_TRY(ReadAnswers(nl, first, first + sets.size() - 1));
  if (r.err == 0) return {};
  const char* verb = op == ElementOp::kAdd ? "add" : op == ElementOp::kExpire ? "expire" : "delete";
  errno = r.err;
  return SysError("nftables", std::string(verb) + " elements of " + sets[r.at].set);
}

Result<std::optional<uint32_t>> SetFlags(uint16_t family, const std::string& table,
                                         const std::string& set) {
  auto s = NewSet({family, table, set, {}});
  if (!s) return Fail("nftables", set, "out of memory");
  char buf[MNL_SOCKET_BUFFER_SIZE];
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, family, NLM_F_ACK, seq);
  nftnl_set_nlmsg_build_payload(nlh, s.get());
  std::optional<uint32_t> flags;
  int err = BRIG_TRY(Query(nlh, [&](const nlmsghdr* h) {
    std::unique_ptr<nftnl_set, SetFree> got(nftnl_set_alloc());
    if (got && nftnl_set_nlmsg_parse(h, got.get()) >= 0) {
      flags = nftnl_set_is_set(got.get(), NFTNL_SET_FLAGS)
                  ? nftnl_set_get_u32(got.get(), NFTNL_SET_FLAGS)
                  : 0;
    }
  }));
  if (err == ENOENT) return std::optional<uint32_t>();
  if (err != 0) {
    errno = err;
    return SysError("nftables", "get set " + table + " " + set);
  }
  return flags;
}

Result<std::optional<uint64_t>> ElementExpiry(const SetElements& one) {
  auto s = NewSet(one);
  if (!s || one.elems.size() != 1) {
    return Fail("nftables", one.set, "cannot build an element query", ErrorKind::kInternal);
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, one.family, NLM_F_ACK, seq);
  nftnl_set_elems_nlmsg_build_payload(nlh, s.get());
  std::optional<uint64_t> expiry;
  int err = BRIG_TRY(Query(nlh, [&](const nlmsghdr* h) {
    std::unique_ptr<nftnl_set, SetFree> got(nftnl_set_alloc());
    if (!got || nftnl_set_elems_nlmsg_parse(h, got.get()) < 0) return;
    nftnl_set_elem_foreach(
        got.get(),
        [](nftnl_set_elem* e, void* out) {
          if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_EXPIRATION)) {
            *static_cast<std::optional<uint64_t>*>(out) =
                nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_EXPIRATION);
          }
          return 0;
        },
        &expiry);
  }));
  if (err == ENOENT) return std::optional<uint64_t>(0);
  if (err != 0) {
    errno = err;
    return SysError("nftables", "get an element of " + one.set);
  }
  return expiry;
}

}  // namespace brig::net
