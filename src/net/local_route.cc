#include "net/local_route.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include <cerrno>

namespace brig::net {

void LocalRoutes::Close::operator()(mnl_socket* s) const { mnl_socket_close(s); }

LocalRoutes::~LocalRoutes() = default;

Result<LocalRoutes> LocalRoutes::Open() {
  LocalRoutes r;
  r.nl_.reset(mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC));
  if (!r.nl_) return SysError("socket", "netlink route");
  if (mnl_socket_bind(r.nl_.get(), 0, MNL_SOCKET_AUTOPID) < 0) {
    return SysError("bind", "netlink route");
  }
  r.changes_.reset(mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!r.changes_) return SysError("socket", "netlink route");
  // Not links: sandboxes come and go as links all the time, and a link's state does not
  // make its addresses' local routes come or go (they outlive it being down).
  unsigned groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV4_RULE;
  if (mnl_socket_bind(r.changes_.get(), groups, MNL_SOCKET_AUTOPID) < 0) {
    return SysError("bind", "netlink route notices");
  }
  return r;
}

void LocalRoutes::Forget() {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (;;) {
    ssize_t n = recv(mnl_socket_get_fd(changes_.get()), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // A notice, or notices lost (ENOBUFS), or anything else: nothing kept can be trusted.
    known_.clear();
    if (n < 0 && errno != ENOBUFS && errno != EINTR) return;
  }
}

Result<bool> LocalRoutes::IsLocal(Ipv4 addr) {
  Forget();
  if (auto it = known_.find(addr.v); it != known_.end()) return it->second;
  bool local = BRIG_TRY(Ask(addr));
  // Bounded: a sandbox resolves at most its name pool's worth of addresses, but a proxy
  // may be asked for more.
  if (known_.size() >= 4096) known_.clear();
  known_[addr.v] = local;
  return local;
}

Result<bool> LocalRoutes::Ask(Ipv4 addr) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* req = mnl_nlmsg_put_header(buf);
  req->nlmsg_type = RTM_GETROUTE;
  req->nlmsg_flags = NLM_F_REQUEST;
  req->nlmsg_seq = ++seq_;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(req, sizeof(rtmsg)));
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = 32;
  mnl_attr_put_u32(req, RTA_DST, htonl(addr.v));
  if (mnl_socket_sendto(nl_.get(), req, req->nlmsg_len) < 0) {
    return SysError("route lookup", addr.Str());
  }
  uint32_t port = mnl_socket_get_portid(nl_.get());
  // The answer is queued before sendto returns; a read that would wait means there is none.
  for (;;) {
    ssize_t n = recv(mnl_socket_get_fd(nl_.get()), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) return SysError("route lookup", addr.Str());
    int left = static_cast<int>(n);
    for (auto* nlh = reinterpret_cast<nlmsghdr*>(buf); mnl_nlmsg_ok(nlh, left);
         nlh = mnl_nlmsg_next(nlh, &left)) {
      // An answer to an earlier lookup that failed half-way is passed over.
      if (nlh->nlmsg_pid != port || nlh->nlmsg_seq != seq_) continue;
      if (nlh->nlmsg_type == NLMSG_ERROR) {
        int err = -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(nlh))->error;
        if (err == ENETUNREACH || err == EHOSTUNREACH) return false;
        errno = err;
        return SysError("route lookup", addr.Str());
      }
      if (nlh->nlmsg_type != RTM_NEWROUTE) continue;
      auto* got = static_cast<rtmsg*>(mnl_nlmsg_get_payload(nlh));
      return got->rtm_type == RTN_LOCAL || got->rtm_type == RTN_BROADCAST ||
             got->rtm_type == RTN_ANYCAST;
    }
  }
}

}  // namespace brig::net
