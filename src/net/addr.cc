#include "net/addr.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "util/files.h"
#include "util/slots.h"

namespace brig::net {

Lease::Lease(Lease&& o) noexcept
    : addr_(o.addr_),
      path_(std::exchange(o.path_, {})),
      previous_(std::move(o.previous_)),
      fd_(std::move(o.fd_)) {}

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Release();
    addr_ = o.addr_;
    path_ = std::exchange(o.path_, {});
    previous_ = std::move(o.previous_);
    fd_ = std::move(o.fd_);
  }
  return *this;
}

Result<Lease> Lease::Take(const std::string& dir, const Subnet& subnet) {
  uint32_t hosts = subnet.Size() - 3;  // not the network, the gateway or the broadcast
  uint32_t start = 0;
  if (getrandom(&start, sizeof start, 0) != sizeof start) start = static_cast<uint32_t>(getpid());
  for (uint32_t i = 0; i < hosts; ++i) {
    Ipv4 a{subnet.network.v + 2 + (start + i) % hosts};
    std::string path = dir + "/" + a.Str();
    auto fd = util::LockHeld(path, true);
    if (!fd) {
      if (fd.error().err == EWOULDBLOCK) continue;
      return std::move(fd).error();
    }
    Lease l;
    l.addr_ = a;
    l.path_ = path;
    l.fd_ = std::move(*fd);
    auto prev = util::ReadFd(l.fd_.get(), 0);
    if (prev) l.previous_ = *prev;
    return l;
  }
  return Fail("address", subnet.Str(), "every address of the subnet is in use");
}

Result<sys::UniqueFd> TakePortSlot(const std::string& dir, const std::string& bridge) {
  BRIG_TRY(util::MakeDirs(dir));
  std::optional<util::Slot> slot = BRIG_TRY(util::TakeSlot(dir, 0, kBridgePorts));
  if (slot) return std::move(slot->fd);
  return Fail("add a port to", bridge,
              std::to_string(kBridgePorts) +
                  " sandboxes with a network interface are running in this network namespace,"
                  " the most a bridge has ports for");
}

Status Lease::Note(const std::string& text) {
  // Written, then cut to its length: never truncated to 0 first, which on ext4 (a /run that
  // is no tmpfs) makes close flush the file, and removing it at the end of the run then
  // waits for that write and for a synchronous discard of its block.
  if (pwrite(fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return SysError("write", path_);
  }
  if (ftruncate(fd_.get(), static_cast<off_t>(text.size())) < 0) return SysError("truncate", path_);
  return {};
}

void Lease::Abandon() {
  path_.clear();
  fd_.Reset();
}

void Lease::Release() {
  if (path_.empty()) return;
  (void)unlink(path_.c_str());
  path_.clear();
  fd_.Reset();
}

Result<sys::UniqueFd> LockLease(const std::string& path) { return util::LockHeld(path, true); }

}  // namespace brig::net
