// oci/spec.h: config.json and process.json read and checked (every refusal names its
// property), the name tables (namespaces, mount options, capabilities, rlimits, signals),
// and what `brig spec` and `brig features` print.
#include "oci/spec.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>

#include <climits>
#include <set>
#include <string>
#include <vector>

#include "container/sync.h"
#include "oci/hooks.h"
#include "testlib/testlib.h"

namespace brig::oci {
namespace {

constexpr char kProcess[] = R"({"args": ["sh"], "cwd": "/"})";
constexpr char kLinux[] =
    R"({"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "uts"}]})";

// A valid config.json with `process` and `linux` as given, and more top-level members.
std::string Config(const std::string& process = kProcess, const std::string& linux_ = kLinux,
                   const std::string& more = "") {
  return R"({"ociVersion": "1.1.0", "root": {"path": "rootfs"}, "process": )" + process +
         R"(, "linux": )" + linux_ + more + "}";
}

std::string SeccompConfig(const std::string& seccomp) {
  return Config(kProcess, R"({"namespaces": [{"type": "mount"}], "seccomp": )" + seccomp + "}");
}

std::string ErrorOf(const std::string& json) {
  auto r = ParseSpec(json);
  if (r) return "(parsed)";
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput) << r.error().Render();
  return r.error().Render();
}

TEST(OciSpec, AMinimalConfigParses) {
  auto spec = ParseSpec(Config());
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->oci_version(), "1.1.0");
  EXPECT_EQ(spec->root().path(), "rootfs");
  EXPECT_EQ(spec->process().args(0), "sh");
  EXPECT_EQ(spec->linux().namespaces_size(), 3);
}

// runc's reading: a new namespace named twice is one new namespace.
TEST(OciSpec, ANewNamespaceNamedTwiceIsOne) {
  auto spec = ParseSpec(Config(kProcess, R"({"namespaces": [{"type": "cgroup"}, {"type": "pid"},
                                                            {"type": "cgroup"}]})"));
  ASSERT_TRUE(spec) << spec.error().Render();
}

struct Refusal {
  std::string json;
  std::string error;  // the whole rendered line
};

class OciSpecRefuses : public ::testing::TestWithParam<Refusal> {};

TEST_P(OciSpecRefuses, NamingTheProperty) {
  EXPECT_EQ(ErrorOf(GetParam().json), GetParam().error) << GetParam().json;
}

INSTANTIATE_TEST_SUITE_P(
    OciVersion, OciSpecRefuses,
    ::testing::Values(
        Refusal{R"({"root": {"path": "r"}, "process": {"args": ["sh"], "cwd": "/"}})",
                "config.json: ociVersion: must be set"},
        Refusal{R"({"ociVersion": "2.0.0", "root": {"path": "r"}})",
                "config.json: ociVersion: '2.0.0' is not a 1.x version, which brig reads"},
        Refusal{R"({"ociVersion": "0.5.0", "root": {"path": "r"}})",
                "config.json: ociVersion: '0.5.0' is not a 1.x version, which brig reads"},
        Refusal{R"({"ociVersion": "1.0.2", "process": {"args": ["sh"], "cwd": "/"}})",
                "config.json: root.path: must be set"},
        Refusal{R"({"ociVersion": "1.0.2", "root": {"path": "r"}})",
                "config.json: process: must be set"}));

INSTANTIATE_TEST_SUITE_P(
    OciProcess, OciSpecRefuses,
    ::testing::Values(
        Refusal{Config(R"({"args": [], "cwd": "/"})"),
                "config.json: process.args: must not be empty"},
        // protobuf's parser would coerce these; runc's Go types refuse them.
        Refusal{Config(R"({"args": "sleep", "cwd": "/"})"),
                "config.json: process.args: must be an array"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "env": "A=1"})"),
                "config.json: process.env: must be an array"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "terminal": "yes"})"),
                "config.json: process.terminal: must be true or false"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "user": {"uid": "0"}})"),
                "config.json: process.user.uid: must be a number"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/",)"
                       R"( "rlimits": [{"type": "RLIMIT_NOFILE", "hard": "5", "soft": 5}]})"),
                "config.json: process.rlimits[0].hard: must be a number"},
        Refusal{Config(R"({"args": ["sh"]})"), "config.json: process.cwd: must be set"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "home"})"),
                "config.json: process.cwd: must be an absolute path, not 'home'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "capabilities":
                          {"bounding": ["CAP_KILL", "CAP_FOO"]}})"),
                "config.json: process.capabilities.bounding[1]: unknown capability 'CAP_FOO'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "capabilities":
                          {"ambient": ["kill"]}})"),
                "config.json: process.capabilities.ambient[0]: unknown capability 'kill'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "rlimits":
                          [{"type": "RLIMIT_FOO", "hard": 1, "soft": 1}]})"),
                "config.json: process.rlimits[0].type: unknown rlimit 'RLIMIT_FOO'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "rlimits":
                          [{"type": "RLIMIT_NOFILE", "hard": 2, "soft": 1},
                           {"type": "RLIMIT_NOFILE", "hard": 2, "soft": 1}]})"),
                "config.json: process.rlimits[1].type: duplicate rlimit 'RLIMIT_NOFILE'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "rlimits":
                          [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 2048}]})"),
                "config.json: process.rlimits[0].soft: 2048 is above hard 1024"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "apparmorProfile": "docker-default"})"),
                "config.json: process.apparmorProfile: not supported: brig applies no AppArmor "
                "profile ('docker-default')"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "oomScoreAdj": 1001})"),
                "config.json: process.oomScoreAdj: 1001 is not in -1000..1000"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "ioPriority": {"class": "RT"}})"),
                "config.json: process.ioPriority.class: unknown class 'RT'"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "ioPriority":
                          {"class": "IOPRIO_CLASS_BE", "priority": 8}})"),
                "config.json: process.ioPriority.priority: 8 is not in 0..7"}));

