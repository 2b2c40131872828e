// Hidden paths (issue 7, "Hidden paths"): secrets in a workspace that the sandbox never
// reads, in each workspace mode, with the shipped profiles' list. In a copy they are not
// there at all; in a bound workspace (ro, rw) each reads as empty. Each test is the read an
// attacker inside would try.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "host/host_fixture.h"
#include "sys/fd.h"

namespace brig::testing {
namespace {

class Hidden : public HostTest {
 protected:
  std::string Profile(const std::string& mode) {
    return SourceRoot() + "/tests/host/profiles/hidden-" + mode + ".textproto";
  }
};

constexpr char kSecret[] = "s3cr3t-value";

// A workspace full of secrets, at the top and deeper, owned by an unprivileged user.
void Secrets(const ScratchDir& ws) {
  for (const char* d : {".ssh", ".aws", ".gnupg", "app", "app/deep", "certs"}) {
    ASSERT_EQ(mkdir((ws.path() + "/" + d).c_str(), 0700), 0) << d;
  }
  for (const char* f : {".env", ".env.production", ".ssh/id_ed25519", ".aws/credentials",
                        ".gnupg/secring.gpg", "server.pem", "tls.key", ".netrc",
                        ".git-credentials", ".npmrc", ".pypirc", "app/deep/.npmrc",
                        "app/.netrc", "app/.git-credentials"}) {
    ws.Write(f, std::string(kSecret) + "\n");
  }
  ws.Write("README", "public\n");
  ws.Write("certs/ca.pem", "a public certificate, below the top\n");
  RunCommand({"chown", "-R", "1234:1234", ws.path()});
}

// Everything the sandbox can read of the workspace, file by file.
constexpr char kReadAll[] =
    "cd /workspace; find . -type f | sort | while read f; do printf '%s: ' \"$f\"; "
    "cat \"$f\" 2>&1 | head -c 200; echo; done; ls -A";

TEST_F(Hidden, InACopyTheyAreNotThere) {
  ScratchDir ws;
  Secrets(ws);
  auto r = Sh(kReadAll, {"--profile", Profile("copy"), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_EQ(r.out, "./README: public\n\nREADME\napp\ncerts\n")
      << "a name is hidden at any depth, a glob too (gitignore's rule)";
}

TEST_F(Hidden, InABoundWorkspaceTheyReadAsNothing) {
  for (const std::string mode : {"ro", "rw"}) {
    ScratchDir ws;
    Secrets(ws);
    auto r = Sh(kReadAll + std::string("; cat .ssh/id_ed25519 app/deep/.npmrc 2>&1; true"),
                {"--profile", Profile(mode), "--workspace", ws.path()});
    ASSERT_EQ(r.exit_code, 0) << mode << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("./README: public"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("./certs/ca.pem: \n"), std::string::npos) << r.out;
    // The source keeps its secrets.
    EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.env"), std::string(kSecret) + "\n");
  }
}

// In a read-write workspace, writing to a hidden file goes nowhere and changes nothing on
// the host.
TEST_F(Hidden, WritingThroughAHiddenPathChangesNothing) {
  ScratchDir ws;
  Secrets(ws);
  auto r = Sh("echo overwritten > .env; echo x > .ssh/new 2>/dev/null; rm -f .npmrc; true",
              {"--profile", Profile("rw"), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.env"), std::string(kSecret) + "\n");
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.npmrc"), std::string(kSecret) + "\n");
  EXPECT_NE(access((ws.path() + "/.ssh/new").c_str(), F_OK), 0);
}

// A link in the workspace to a secret elsewhere on the host, to /etc/shadow, up and out of
// the workspace or to /proc/self/root leads, inside, only to what the sandbox sees there
// (the host's /root, /home and the rest are not in its root), in every workspace mode; a
// hidden path that is a link is hidden too in a copy.
TEST_F(Hidden, LinksToSecretsLeadNowhere) {
  ScratchDir ws, elsewhere;
  Secrets(ws);
  elsewhere.Write("id_rsa", std::string(kSecret) + "\n");
  ASSERT_EQ(symlink((elsewhere.path() + "/id_rsa").c_str(), (ws.path() + "/key-link").c_str()), 0);
  ASSERT_EQ(symlink((elsewhere.path() + "/id_rsa").c_str(), (ws.path() + "/.envrc").c_str()), 0);
  ASSERT_EQ(symlink("/etc/shadow", (ws.path() + "/shadow").c_str()), 0);
  ASSERT_EQ(symlink("../../../../../../..", (ws.path() + "/up").c_str()), 0);
  ASSERT_EQ(symlink("/proc/self/root", (ws.path() + "/root").c_str()), 0);
  for (const std::string mode : {"copy", "ro", "rw"}) {
    auto r = Sh("cd /workspace; cat key-link .envrc shadow /proc/self/root/etc/shadow "
                "up/etc/shadow root/etc/shadow up" + elsewhere.path() + "/id_rsa 2>&1; ls -A",
                {"--profile", Profile(mode), "--workspace", ws.path()});
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << mode << ": " << r.out;
    EXPECT_EQ(r.out.find("root:"), std::string::npos) << mode << ": " << r.out;
    if (mode == "copy") {
      EXPECT_EQ(r.out.find(".envrc\n"), std::string::npos) << r.out;
    }
  }
}

// An export never carries a hidden file's content or name: not in git.diff (what the
// sandbox wrote at a hidden path is new there), not in the deleted list (a hidden
// directory the sandbox replaced, or one that held hidden files), not in files/.
TEST_F(Hidden, AnExportNeverCarriesASecret) {
  ScratchDir ws, out;
  Secrets(ws);
  ASSERT_EQ(RunCommand({"sh", "-c", "cd " + ws.path() + " && git init -q && git -c "
                        "safe.directory='*' add -A && git -c safe.directory='*' -c "
                        "user.email=t@test -c user.name=t commit -qm init && chown -R 1234:1234 ."})
                .exit_code,
            0);
  std::string exported = out.path() + "/changes";
  auto r = Sh("cd /workspace; echo mine > .env; mkdir .ssh; echo mine > .ssh/config; "
              "rm -r app; mkdir app; echo more >> README",
              {"--profile", Profile("copy"), "--workspace", ws.path(), "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string all = RunCommand({"sh", "-c", "cd " + exported + " && find . -type f | sort | "
                                "xargs cat; find . | sort"}).out;
  EXPECT_EQ(all.find(kSecret), std::string::npos) << all;
  for (const char* name : {"id_ed25519", "deep/.npmrc", "app/.netrc", "app/.git-credentials"}) {
    EXPECT_EQ(all.find(name), std::string::npos) << name << " in\n" << all;
  }
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/.env"), "mine\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/.ssh/config"), "mine\n");
  std::string diff = ReadFileOrEmpty(exported + "/git.diff");
  EXPECT_NE(diff.find("+more"), std::string::npos) << diff;
  EXPECT_NE(diff.find("new file mode"), std::string::npos) << diff;
}


// A shipped profile as the tests run it: the same filesystem section, with no network (so
// no test world is needed). Written to `dir`; returns its path.
std::string Shipped(const std::string& name, const ScratchDir& dir) {
  std::string text = ReadFileOrEmpty(SourceRoot() + "/policies/profiles/" + name + ".textproto");
  size_t at = text.find("posture: POSTURE_ALLOWLIST");
  if (at != std::string::npos) text.replace(at, 26, "posture: POSTURE_NONE");
  return dir.Write(name + ".textproto", text);
}

const std::pair<const char*, const char*> kShipped[] = {
    {"untrusted-code-read", "ro"}, {"trusted-code-write", "rw"}, {"untrusted-code-write", "copy"}};

// Issue 14, item 11: the shipped profiles' secret patterns hide what they name at any
// depth, as a monorepo holds them (packages/api/.env), in every workspace mode.
TEST_F(Hidden, ShippedPatternsHideSecretsAtAnyDepth) {
  ScratchDir profiles;
  for (const auto& [name, mode] : kShipped) {
    ScratchDir ws;
    for (const char* d : {"packages", "packages/api", "deploy", "deploy/tls"}) {
      ASSERT_EQ(mkdir((ws.path() + "/" + d).c_str(), 0755), 0) << d;
    }
    for (const char* f : {"packages/api/.env", "packages/api/.env.local", "deploy/id_rsa.pem",
                          "deploy/tls/server.key", "packages/.npmrc"}) {
      ws.Write(f, std::string(kSecret) + "\n");
    }
    ws.Write("packages/api/index.js", "public\n");
    RunCommand({"chown", "-R", "1234:1234", ws.path()});
    auto r = Sh(kReadAll + std::string("; cat packages/api/.env deploy/id_rsa.pem 2>&1; true"),
                {"--profile", Shipped(name, profiles), "--workspace", ws.path()});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("./packages/api/index.js: public"), std::string::npos) << r.out;
  }
}

// Issue 14, item 11: what editors and agents run or trust later on the host (.vscode/,
// .idea/, .claude/, .mcp.json, .envrc, .gitmodules) cannot be written, made or moved away
// in a writable workspace, whether the workspace has it or not.
TEST_F(Hidden, ShippedProfilesHoldEditorAndAgentSettings) {
  ScratchDir profiles;
  for (const auto& [name, mode] : kShipped) {
    if (std::string(mode) == "ro") continue;
    ScratchDir ws;
    ASSERT_EQ(mkdir((ws.path() + "/.vscode").c_str(), 0755), 0);
    ws.Write(".vscode/settings.json", "{}\n");
    ws.Write("a.txt", "hello\n");
    RunCommand({"chown", "-R", "1234:1234", ws.path()});
    const char* const attacks[] = {
        "echo evil > .vscode/settings.json", "echo evil > .vscode/tasks.json",
        "rm -rf .vscode", "mv .vscode v", "mkdir -p .idea", "echo x > .idea/workspace.xml",
        "mkdir -p .claude", "echo evil > .claude/settings.json", "echo evil > .mcp.json",
        "echo evil > .envrc", "echo evil > .gitmodules"};
    std::string script = "cd /workspace; ";
    for (const char* cmd : attacks) {
      script += std::string("if (") + cmd + ") 2>/dev/null; then echo 'CHANGED: " + cmd + "'; fi; ";
    }
    script += "cat .vscode/settings.json; echo ok > a.txt";
    auto r = Sh(script, {"--profile", Shipped(name, profiles), "--workspace", ws.path()});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.out, "{}\n") << mode;
    EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.vscode/settings.json"), "{}\n") << mode;
    EXPECT_EQ(RunCommand({"ls", "-A", ws.path()}).out, ".vscode\na.txt\n") << mode;
  }
}


// .envrc is both hidden (.env*) and protected in the shipped writable profiles: it reads as
// nothing and stays as it was on the host in every mode; in a copy it is brig's
// placeholder, a FIFO no one may open.
TEST_F(Hidden, AnEnvrcIsHiddenAndHeldInEveryMode) {
  ScratchDir profiles;
  for (const auto& [name, mode] : kShipped) {
    ScratchDir ws;
    ws.Write(".envrc", std::string("export TOKEN=") + kSecret + "\n");
    RunCommand({"chown", "-R", "1234:1234", ws.path()});
    auto r = Sh("cd /workspace; cat .envrc; (echo evil > .envrc) 2>/dev/null; cat .envrc; "
                "stat -c '%s' .envrc",
                {"--profile", Shipped(name, profiles), "--workspace", ws.path()});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << mode << ": " << r.out;
    EXPECT_EQ(r.out.find("evil"), std::string::npos) << mode << ": " << r.out;
    EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.envrc"),
              std::string("export TOKEN=") + kSecret + "\n");
  }
}

// A unix socket a host process listens on, or a FIFO a host process reads, in the
// workspace (an agent's or an editor's socket, git's fsmonitor, a dev server's control
// pipe) is no way out of the sandbox in any workspace mode: connect(2) needs only write
// permission on the socket, which a read-only mount does not take away, and a FIFO opens
// for writing there too. The host side hears nothing.
TEST_F(Hidden, HostSocketsAndFifosInTheWorkspaceAreOutOfReach) {
  for (const std::string profile : {"workspace-ro", "hidden-ro", "workspace-rw", "hidden-rw",
                                    "workspace-rw-protected", "workspace-copy", "hidden-copy"}) {
    ScratchDir ws;
    ASSERT_EQ(mkdir((ws.path() + "/run").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((ws.path() + "/.git").c_str(), 0755), 0);
    ws.Write("brig-probe", ReadFileOrEmpty(ProbeBinary()), 0755);
    RunCommand({"chown", "-R", "1234:1234", ws.path()});
    HostIpc ipc(ws.path(), ".git/fsmonitor--daemon.ipc", "run/cmd.fifo");
    ASSERT_TRUE(ipc.ok());
    auto r = Sh("cd /workspace; ./brig-probe unix /workspace/.git/fsmonitor--daemon.ipc; "
                "./brig-probe fifo /workspace/run/cmd.fifo",
                {"--profile", SourceRoot() + "/tests/host/profiles/" + profile + ".textproto",
                 "--workspace", ws.path()});
    ASSERT_EQ(r.exit_code, 0) << profile << ": " << r.err;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << profile << ": " << r.out;
    EXPECT_FALSE(ipc.Connected()) << profile << ": the host's socket took a connection from "
                                  << "inside; the probe said: " << r.out;
    EXPECT_FALSE(ipc.Written()) << profile << ": the host's FIFO got a byte from inside; "
                                << "the probe said: " << r.out;
  }
}

// Each socket or FIFO held is a mount: past 1,000 the run is refused before anything runs,
// naming the first and the count; a copy, which needs no mount for them, runs.
TEST_F(Hidden, TooManySocketsAndFifosAreRefused) {
  ScratchDir ws;
  for (int i = 0; i < 1001; ++i) {
    ASSERT_EQ(mkfifo((ws.path() + "/p" + std::to_string(i)).c_str(), 0666), 0);
  }
  RunCommand({"chown", "-R", "1234:1234", ws.path()});
  auto r = Sh("echo RAN", {"--profile", SourceRoot() + "/tests/host/profiles/workspace-ro.textproto",
                           "--workspace", ws.path()});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("1001 unix sockets and FIFOs are in the workspace"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(ws.path() + "/p"), std::string::npos) << r.err;
  auto copy = Sh("echo RAN", {"--profile", Profile("copy"), "--workspace", ws.path()});
  EXPECT_EQ(copy.out, "RAN\n") << copy.err;
}

}  // namespace
}  // namespace brig::testing
