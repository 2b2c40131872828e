// Which network namespace brig runs in, and whether one named in brig's state still
// exists. A namespace is named by its nsfs inode number, which the kernel reuses once the
// namespace is gone, together with its cookie (SO_NETNS_COOKIE, NS_GET_ID), which it never
// reuses until reboot; /run, where brig keeps its state, does not outlive a boot either.
// Nothing here holds a namespace it finds; InNetns enters one for a while.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"

namespace brig::net {

struct NetnsKey {
  uint64_t ino = 0;
  uint64_t cookie = 0;  // 0: unknown (a kernel without cookies, a record of an older brig)
  // The same namespace, as far as both keys can tell.
  bool Matches(const NetnsKey& o) const {
    return ino == o.ino && (cookie == 0 || o.cookie == 0 || cookie == o.cookie);
  }
};

// This thread's network namespace.
Result<NetnsKey> CurrentNetns();

// Which of `keys` no longer exist: no process or thread is in them, and no descriptor or
// mount (in any mount namespace) holds them. A namespace only a socket still holds counts
// as gone: no one can enter it to clean up, and what is in it goes with it. Reads /proc;
// costs a walk of every process's descriptors when some key is not found earlier, so it is
// only asked about keys of namespaces that brig's own state names and that are not this
// one.
std::vector<NetnsKey> GoneOf(const std::vector<NetnsKey>& keys);

// Runs `fn` on a thread of its own in the network namespace `fd` names (an nsfs
// descriptor; `what` is for messages) and waits for it: the sockets `fn` makes are that
// namespace's, and no thread of brig's ever has to come back. (An ordinary user's brig
// could not: entering the host's namespace takes privilege over it.)
Status InNetns(int fd, const std::string& what, const std::function<Status()>& fn);

}  // namespace brig::net
