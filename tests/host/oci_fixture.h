// Fixture for the OCI runtime's host tests (oci_test.cc): the runtime under test
// (BRIG_OCI_RUNTIME, e.g. runc, else brig), bundles made of the host's static busybox and a
// config.json the test writes, the runtime run as a shim runs it, and the host's view of
// what a container is and leaves (processes, cgroups). Each test has its own --root and a
// cgroup parent of its own; after it, nothing of either is left.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host/host_fixture.h"
#include "sys/fd.h"

namespace brig::testing::oci {

inline constexpr char kBusybox[] = "/bin/busybox";

std::string RuntimeBinary();
// Whether the runtime under test is brig: the assertions only brig promises run then.
bool IsBrig();

struct MountSpec {
  std::string destination, type, source;
  std::vector<std::string> options;
  // Not 0: id-mapped, uidMappings and gidMappings ids 0..65535 to idmap_to.., as
  // containerd 2 writes a user-namespaced pod's volumes.
  uint32_t idmap_to = 0;
};

struct Rlimit {
  std::string type;
  uint64_t hard, soft;
};

// A typical config.json (runc spec's, without a terminal), with a knob for what a test
// changes.
struct Config {
  Config();
  std::string Json() const;
  // The process object alone, as `brig exec --process` reads it.
  std::string ProcessJson() const;

  bool has_process = true;
  bool terminal = false;
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> additional_gids;
  std::vector<std::string> args = {"sleep", "1000000"};  // empty: no "args" at all
  std::vector<std::string> env;
  std::string cwd = "/";
  std::vector<std::string> bounding, effective, inheritable, permitted, ambient;
  std::vector<Rlimit> rlimits = {{"RLIMIT_NOFILE", 1024, 1024}};
  bool no_new_privileges = true;
  std::string root_path = "rootfs";
  bool readonly = true;
  std::string hostname = "oci-test";
  std::vector<MountSpec> mounts;
  // "TYPE", or "TYPE=PATH" for one joined by path.
  std::vector<std::string> namespaces = {"pid", "ipc", "uts", "mount", "network", "cgroup"};
  std::vector<std::string> masked, readonly_paths;
  std::string cgroups_path;
  std::string resources_json;  // linux.resources as a JSON object; empty: none
  std::string seccomp_json;    // linux.seccomp as a JSON object; empty: none
  std::string hooks_json;      // hooks as a JSON object; empty: none
  std::map<std::string, std::string> sysctl;
  std::map<std::string, std::string> annotations;
  uint32_t map_to = 0;  // with a "user" namespace: ids 0..65535 map to map_to..
};

// `brig state`'s JSON, as far as the tests read it.
struct State {
  bool ok = false;  // the verb succeeded and printed a JSON object
  std::string status, id, bundle, raw;
  pid_t pid = 0;
};
State ParseState(const std::string& json);

// ---- the host's view

std::vector<std::string> ListDir(const std::string& dir);  // sorted, without . and ..
bool Exists(const std::string& path);
std::vector<std::string> Lines(const std::string& text);
std::string Trim(std::string s);
// "key=value" or "Key:\tvalue" lines as a map; runs of blanks in values become one space.
std::map<std::string, std::string> Fields(const std::string& text);

// /proc/PID/stat: the state letter and the parent; {0, 0} if there is no such process.
std::pair<char, pid_t> StatOf(pid_t pid);
bool Alive(pid_t pid);  // exists and is not a zombie
std::string Comm(pid_t pid);
std::string NsOf(pid_t pid, const std::string& name);  // readlink /proc/PID/ns/NAME
// Reaps the test's children that have exited: a container's processes are, once their
// runtime exited (the test is a subreaper), and a shim reaps them so.
void ReapExited();
// Waits until `pid` has exited, reaping what exits meanwhile.
bool AwaitGone(pid_t pid);

// The cgroup hierarchies mounted on the host.
struct CgroupMount {
  std::string point;
  bool v2 = false;
  std::set<std::string> controllers;  // v1: the mount's options; v2: cgroup.controllers
};
std::vector<CgroupMount> CgroupMounts();
// The directory of cgroup `path` (absolute) in the hierarchy that holds `controller`
// (a v1 one bound to it, else the unified one if it is enabled there); empty if none.
std::string ControllerDir(const std::string& controller, const std::string& path);
// The lines of /proc/PID/cgroup whose group is not `path`, but for named v1 hierarchies
// (name=systemd), which no runtime manages: empty when `pid` is in every group at `path`.
std::string GroupsNotAt(pid_t pid, const std::string& path);

// The host's device nodes that a container's /dev binds or mirrors (/dev/null, zero, full,
// random, urandom, tty), each as "PATH UID:GID mode M ctime S.N": a chown, chmod or
// relabel of one changes its line.
std::vector<std::string> HostDevices();

// A unix socket the runtime connects to with --console-socket.
class ConsoleSocket {
 public:
  explicit ConsoleSocket(const std::string& path);
  bool ok() const { return listener_.valid(); }
  // The fd the runtime sent over its connection (SCM_RIGHTS); empty if none came.
  sys::UniqueFd ReceiveFd();

 private:
  sys::UniqueFd listener_;
};

// Reads `fd` until `needle` shows up in what was read, or it ends; returns what was read.
std::string ReadUntil(int fd, const std::string& needle);

class Oci : public HostTest {
 protected:
  void SetUp() override;
  // No container under --root, no process the test started, no cgroup under its parent
  // (which then goes); HostTest checks the mounts under the scratch dirs.
  void TearDown() override;

  std::string CgroupPath(const std::string& id) const { return parent_ + "/" + id; }
  // The typical config for container `id`, in its own cgroup under the test's parent.
  Config Cfg(const std::string& id) const;
  // A bundle directory `name` with a busybox rootfs and `c` as its config.json.
  std::string Bundle(const Config& c, const std::string& name = "bundle");

  // The runtime with --root, in a session of its own, stdin /dev/null, stdout and stderr
  // in files, which a container it makes inherits (create, run --detach, exec --detach),
  // so no pipe stays open. Returns once the runtime exits, with what the files held then,
  // reaping meanwhile whatever else of the test's children exits, as a shim does: a pid
  // namespace's init ends only once the zombies in it are reaped, and the runtime may wait
  // for that. `fd7`: also passed to the runtime as fd 7, not close-on-exec. `cwd`: the
  // runtime's current directory, if not the test's.
  RunOutput Run(const std::vector<std::string>& args, int fd7 = -1, const std::string& cwd = "");
  State StateOf(const std::string& id);

  // Creates container `id` and returns its pid from --pid-file (0 if none).
  pid_t CreateFrom(const std::string& bundle, const std::string& id,
                   const std::vector<std::string>& extra = {});
  pid_t Create(const Config& c, const std::string& id, const std::vector<std::string>& extra = {}) {
    return CreateFrom(Bundle(c, id), id, extra);
  }
  // Created, started, and running its command (comm `comm`).
  pid_t CreateAndStart(const Config& c, const std::string& id, const std::string& comm);

  // The directory of container `id`'s cgroup in every hierarchy that has one.
  std::vector<std::string> GroupsOf(const std::string& id) const;
  // Processes descending from the test, but the test itself.
  static std::vector<pid_t> LiveDescendants();
  // A failed create: one line on stderr, nothing under --root, no cgroup, no process.
  void ExpectCleanFailure(const RunOutput& r, const std::string& id);

  ScratchDir scratch_;
  std::string root_, parent_;
  std::vector<std::string> devices_;  // HostDevices() before the test

 private:
  int calls_ = 0;
};

}  // namespace brig::testing::oci
