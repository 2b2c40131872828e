// Which network namespace brig runs in, and whether one named in brig's state still
// exists. A namespace is named by its nsfs inode number, which the kernel reuses once the
// namespace is gone, together with its cookie (SO_NETNS_COOKIE, NS_GET_ID), which it never
// reuses until reboot; /run, where brig keeps its state, does not outlive a boot either.
// Nothing here holds a namespace it finds; InNetns enters one for a while.
#pragma once

#include <sys/types.h>

#include <cstdint>
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

// Enters a network namespace for as long as it lives, then returns to the one brig was in:
// the sockets made meanwhile are that namespace's. Single-threaded callers only.
class InNetns {
 public:
  // The namespace of process `pid`.
  static Result<InNetns> Enter(pid_t pid);
  // The namespace `fd` (an nsfs descriptor) names; `what` is for messages.
  static Result<InNetns> EnterFd(int fd, const std::string& what);
  InNetns(InNetns&&) = default;
  // brig cannot go on in the other namespace: every later socket would be made there.
  ~InNetns();

 private:
  InNetns() = default;
  sys::UniqueFd home_;
};

}  // namespace brig::net