INSTANTIATE_TEST_SUITE_P(
    OciNamespaces, OciSpecRefuses,
    ::testing::Values(
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "pid"}, {"type": "ipc"},
                                                    {"type": "foo"}]})"),
                "config.json: linux.namespaces[2].type: unknown namespace 'foo'"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "pid"}, {"type": "pid",
                                                    "path": "/proc/1/ns/pid"}]})"),
                "config.json: linux.namespaces[1].type: duplicate namespace 'pid'"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "network", "path": "netns"}]})"),
                "config.json: linux.namespaces[0].path: must be an absolute path, not 'netns'"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}],
                  "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]})"),
                "config.json: linux.uidMappings: needs a user namespace in linux.namespaces"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "user"}]})"),
                "config.json: linux.uidMappings: a new user namespace needs mappings"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "user"}],
                  "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]})"),
                "config.json: linux.gidMappings: a new user namespace needs mappings"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "user"}],
                  "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
                  "gidMappings": [{"containerID": 0, "hostID": 1000}]})"),
                "config.json: linux.gidMappings[0].size: must not be 0"},
        Refusal{
            Config(kProcess, R"({"namespaces": [{"type": "mount"}]})", R"(, "hostname": "web")"),
            "config.json: hostname: needs a uts namespace in linux.namespaces"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}]})",
                       R"(, "domainname": "example.org")"),
                "config.json: domainname: needs a uts namespace in linux.namespaces"}));

INSTANTIATE_TEST_SUITE_P(
    OciMountsAndHooks, OciSpecRefuses,
    ::testing::Values(
        Refusal{Config(kProcess, kLinux, R"(, "mounts": [{"destination": "/proc", "type":
                  "proc"}, {"type": "tmpfs", "source": "tmpfs"}])"),
                "config.json: mounts[1].destination: must be set"},
        Refusal{Config(kProcess, kLinux, R"(, "mounts": [{"destination": "/data", "type":
                  "bind", "source": "/srv", "uidMappings": [{"containerID": 0, "hostID":
                  1000, "size": 1}]}])"),
                "config.json: mounts[0].gidMappings: must be given with uidMappings"},
        Refusal{Config(kProcess, kLinux, R"(, "mounts": [{"destination": "/data", "type":
                  "tmpfs", "source": "tmpfs", "uidMappings": [{"containerID": 0, "hostID":
                  1000, "size": 1}], "gidMappings": [{"containerID": 0, "hostID": 1000,
                  "size": 1}]}])"),
                "config.json: mounts[0].uidMappings: id-mapped mounts are only supported for "
                "bind mounts"},
        Refusal{Config(kProcess, kLinux, R"(, "mounts": [{"destination": "/data", "type":
                  "bind", "source": "/srv", "options": ["idmap"]}])"),
                "config.json: mounts[0].options: idmap without uidMappings takes the "
                "container's own user namespace's mappings, and linux.namespaces makes none"},
        Refusal{Config(kProcess, kLinux, R"(, "mounts": [{"destination": "/data", "type":
                  "bind", "source": "/srv", "uidMappings": [{"containerID": 0, "hostID":
                  1000, "size": 1}], "gidMappings": [{"containerID": 0, "hostID": 1000}]}])"),
                "config.json: mounts[0].gidMappings[0].size: must not be 0"},
        Refusal{Config(kProcess, kLinux, R"(, "hooks": {"poststart": [{"path": "/bin/true"}],
                  "prestart": [{"path": "/bin/true"}, {"path": "hook"}]})"),
                "config.json: hooks.prestart[1].path: must be an absolute path, not 'hook'"},
        Refusal{Config(kProcess, kLinux, R"(, "hooks": {"createRuntime": [{"args": ["x"]}]})"),
                "config.json: hooks.createRuntime[0].path: must be set"},
        Refusal{Config(kProcess, kLinux, R"(, "hooks": {"poststop": [{"path": "/bin/true",
                  "timeout": 0}]})"),
                "config.json: hooks.poststop[0].timeout: must be greater than zero"}));

INSTANTIATE_TEST_SUITE_P(
    OciLinux, OciSpecRefuses,
    ::testing::Values(
        Refusal{Config(kProcess, R"({"rootfsPropagation": "rshared-ish"})"),
                "config.json: linux.rootfsPropagation: unknown propagation 'rshared-ish'"},
        Refusal{Config(kProcess, R"({"rootfsPropagation": "nosuid"})"),
                "config.json: linux.rootfsPropagation: unknown propagation 'nosuid'"},
        Refusal{Config(kProcess, R"({"devices": [{"path": "/dev/fuse", "type": "c", "major":
                  10, "minor": 229}, {"path": "/dev/x", "type": "s"}]})"),
                "config.json: linux.devices[1].type: unknown device type 's' (c, b, u or p)"},
        Refusal{Config(kProcess, R"({"devices": [{"path": "dev/fuse", "type": "c"}]})"),
                "config.json: linux.devices[0].path: must be an absolute path, not 'dev/fuse'"},
        Refusal{Config(kProcess, R"({"resources": {"devices": [{"allow": false, "access":
                  "rwm"}, {"allow": true, "type": "p"}]}})"),
                "config.json: linux.resources.devices[1].type: unknown device type 'p' (a, c "
                "or b)"},
        Refusal{Config(kProcess, R"({"resources": {"devices": [{"allow": true, "access":
                  "rwx"}]}})"),
                "config.json: linux.resources.devices[0].access: unknown access 'rwx' (r, w, m)"},
        Refusal{Config(kProcess, R"({"personality": {"domain": "LINUX64"}})"),
                "config.json: linux.personality.domain: unknown domain 'LINUX64' (LINUX or "
                "LINUX32)"},
        Refusal{Config(kProcess, R"({"personality": {"domain": "LINUX", "flags": ["X"]}})"),
                "config.json: linux.personality.flags: not supported: brig sets no personality "
                "flags"},
        Refusal{Config(kProcess, R"({"intelRdt": {"closID": "guaranteed_group"}})"),
                "config.json: linux.intelRdt: not supported: brig has no Intel RDT"},
        Refusal{Config(kProcess, R"({"intelRdt": {}})"),
                "config.json: linux.intelRdt: not supported: brig has no Intel RDT"},
        Refusal{Config(kProcess, R"({"sysctl": {"": "1"}})"),
                "config.json: linux.sysctl: a key is empty"},
        // A namespaced sysctl without its namespace would be written into the host's.
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}],)"
                                 R"( "sysctl": {"net.ipv4.ip_forward": "1"}})"),
                "config.json: linux.sysctl 'net.ipv4.ip_forward': needs a network namespace in "
                "linux.namespaces, or it would set the host's"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}],)"
                                 R"( "sysctl": {"kernel/shmmax": "1"}})"),
                "config.json: linux.sysctl 'kernel/shmmax': needs an ipc namespace in "
                "linux.namespaces, or it would set the host's"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}],)"
                                 R"( "sysctl": {"kernel.domainname": "x"}})"),
                "config.json: linux.sysctl 'kernel.domainname': needs a uts namespace in "
                "linux.namespaces, or it would set the host's"},
        Refusal{Config(kProcess, R"({"namespaces": [{"type": "mount"}, {"type": "network"},)"
                                 R"( {"type": "ipc"}, {"type": "uts"}],)"
                                 R"( "sysctl": {"kernel.pid_max": "4096"}})"),
                "config.json: linux.sysctl 'kernel.pid_max': not in a namespace of the "
                "container's: it would set the host's"}));

