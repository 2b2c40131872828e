// Fixture for the host tier: skips without root and namespaces, and fails a test that
// leaves anything behind on the host (mounts, brig-init processes, cgroups, records; only
// what the test itself could have made: see Residue in testlib.h).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sys/fd.h"
#include "testlib/testlib.h"

// Not brig.pb.h here: tests that include libseccomp's header, whose macros are named as
// the policy's enum values, include this one too.
namespace brig::v1 {
class AuditEvent;
}

namespace brig::testing {

// The host tests' own profile with a read-write workspace (tests/host/profiles/).
inline std::string RwProfile() {
  return SourceRoot() + "/tests/host/profiles/workspace-rw.textproto";
}

// The events of a JSON-lines audit log (--audit-log), each line checked to parse.
std::vector<v1::AuditEvent> ReadAuditEvents(const std::string& path);

// Whether this kernel updates a set element's expiry (net/nft.h's Removal::kExpire), tried
// with nft in a network namespace of its own: older kernels keep the one it was made with.
bool KernelUpdatesElementExpiry();

// Whether the file system under `dir` takes an id-mapped mount, tried as brig makes one
// (fs::IdMapper): overlayfs (the vm tier's root), 9p and tmpfs before Linux 6.3 do not.
bool IdMappable(const std::string& dir);

// What a host process keeps in a directory a sandbox sees: a unix socket it listens on at
// `dir`/`socket` and a FIFO it reads at `dir`/`fifo`, both open to everyone (0777, 0666),
// as an agent's socket or a dev server's control pipe is. Whether anything from inside
// reached them is asked after the run.
class HostIpc {
 public:
  HostIpc(const std::string& dir, const std::string& socket, const std::string& fifo);
  bool ok() const { return listener_ && reader_; }
  // A connection from inside reached the socket.
  bool Connected();
  // A byte from inside reached the FIFO.
  bool Written();

 private:
  sys::UniqueFd listener_, reader_;
};

// What a change of ids makes a process is the kernel's fs.suid_dumpable: 0 (a usual
// host's) not dumpable, 1 (a host set up for debugging) dumpable. Setting it changes the
// whole kernel, so a test tries 1 only where the kernel is its own (tools/vmtest sets
// BRIG_OWN_KERNEL=1). The settings to try: "" (as the kernel has it), then "1" there.
std::vector<std::string> SuidDumpableSettings();
// Sets fs.suid_dumpable to `value` ("" leaves it) until this goes; `ok()` says it took.
class ScopedSuidDumpable {
 public:
  explicit ScopedSuidDumpable(const std::string& value);
  ~ScopedSuidDumpable();
  bool ok() const { return ok_; }

 private:
  std::string was_;
  bool ok_ = true;
};

// An ordinary user to run brig as (brig without root, issue 31): a uid that no account and
// no process has, with an XDG_RUNTIME_DIR of its own under /run (a tmpfs, as /run/user/UID
// is: records are made there with O_TMPFILE, which the vm tier's /tmp does not take).
// Nothing of the host's (/etc/passwd, /etc/subuid) is changed.
class OrdinaryUser {
 public:
  OrdinaryUser() = default;
  ~OrdinaryUser();
  OrdinaryUser(const OrdinaryUser&) = delete;
  OrdinaryUser& operator=(const OrdinaryUser&) = delete;
  // Picks the uid and makes the runtime directory. Empty on success, else why this host
  // cannot run brig as an ordinary user (for GTEST_SKIP), or what failed.
  std::string Make();
  uid_t uid() const { return uid_; }
  const std::string& runtime() const { return runtime_; }
  // The start of a command run as the user: setpriv (its uid and gid, supplementary groups
  // as `groups` says to setpriv), then env -i with PATH, HOME=`home` and, with `xdg`,
  // XDG_RUNTIME_DIR.
  std::vector<std::string> Prefix(const std::string& home, bool xdg = true,
                                  const std::string& groups = "--clear-groups") const;
  // The pids of the uid's processes, space-separated.
  std::string Processes() const;
  // What is left in its record directories: its sandboxes' and its OCI containers'.
  std::string Records() const;

 private:
  uid_t uid_ = 0;
  std::string runtime_;
};

// For a fixture whose tests run twice, brig as root and brig as an ordinary user (the same
// guarantees without root, issue 31): its parameter says which. The suite is instantiated
// with BRIG_AS_ROOT_AND_AS_A_USER(Suite); the tests' names end in /Root and /User.
class AsRootOrUser : public ::testing::WithParamInterface<bool> {
 protected:
  bool AsUser() const { return GetParam(); }
  // In SetUp: "" or why the host cannot run brig as a user (for GTEST_SKIP).
  std::string MakeUser() { return AsUser() ? user_.Make() : ""; }
  // What brig runs under: TestWorld::Brig's `as`.
  std::vector<std::string> As() const {
    return AsUser() ? user_.Prefix("/nonexistent") : std::vector<std::string>();
  }
  // A directory brig writes in (results, audit logs) is the user's where it runs as one.
  void GiveToUser(const std::string& dir) const;
  // In TearDown: the user's processes left ("" if none, or as root).
  std::string UserProcesses() const { return AsUser() ? user_.Processes() : ""; }

  OrdinaryUser user_;
};
#define BRIG_AS_ROOT_AND_AS_A_USER(suite)                                                \
  INSTANTIATE_TEST_SUITE_P(AsRootAndAsAUser, suite, ::testing::Bool(),                   \
                           [](const ::testing::TestParamInfo<bool>& i) {                 \
                             return i.param ? std::string("User") : std::string("Root"); \
                           })

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = NeedUserns(); !why.empty()) GTEST_SKIP() << why;
    ForgetSpawned();
    before_ = TakeResidue();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_EQ(DiffResidue(before_, TakeResidue()), "") << "the run left residue on the host";
  }

  // Runs the probe inside a sandbox with the probe's directory as the (ro) workspace.
  RunOutput Probe(const std::vector<std::string>& probe_args,
                  std::vector<std::string> brig_args = {}) {
    std::vector<std::string> args = {"run", "--workspace", ProbeDir()};
    args.insert(args.end(), brig_args.begin(), brig_args.end());
    args.push_back("--");
    args.push_back("/workspace/brig-probe");
    args.insert(args.end(), probe_args.begin(), probe_args.end());
    return RunBrig(args);
  }

  RunOutput Sh(const std::string& script, std::vector<std::string> brig_args = {}) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), brig_args.begin(), brig_args.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunBrig(args);
  }

 private:
  Residue before_;
};

}  // namespace brig::testing
