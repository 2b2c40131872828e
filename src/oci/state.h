// The state of OCI containers that survives brig's exit (runtime.md "State"): under --root
// (default /run/brig/oci) one directory per container, made atomically by `create`, held
// under an exclusive flock by every verb that acts on it, with the record state.pb
// (proto/oci.proto Container in protobuf's binary encoding: every verb reads it, and
// parsing it as JSON cost a verb milliseconds) written by tmp + rename (util::ReplaceFile: a reader never
// sees half of it; a reboot ends the container anyway, so it is not flushed to disk). A
// container's status is not stored but read from the host each time: its process (the pid
// and the start time the record names, so a reused pid is not it), whether `start` let it
// go, and its freezer.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "proto/oci.pb.h"
#include "sys/fd.h"
#include "util/dirs.h"

namespace brig::oci {

inline std::string DefaultRoot() { return util::RunDir() + "/oci"; }
inline constexpr char kExecFifo[] = "exec.fifo";
// The longest a verb waits for another that holds the container's directory.
inline constexpr std::chrono::seconds kLockWait{10};

// A container id as runc takes it: [A-Za-z0-9_+.-]+, at most 1024 bytes, not "." or "..".
Status CheckId(std::string_view id);

enum class ContainerStatus { kCreating, kCreated, kRunning, kPaused, kStopped };
std::string_view StatusName(ContainerStatus s);

// One container's directory, locked for as long as this object lives.
class ContainerDir {
 public:
  ContainerDir() = default;
  ContainerDir(ContainerDir&& o) noexcept
      : path_(std::move(o.path_)), fd_(std::move(o.fd_)), made_(std::exchange(o.made_, false)) {}
  ContainerDir& operator=(ContainerDir&& o) noexcept {
    if (this != &o) {
      if (made_) (void)Remove();
      path_ = std::move(o.path_);
      fd_ = std::move(o.fd_);
      made_ = std::exchange(o.made_, false);
    }
    return *this;
  }
  ~ContainerDir() {
    if (made_) (void)Remove();
  }

  // Makes ROOT/ID (ROOT is made 0711 if missing); an existing one is refused: "container
  // 'ID' already exists". Until Keep(), it is removed again when this object goes: a create
  // that fails leaves nothing.
  static Result<ContainerDir> Create(const std::string& root, const std::string& id);
  void Keep() { made_ = false; }
  // Opens and locks ROOT/ID, waiting for a verb that holds it, at most kLockWait (then the
  // error names the holder); a missing one is refused: "container 'ID' does not exist".
  static Result<ContainerDir> Open(const std::string& root, const std::string& id);
  // The record of ROOT/ID as it is now, without the lock (written by rename, it is never
  // seen half-written): for `delete --force` when the lock is not to be had.
  static Result<Container> Peek(const std::string& root, const std::string& id);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  std::string Path(std::string_view name) const { return path_ + "/" + std::string(name); }

  Result<Container> Read() const;
  Status Write(const Container& c) const;
  // Removes the directory and everything in it; the object is then empty.
  Status Remove();

 private:
  std::string path_;
  sys::UniqueFd fd_;  // the directory, O_DIRECTORY, flock'ed
  bool made_ = false;  // by Create, and not kept yet
};

// The ids of the containers under `root`, sorted; none if it does not exist.
Result<std::vector<std::string>> ListIds(const std::string& root);

// A pidfd of the container's process if it is still the process the record names (same
// start time); nullopt once it is gone (or was never started).
std::optional<sys::UniqueFd> OpenProcess(const Container& c);

// The status as the host shows it now. `frozen`: whether its cgroup is frozen (cgroup/groups.h);
// a running container whose cgroup is frozen is paused.
ContainerStatus StatusOf(const Container& c, bool frozen);

// The runtime-spec state of `c`, and as JSON, one object (`brig state`).
State StateOf(const Container& c, ContainerStatus status);
std::string StateJson(const Container& c, ContainerStatus status);

}  // namespace brig::oci