TEST(OciSpec, NamespacedSysctlsWithTheirNamespacesAreTaken) {
  auto spec = ParseSpec(Config(kProcess,
                               R"({"namespaces": [{"type": "mount"}, {"type": "network"},)"
                               R"( {"type": "ipc"}],)"
                               R"( "sysctl": {"net/ipv4/ip_forward": "1", "fs.mqueue.msg_max": "9",)"
                               R"( "kernel.sem": "1 2 3 4"}})"));
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->linux().sysctl_size(), 3);
  EXPECT_EQ(SysctlNamespace("net.core.somaxconn"), CLONE_NEWNET);
  EXPECT_EQ(SysctlNamespace("kernel.hostname"), CLONE_NEWUTS);
  EXPECT_EQ(SysctlNamespace("kernel.shm_rmid_forced"), CLONE_NEWIPC);
  EXPECT_EQ(SysctlNamespace("kernel.shmmaxx"), std::nullopt);
  EXPECT_EQ(SysctlNamespace("vm.overcommit_memory"), std::nullopt);
  EXPECT_EQ(SysctlNamespace("netfilter.x"), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(
    OciSeccomp, OciSpecRefuses,
    ::testing::Values(
        Refusal{SeccompConfig(R"({"architectures": ["SCMP_ARCH_X86_64"]})"),
                "config.json: linux.seccomp.defaultAction: must be set"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_FOO"})"),
                "config.json: linux.seccomp.defaultAction: unknown action 'SCMP_ACT_FOO'"},
        Refusal{SeccompConfig(R"({"defaultAction": 7})"),
                "config.json: linux.seccomp.defaultAction: must be the name of action"},
        Refusal{SeccompConfig(R"({"default_action": "SCMP_ACT_NOPE"})"),
                "config.json: linux.seccomp.defaultAction: unknown action 'SCMP_ACT_NOPE'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SECCOMP_ACTION_UNSPECIFIED"})"),
                "config.json: linux.seccomp.defaultAction: unknown action "
                "'SECCOMP_ACTION_UNSPECIFIED'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_NOTIFY", "listenerPath": "/a"})"),
                "config.json: linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be used as "
                "default action"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures":
                  ["SCMP_ARCH_X86_64", "SCMP_ARCH_PPC64LE"]})"),
                "config.json: linux.seccomp.architectures[1]: unknown architecture "
                "'SCMP_ARCH_PPC64LE'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags":
                  ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_TSYNC"]})"),
                "config.json: linux.seccomp.flags[1]: not supported: 'SECCOMP_FILTER_FLAG_TSYNC'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["LOUD"]})"),
                "config.json: linux.seccomp.flags[0]: unknown flag 'LOUD'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["read"], "action": "SCMP_ACT_ALLOW"},
                  {"names": ["write"], "action": "SCMP_ACT_MAYBE"}]})"),
                "config.json: linux.seccomp.syscalls[1].action: unknown action 'SCMP_ACT_MAYBE'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["read"]}]})"),
                "config.json: linux.seccomp.syscalls[0].action: must be set"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["read"], "action": "SCMP_ACT_NOTIFY"}]})"),
                "config.json: linux.seccomp.syscalls[0].action: SCMP_ACT_NOTIFY needs a "
                "seccomp agent: linux.seccomp.listenerPath is empty"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": [], "action": "SCMP_ACT_ERRNO"}]})"),
                "config.json: linux.seccomp.syscalls[0].names: must not be empty"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [
                  {"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
                  {"index": 1, "value": 9, "op": "SCMP_CMP_SAME"}]}]})"),
                "config.json: linux.seccomp.syscalls[0].args[1].op: unknown operator "
                "'SCMP_CMP_SAME'"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [
                  {"index": 0, "value": 1}]}]})"),
                "config.json: linux.seccomp.syscalls[0].args[0].op: must be set"},
        Refusal{SeccompConfig(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                  {"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [
                  {"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]}]})"),
                "config.json: linux.seccomp.syscalls[0].args[0].index: must be 0 to 5"}));

// protobuf's own errors come out as one line naming the file and, when it knows it, the
// property.
INSTANTIATE_TEST_SUITE_P(
    OciJson, OciSpecRefuses,
    ::testing::Values(
        Refusal{Config(R"({"args": [5], "cwd": "/"})"),
                "config.json: process.args[0]: invalid value 5 for type TYPE_STRING"},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "user": {"uid": -1}})"),
                "config.json: process.user.uid: invalid value -1 for type TYPE_UINT32"},
        Refusal{R"({"process" {}})",
                "config.json: invalid JSON: Expected : between key:value pair."},
        Refusal{"", "config.json: invalid JSON: Unexpected end of string. Expected a value."},
        Refusal{"[1, 2]", "config.json: invalid JSON: Root element must be a message."},
        Refusal{Config(R"({"args": ["sh"], "cwd": "/", "rlimits": [{"type": "RLIMIT_CORE",
                  "hard": 18446744073709551616}]})"),
                "config.json: process.rlimits[0].hard: invalid value 1.8446744073709552e+19 for "
                "type TYPE_UINT64"}));

TEST(OciSpec, TheNameGivenPrefixesEveryError) {
  auto r = ParseSpec(Config(R"({"args": [], "cwd": "/"})"), "/b/config.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Render(), "/b/config.json: process.args: must not be empty");
  r = ParseSpec("{", "/b/config.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Render().rfind("/b/config.json: invalid JSON: ", 0), 0u)
      << r.error().Render();
}

TEST(OciSpec, UnknownPropertiesAreIgnored) {
  auto spec = ParseSpec(Config(R"({"args": ["sh"], "cwd": "/", "scheduler": {"policy":
                                  "SCHED_OTHER"}, "futureThing": [1, {"a": null}]})",
                               R"({"namespaces": [{"type": "mount"}], "timeOffsets": {}})",
                               R"(, "vm": {"hypervisor": {"path": "/x"}}, "windows": {})"));
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->process().cwd(), "/");
}

TEST(OciSpec, TheLargestNumbersTheSpecAllowsParse) {
  auto spec = ParseSpec(Config(
      R"({"args": ["sh"], "cwd": "/", "rlimits": [{"type": "RLIMIT_CORE",
         "hard": 18446744073709551615, "soft": 18446744073709551615}]})",
      R"({"resources": {"memory": {"limit": 9223372036854775807, "swap": -1},
         "pids": {"limit": -1}, "hugepageLimits": [{"pageSize": "2MB",
         "limit": 18446744073709551615}]}})"));
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->process().rlimits(0).hard(), UINT64_MAX);
  EXPECT_EQ(spec->process().rlimits(0).soft(), UINT64_MAX);
  EXPECT_EQ(spec->linux().resources().memory().limit(), INT64_MAX);
  EXPECT_EQ(spec->linux().resources().memory().swap(), -1);
  EXPECT_EQ(spec->linux().resources().pids().limit(), -1);
  EXPECT_EQ(spec->linux().resources().hugepage_limits(0).limit(), UINT64_MAX);
}

TEST(OciSpec, WhatTheSpecAllowsIsAccepted) {
  // A hostname in a uts namespace joined by path (a pod's), a joined user namespace with no
  // mappings, any 1.x version, and an empty seccomp rule list.
  auto spec = ParseSpec(R"({"ociVersion": "1.2.0-rc.1", "root": {"path": "r"},
      "process": {"args": ["sh"], "cwd": "/", "oomScoreAdj": -1000,
                  "ioPriority": {"class": "IOPRIO_CLASS_IDLE", "priority": 7}},
      "hostname": "pod", "hooks": {"startContainer": [{"path": "/hook", "timeout": 5}]},
      "linux": {"namespaces": [{"type": "uts", "path": "/proc/42/ns/uts"},
                               {"type": "user", "path": "/proc/42/ns/user"}, {"type": "time"}],
                "rootfsPropagation": "rslave", "personality": {"domain": "LINUX32"},
                "seccomp": {"defaultAction": "SCMP_ACT_LOG"},
                "devices": [{"path": "/dev/p", "type": "p"}],
                "resources": {"devices": [{"allow": true, "type": "a", "access": "m"}]}}})");
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->linux().seccomp().default_action(), v1::SCMP_ACT_LOG);
}

TEST(OciSpec, ARelativeMountDestinationIsUnderRoot) {
  // config.md: a relative destination is deprecated and MUST be read relative to "/".
  auto spec = ParseSpec(Config(kProcess, kLinux, R"(, "mounts": [{"destination": "data",
      "type": "bind", "source": "/srv", "options": ["rbind"]}])"));
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->mounts(0).destination(), "/data");
}

std::string ReadTestData(const std::string& name) {
  return testing::ReadFileOrEmpty(testing::SourceRoot() + "/tests/unit/oci/" + name);
}

TEST(OciSpec, AConfigLikeContainerdsParses) {
  std::string json = ReadTestData("containerd-ctr.json");
  ASSERT_FALSE(json.empty());
  auto spec = ParseSpec(json);
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->process().args_size(), 3);
  EXPECT_EQ(spec->mounts_size(), 8);
  EXPECT_TRUE(IsBind(spec->mounts(7)));
  EXPECT_EQ(spec->linux().cgroups_path(), "/default/web-1");
  EXPECT_EQ(spec->linux().resources().memory().limit(), 268435456);
  EXPECT_EQ(spec->linux().seccomp().architectures_size(), 3);
  EXPECT_EQ(spec->linux().seccomp().syscalls(2).args(0).value(), 4294967295u);
  auto caps = CapabilitySets(*spec->mutable_process());
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->bounding, caps->effective);
  EXPECT_TRUE(caps->bounding & (uint64_t{1} << CAP_AUDIT_WRITE));
  EXPECT_FALSE(caps->bounding & (uint64_t{1} << CAP_SYS_ADMIN));
  EXPECT_EQ(caps->ambient, 0u);
}

TEST(OciSpec, AConfigLikePodmansParses) {
  std::string json = ReadTestData("podman.json");
  ASSERT_FALSE(json.empty());
  auto spec = ParseSpec(json);
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->process().user().umask(), 18u);
  EXPECT_EQ(spec->process().rlimits(2).hard(), UINT64_MAX);
  EXPECT_EQ(spec->hostname(), "f3a9c1d2e4b5");
  EXPECT_EQ(spec->annotations().at("io.container.manager"), "libpod");
  EXPECT_EQ(spec->linux().namespaces(1).path(),
            "/run/netns/netns-6a0c4e1b-2f3d-4c5e-8a9b-0d1e2f3a4b5c");
  EXPECT_EQ(spec->linux().resources().memory().limit(), INT64_MAX);
  EXPECT_EQ(spec->linux().seccomp().default_errno_ret(), 38u);
  EXPECT_EQ(spec->linux().sysctl().at("net.ipv4.ping_group_range"), "0 0");
  EXPECT_EQ(spec->hooks().create_runtime(0).timeout(), 10);
  const Mount& tmp = spec->mounts(10);
  ASSERT_EQ(tmp.destination(), "/tmp");
  MountOptions o = ParseMountOptions({tmp.options().begin(), tmp.options().end()});
  EXPECT_TRUE(o.tmpcopyup);
  EXPECT_EQ(o.propagation, MS_PRIVATE | MS_REC);
  EXPECT_EQ(o.flags, MS_NOSUID | MS_NODEV);
  EXPECT_EQ(o.data, "");
}

TEST(OciSpec, LoadSpecReadsTheBundlesConfig) {
  testing::ScratchDir dir;
  auto missing = LoadSpec(dir.path());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().Render().find(dir.path() + "/config.json"), std::string::npos)
      << missing.error().Render();
  dir.Write("config.json", Config());
  auto spec = LoadSpec(dir.path());
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(spec->root().path(), "rootfs");
  dir.Write("config.json", Config(R"({"args": ["sh"], "cwd": "x"})"));
  auto bad = LoadSpec(dir.path());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Render(), "config.json: process.cwd: must be an absolute path, not 'x'");
}

TEST(OciSpec, AProcessFileIsCheckedAsConfigsProcessIs) {
  auto p = ParseProcess(R"({"args": ["ps", "aux"], "cwd": "/", "env": ["A=1"],
                            "capabilities": {"bounding": ["CAP_KILL"]}, "terminal": true})",
                        "process.json");
  ASSERT_TRUE(p) << p.error().Render();
  EXPECT_EQ(p->args(1), "aux");
  EXPECT_TRUE(p->terminal());
  struct Case {
    std::string json, error;
  } cases[] = {
      {R"({"args": [], "cwd": "/"})", "/tmp/p.json: args: must not be empty"},
      {R"({"args": ["sh"], "cwd": "rel"})",
       "/tmp/p.json: cwd: must be an absolute path, not 'rel'"},
      {R"({"args": ["sh"], "cwd": "/", "capabilities": {"permitted": ["CAP_NOPE"]}})",
       "/tmp/p.json: capabilities.permitted[0]: unknown capability 'CAP_NOPE'"},
      {R"({"args": ["sh"], "cwd": "/", "rlimits": [{"type": "NOFILE"}]})",
       "/tmp/p.json: rlimits[0].type: unknown rlimit 'NOFILE'"},
      {R"({"args": "sh", "cwd": 5})", "/tmp/p.json: cwd: invalid value 5 for type TYPE_STRING"},
  };
  for (const auto& c : cases) {
    auto r = ParseProcess(c.json, "/tmp/p.json");
    ASSERT_FALSE(r) << c.json;
    EXPECT_EQ(r.error().Render(), c.error);
  }
}

TEST(OciSpec, NamespaceTable) {
  struct Case {
    const char* type;
    int flag;
    const char* proc;
  } cases[] = {{"pid", CLONE_NEWPID, "pid"},          {"network", CLONE_NEWNET, "net"},
               {"mount", CLONE_NEWNS, "mnt"},         {"ipc", CLONE_NEWIPC, "ipc"},
               {"uts", CLONE_NEWUTS, "uts"},          {"user", CLONE_NEWUSER, "user"},
               {"cgroup", CLONE_NEWCGROUP, "cgroup"}, {"time", CLONE_NEWTIME, "time"}};
  for (const auto& c : cases) {
    EXPECT_EQ(NamespaceFlag(c.type), c.flag) << c.type;
    EXPECT_EQ(NamespaceProcName(c.flag), c.proc) << c.type;
  }
  EXPECT_EQ(NamespaceFlag("net"), std::nullopt);
  EXPECT_EQ(NamespaceFlag("mnt"), std::nullopt);
  EXPECT_EQ(NamespaceFlag(""), std::nullopt);
  EXPECT_EQ(NamespaceProcName(CLONE_NEWPID | CLONE_NEWNET), "");
}

TEST(OciSpec, MountOptionsAreFlagsAndTheRestIsData) {
  MountOptions o = ParseMountOptions({"nosuid", "strictatime", "mode=755", "size=65536k"});
  EXPECT_EQ(o.flags, MS_NOSUID | MS_STRICTATIME);
  EXPECT_EQ(o.clear, 0u);
  EXPECT_EQ(o.data, "mode=755,size=65536k");
  EXPECT_FALSE(o.bind);

  o = ParseMountOptions(
      {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", "", "defaults"});
  EXPECT_EQ(o.flags, MS_NOSUID | MS_NOEXEC);
  EXPECT_EQ(o.data, "newinstance,ptmxmode=0666,mode=0620,gid=5");

  // The later of two opposites wins; the one turned off is in `clear`.
  o = ParseMountOptions({"ro", "rw", "nodev", "dev", "exec", "noexec", "suid", "atime"});
  EXPECT_EQ(o.flags, MS_NOEXEC);
  EXPECT_EQ(o.clear, MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOATIME);

  o = ParseMountOptions({"sync", "dirsync", "remount", "mand", "noatime", "nodiratime", "relatime",
                         "lazytime", "iversion", "silent", "nosymfollow"});
  EXPECT_EQ(o.flags, MS_SYNCHRONOUS | MS_DIRSYNC | MS_REMOUNT | MS_MANDLOCK | MS_NOATIME |
                         MS_NODIRATIME | MS_RELATIME | MS_LAZYTIME | MS_I_VERSION | MS_SILENT |
                         MS_NOSYMFOLLOW);
  o = ParseMountOptions({"async", "nomand", "diratime", "norelatime", "nostrictatime", "nolazytime",
                         "noiversion", "loud", "symfollow"});
  EXPECT_EQ(o.flags, 0u);
  EXPECT_EQ(o.clear, MS_SYNCHRONOUS | MS_MANDLOCK | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME |
                         MS_LAZYTIME | MS_I_VERSION | MS_SILENT | MS_NOSYMFOLLOW);
}

TEST(OciSpec, MountOptionsBindAndPropagation) {
  MountOptions o = ParseMountOptions({"bind", "rprivate"});
  EXPECT_TRUE(o.bind);
  EXPECT_FALSE(o.recursive);
  EXPECT_EQ(o.propagation, MS_PRIVATE | MS_REC);
  EXPECT_EQ(o.flags, 0u);
  o = ParseMountOptions({"rbind", "ro", "shared", "rslave"});
  EXPECT_TRUE(o.bind && o.recursive);
  EXPECT_EQ(o.propagation, MS_SLAVE | MS_REC);
  EXPECT_EQ(o.flags, MS_RDONLY);
  struct Case {
    const char* name;
    unsigned long propagation;
  } cases[] = {{"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
               {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
               {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
               {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC}};
  for (const auto& c : cases) {
    EXPECT_EQ(ParseMountOptions({c.name}).propagation, c.propagation) << c.name;
    auto r = RootfsPropagation(c.name);
    ASSERT_TRUE(r) << c.name;
    EXPECT_EQ(*r, c.propagation) << c.name;
  }
  auto def = RootfsPropagation("");
  ASSERT_TRUE(def);
  EXPECT_EQ(*def, MS_SLAVE | MS_REC);
  EXPECT_FALSE(RootfsPropagation("rbind"));
  EXPECT_FALSE(RootfsPropagation("SHARED"));
}

TEST(OciSpec, RecursiveMountAttributes) {
  MountOptions o =
      ParseMountOptions({"rro", "rnosuid", "rnodev", "rnoexec", "rnodiratime", "rnosymfollow"});
  EXPECT_EQ(o.attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                            MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOSYMFOLLOW);
  EXPECT_EQ(o.attr_clr, 0u);
  EXPECT_EQ(o.flags, 0u);
  o = ParseMountOptions({"rro", "rrw", "rsuid", "rdev", "rexec", "rdiratime", "rsymfollow"});
  EXPECT_EQ(o.attr_set, 0u);
  EXPECT_EQ(o.attr_clr, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                            MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOSYMFOLLOW);
  // The atime mode is an enum: setting one clears the whole field (mount_setattr(2)).
  struct Case {
    const char* name;
    uint64_t mode;
  } cases[] = {{"rnoatime", MOUNT_ATTR_NOATIME},         {"ratime", MOUNT_ATTR_RELATIME},
               {"rrelatime", MOUNT_ATTR_RELATIME},       {"rnorelatime", MOUNT_ATTR_STRICTATIME},
               {"rstrictatime", MOUNT_ATTR_STRICTATIME}, {"rnostrictatime", MOUNT_ATTR_RELATIME}};
  for (const auto& c : cases) {
    o = ParseMountOptions({"rnoatime", c.name});
    EXPECT_EQ(o.attr_set & MOUNT_ATTR__ATIME, c.mode) << c.name;
    EXPECT_EQ(o.attr_clr & MOUNT_ATTR__ATIME, uint64_t{MOUNT_ATTR__ATIME}) << c.name;
  }
}

TEST(OciSpec, IsBindByTypeOrOption) {
  Mount m;
  m.set_type("bind");
  EXPECT_TRUE(IsBind(m));
  m.set_type("rbind");
  EXPECT_TRUE(IsBind(m));
  m.set_type("none");
  EXPECT_FALSE(IsBind(m));
  m.add_options("ro");
  m.add_options("rbind");
  EXPECT_TRUE(IsBind(m));
  Mount tmpfs;
  tmpfs.set_type("tmpfs");
  tmpfs.add_options("bindable");
  EXPECT_FALSE(IsBind(tmpfs));
}

TEST(OciSpec, CapabilityNamesAreTheirBits) {
  google::protobuf::RepeatedPtrField<std::string> names;
  *names.Add() = "CAP_CHOWN";
  *names.Add() = "CAP_SYS_ADMIN";
  *names.Add() = "CAP_CHECKPOINT_RESTORE";
  auto mask = CapabilityMask(names, "x.caps");
  ASSERT_TRUE(mask);
  EXPECT_EQ(*mask, (uint64_t{1} << 0) | (uint64_t{1} << 21) | (uint64_t{1} << 40));
  *names.Add() = "SYS_ADMIN";
  auto bad = CapabilityMask(names, "x.caps");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Render(), "x.caps[3]: unknown capability 'SYS_ADMIN'");
  EXPECT_EQ(bad.error().kind, ErrorKind::kBadInput);
}

TEST(OciSpec, EveryCapabilityOfTheKernelHeadersIsKnown) {
  google::protobuf::Struct features;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(FeaturesJson(), &features).ok());
  const auto& caps = features.fields().at("linux").struct_value().fields().at("capabilities");
  google::protobuf::RepeatedPtrField<std::string> names;
  for (const auto& v : caps.list_value().values()) *names.Add() = v.string_value();
  EXPECT_EQ(names.size(), CAP_LAST_CAP + 1);
  auto mask = CapabilityMask(names, "all");
  ASSERT_TRUE(mask);
  EXPECT_EQ(*mask, (uint64_t{1} << (CAP_LAST_CAP + 1)) - 1);
}

TEST(OciSpec, CapabilitySetsReadsTheFiveSets) {
  auto p = ParseProcess(R"({"args": ["sh"], "cwd": "/", "capabilities": {
      "bounding": ["CAP_KILL", "CAP_NET_RAW"], "effective": ["CAP_KILL"],
      "inheritable": ["CAP_SETUID"], "permitted": ["CAP_KILL"], "ambient": ["CAP_BPF"]}})",
                        "p");
  ASSERT_TRUE(p) << p.error().Render();
  auto sets = CapabilitySets(*p);
  ASSERT_TRUE(sets);
  EXPECT_EQ(sets->bounding, (uint64_t{1} << CAP_KILL) | (uint64_t{1} << CAP_NET_RAW));
  EXPECT_EQ(sets->effective, uint64_t{1} << CAP_KILL);
  EXPECT_EQ(sets->inheritable, uint64_t{1} << CAP_SETUID);
  EXPECT_EQ(sets->permitted, uint64_t{1} << CAP_KILL);
  EXPECT_EQ(sets->ambient, uint64_t{1} << CAP_BPF);
  Process none;
  auto empty = CapabilitySets(none);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->bounding | empty->effective | empty->permitted | empty->ambient, 0u);
  none.mutable_capabilities()->add_effective("CAP_WHATEVER");
  auto bad = CapabilitySets(none);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Render(),
            "process.capabilities.effective[0]: unknown capability 'CAP_WHATEVER'");
}

TEST(OciSpec, RlimitNames) {
  struct Case {
    const char* name;
    int resource;
  } cases[] = {{"RLIMIT_AS", RLIMIT_AS},
               {"RLIMIT_CORE", RLIMIT_CORE},
               {"RLIMIT_CPU", RLIMIT_CPU},
               {"RLIMIT_DATA", RLIMIT_DATA},
               {"RLIMIT_FSIZE", RLIMIT_FSIZE},
               {"RLIMIT_LOCKS", RLIMIT_LOCKS},
               {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
               {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
               {"RLIMIT_NICE", RLIMIT_NICE},
               {"RLIMIT_NOFILE", RLIMIT_NOFILE},
               {"RLIMIT_NPROC", RLIMIT_NPROC},
               {"RLIMIT_RSS", RLIMIT_RSS},
               {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
               {"RLIMIT_RTTIME", RLIMIT_RTTIME},
               {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
               {"RLIMIT_STACK", RLIMIT_STACK}};
  std::set<int> seen;
  for (const auto& c : cases) {
    EXPECT_EQ(RlimitResource(c.name), c.resource) << c.name;
    seen.insert(c.resource);
  }
  EXPECT_EQ(seen.size(), size_t{RLIM_NLIMITS});
  EXPECT_EQ(RlimitResource("NOFILE"), std::nullopt);
  EXPECT_EQ(RlimitResource("rlimit_nofile"), std::nullopt);
}

TEST(OciSpec, SignalsByNameNumberAndRealTimeOffset) {
  struct Case {
    const char* text;
    int signal;
  } cases[] = {{"KILL", SIGKILL},
               {"SIGKILL", SIGKILL},
               {"sigterm", SIGTERM},
               {"term", SIGTERM},
               {"9", 9},
               {"1", 1},
               {"64", 64},
               {"HUP", SIGHUP},
               {"SIGUSR1", SIGUSR1},
               {"WINCH", SIGWINCH},
               {"CHLD", SIGCHLD},
               {"CLD", SIGCHLD},
               {"IOT", SIGABRT},
               {"POLL", SIGIO},
               {"SIGPWR", SIGPWR},
               {"SYS", SIGSYS},
               {"RTMIN", 34},
               {"SIGRTMIN+1", 35},
               {"RTMIN+30", 64},
               {"RTMAX", 64},
               {"SIGRTMAX-2", 62},
               {"rtmax-30", 34}};
  for (const auto& c : cases) {
    auto r = ParseSignal(c.text);
    ASSERT_TRUE(r) << c.text << ": " << r.error().Render();
    EXPECT_EQ(*r, c.signal) << c.text;
  }
  for (const char* bad :
       {"", "0", "65", "-1", "+9", "9x", " 9", "SIG", "KILLX", "RTMIN+31", "RTMAX-31", "RTMIN+",
        "RTMIN-1", "RTMIN+-1", "RTMAX--1", "99999999999999999999", "SIGSIGKILL"}) {
    auto r = ParseSignal(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().Render(), *bad ? "signal '" + std::string(bad) + "': unknown signal"
                                       : "signal: unknown signal");
  }
}

TEST(OciSpec, Personality) {
  Personality p;
  p.set_domain("LINUX");
  EXPECT_EQ(PersonalityValue(p).value(), static_cast<unsigned long>(PER_LINUX));
  p.set_domain("LINUX32");
  EXPECT_EQ(PersonalityValue(p).value(), static_cast<unsigned long>(PER_LINUX32));
  p.set_domain("linux");
  EXPECT_FALSE(PersonalityValue(p));
  p.set_domain("LINUX");
  p.add_flags("ADDR_NO_RANDOMIZE");
  EXPECT_FALSE(PersonalityValue(p));
}

TEST(OciSpec, TheDefaultSpecParsesBack) {
  std::string json = DefaultSpecJson(false, 0, 0);
  auto spec = ParseSpec(json);
  ASSERT_TRUE(spec) << spec.error().Render() << "\n" << json;
  EXPECT_NE(json.find("\n  \"process\": {\n"), std::string::npos) << json;
  EXPECT_NE(json.find("\"hard\": 1024"), std::string::npos) << "numbers stay numbers";
  EXPECT_EQ(spec->oci_version(), "1.0.2");
  EXPECT_EQ(spec->root().path(), "rootfs");
  EXPECT_TRUE(spec->root().readonly());
  EXPECT_TRUE(spec->process().terminal());
  EXPECT_EQ(spec->process().args(0), "sh");
  EXPECT_EQ(spec->process().cwd(), "/");
  EXPECT_TRUE(spec->process().no_new_privileges());
  EXPECT_EQ(spec->hostname(), "brig");
  auto caps = CapabilitySets(spec->process());
  ASSERT_TRUE(caps);
  uint64_t want = (uint64_t{1} << CAP_AUDIT_WRITE) | (uint64_t{1} << CAP_KILL) |
                  (uint64_t{1} << CAP_NET_BIND_SERVICE);
  EXPECT_EQ(caps->bounding, want);
  EXPECT_EQ(caps->effective, want);
  EXPECT_EQ(caps->permitted, want);
  EXPECT_EQ(caps->ambient, 0u);
  EXPECT_EQ(spec->process().rlimits(0).type(), "RLIMIT_NOFILE");
  std::vector<std::string> dests, namespaces;
  for (const auto& m : spec->mounts()) dests.push_back(m.destination());
  for (const auto& n : spec->linux().namespaces()) namespaces.push_back(n.type());
  EXPECT_EQ(dests, (std::vector<std::string>{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue",
                                             "/sys", "/sys/fs/cgroup"}));
  EXPECT_EQ(namespaces,
            (std::vector<std::string>{"pid", "network", "ipc", "uts", "mount", "cgroup"}));
  EXPECT_EQ(spec->mounts(5).type(), "sysfs");
  EXPECT_TRUE(
      ParseMountOptions({spec->mounts(6).options().begin(), spec->mounts(6).options().end()})
          .flags &
      MS_RDONLY);
  EXPECT_EQ(spec->linux().resources().devices_size(), 1);
  EXPECT_GE(spec->linux().masked_paths_size(), 10);
  EXPECT_EQ(spec->linux().readonly_paths_size(), 5);
  EXPECT_TRUE(spec->linux().uid_mappings().empty());
}

TEST(OciSpec, TheRootlessDefaultSpecMapsTheCaller) {
  std::string json = DefaultSpecJson(true, 1234, 5678);
  auto spec = ParseSpec(json);
  ASSERT_TRUE(spec) << spec.error().Render() << "\n" << json;
  std::vector<std::string> namespaces;
  for (const auto& n : spec->linux().namespaces()) namespaces.push_back(n.type());
  EXPECT_EQ(namespaces, (std::vector<std::string>{"pid", "ipc", "uts", "mount", "cgroup", "user"}));
  ASSERT_EQ(spec->linux().uid_mappings_size(), 1);
  EXPECT_EQ(spec->linux().uid_mappings(0).host_id(), 1234u);
  EXPECT_EQ(spec->linux().uid_mappings(0).container_id(), 0u);
  EXPECT_EQ(spec->linux().uid_mappings(0).size(), 1u);
  ASSERT_EQ(spec->linux().gid_mappings_size(), 1);
  EXPECT_EQ(spec->linux().gid_mappings(0).host_id(), 5678u);
  EXPECT_FALSE(spec->linux().has_resources());
  EXPECT_TRUE(IsBind(spec->mounts(5)));
  EXPECT_EQ(spec->mounts(5).source(), "/sys");
  for (const auto& o : spec->mounts(2).options()) EXPECT_NE(o.rfind("gid=", 0), 0u) << o;
}

TEST(OciSpec, FeaturesIsValidJsonListingWhatBrigReads) {
  std::string json = FeaturesJson();
  google::protobuf::Struct f;
  auto st = google::protobuf::util::JsonStringToMessage(json, &f);
  ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << json;
  EXPECT_EQ(f.fields().at("ociVersionMin").string_value(), "1.0.0");
  EXPECT_EQ(f.fields().at("hooks").list_value().values_size(), 6);
  std::vector<std::string> options;
  for (const auto& v : f.fields().at("mountOptions").list_value().values()) {
    options.push_back(v.string_value());
  }
  // Every option listed is one ParseMountOptions takes as more than data.
  for (const auto& o : options) {
    if (o == "defaults") continue;
    MountOptions m = ParseMountOptions({o});
    EXPECT_EQ(m.data, "") << o;
    EXPECT_TRUE(m.flags || m.clear || m.propagation || m.attr_set || m.attr_clr || m.bind ||
                m.idmap || m.tmpcopyup || o == "rrelatime" || o == "ratime" ||
                o == "rnostrictatime")
        << o;
  }
  EXPECT_GE(options.size(), 60u);
  const auto& linux_ = f.fields().at("linux").struct_value().fields();
  EXPECT_EQ(linux_.at("namespaces").list_value().values_size(), 8);
  const auto& seccomp = linux_.at("seccomp").struct_value().fields();
  EXPECT_TRUE(seccomp.at("enabled").bool_value());
  std::set<std::string> actions;
  for (const auto& v : seccomp.at("actions").list_value().values()) {
    actions.insert(v.string_value());
  }
  EXPECT_TRUE(actions.count("SCMP_ACT_ERRNO"));
  EXPECT_TRUE(actions.count("SCMP_ACT_NOTIFY"));
  EXPECT_FALSE(actions.count("SECCOMP_ACTION_UNSPECIFIED"));
  EXPECT_FALSE(linux_.at("apparmor").struct_value().fields().at("enabled").bool_value());
  EXPECT_FALSE(linux_.at("selinux").struct_value().fields().at("enabled").bool_value());
  EXPECT_FALSE(linux_.at("intelRdt").struct_value().fields().at("enabled").bool_value());
  EXPECT_TRUE(linux_.at("mountExtensions")
                  .struct_value()
                  .fields()
                  .at("idmap")
                  .struct_value()
                  .fields()
                  .at("enabled")
                  .bool_value());
  EXPECT_TRUE(linux_.at("cgroup").struct_value().fields().at("v1").bool_value());
  EXPECT_TRUE(linux_.at("cgroup").struct_value().fields().at("systemd").bool_value());
  EXPECT_EQ(f.fields()
                .at("annotations")
                .struct_value()
                .fields()
                .at("io.github.brig.version")
                .string_value(),
            BRIG_VERSION);
}

// A wait of brig's that spans hooks is bounded by a setup step and their timeouts, and by
// nothing if one has none (the specification leaves its time open).
TEST(OciHooks, AWaitSpanningHooksIsBoundedByTheirTimeouts) {
  Hooks hooks;
  EXPECT_EQ(StepWithHooksMs({&hooks.prestart()}), container::kSetupStepTimeoutMs);
  hooks.add_prestart()->set_timeout(2);
  hooks.add_create_runtime()->set_timeout(3);
  EXPECT_EQ(StepWithHooksMs({&hooks.prestart(), &hooks.create_runtime()}),
            container::kSetupStepTimeoutMs + 5000);
  hooks.add_create_runtime();
  EXPECT_EQ(StepWithHooksMs({&hooks.prestart(), &hooks.create_runtime()}), -1);
  hooks.add_create_container()->set_timeout(2000000000);
  EXPECT_EQ(StepWithHooksMs({&hooks.create_container()}), INT_MAX);
}

}  // namespace
}  // namespace brig::oci
