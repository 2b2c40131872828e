// Issue 16, items 4 and 5, as a harness author meets them with the shipped
// untrusted-code-write profile (its filesystem section; no network, so no test world): the
// export of a copy belongs to the workspace's owner, who applies git.diff with git apply;
// git.diff holds what git status would show, the ignored files listed beside it; git
// never runs a program the workspace's git config names; brig's placeholders at missing
// protected paths are seen by no git, inside or in the export.
#include <sys/stat.h>
#include <unistd.h>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

// A uid and gid no one on the host has: the workspace's owner.
constexpr uid_t kOwner = 4242;

class Export : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (RunCommand({"git", "--version"}).exit_code != 0) GTEST_SKIP() << "needs git";
    if (RunCommand({"setpriv", "--version"}).exit_code != 0) GTEST_SKIP() << "needs setpriv";
  }
  // A shipped profile with its filesystem section as shipped and no network.
  std::string Shipped(const std::string& name) {
    std::string text =
        ReadFileOrEmpty(SourceRoot() + "/policies/profiles/" + name + ".textproto");
    size_t at = text.find("posture: POSTURE_ALLOWLIST");
    if (at != std::string::npos) text.replace(at, 26, "posture: POSTURE_NONE");
    return profiles_.Write(name + ".textproto", text);
  }
  // A git repository at `ws` with `files` committed (ignored or not), all of it the owner's.
  void Repo(const ScratchDir& ws, const std::vector<std::pair<std::string, std::string>>& files) {
    for (const auto& [name, data] : files) ws.Write(name, data);
    ASSERT_EQ(RunCommand({"sh", "-c", "cd " + ws.path() + " && git init -q && git -c "
                          "safe.directory='*' add -A -f && git -c safe.directory='*' -c "
                          "user.email=t@test -c user.name=t commit -qm init"})
                  .exit_code,
              0);
    Own(ws.path());
  }
  static void Own(const std::string& path) {
    ASSERT_EQ(RunCommand({"chown", "-R", std::to_string(kOwner) + ":" + std::to_string(kOwner),
                          path}).exit_code, 0);
  }
  // `command` run as the owner, as a harness running as that user would.
  static RunOutput AsOwner(const std::vector<std::string>& command) {
    std::vector<std::string> argv = {"setpriv", "--reuid", std::to_string(kOwner), "--regid",
                                     std::to_string(kOwner), "--clear-groups", "env",
                                     "HOME=/nonexistent"};
    argv.insert(argv.end(), command.begin(), command.end());
    return RunCommand(argv);
  }

 private:
  ScratchDir profiles_;
};

// Edit a file, add one, install dependencies into node_modules/ (ignored by .gitignore):
// the export is the owner's, git.diff applies as the owner in a fresh clone and holds the
// edits and the new file (a tracked file is diffed even where .gitignore matches it, as
// git status shows it), node_modules/ is listed in ignored.txt with sizes and is in files/.
TEST_F(Export, BelongsToTheOwnerAndAppliesAsGitStatusSeesIt) {
  ScratchDir ws, out;
  ASSERT_EQ(mkdir((ws.path() + "/dist").c_str(), 0755), 0);
  Repo(ws, {{".gitignore", "node_modules/\ndist/\n"}, {"app.js", "one\n"},
            {"dist/tracked.js", "built\n"}});
  Own(out.path());
  std::string clone = out.path() + "/clone", exported = out.path() + "/changes";
  auto cloned = AsOwner({"git", "clone", "-q", ws.path(), clone});
  ASSERT_EQ(cloned.exit_code, 0) << cloned.err;
  auto r = Sh("cd /workspace; echo two >> app.js; echo new > NEW.md; echo again >> "
              "dist/tracked.js; mkdir -p node_modules/pkg; "
              "echo 'module.exports=1' > node_modules/pkg/index.js; "
              "head -c 3000 /dev/zero > node_modules/pkg/big.bin",
              {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
               "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(stat(exported.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOwner);
  EXPECT_EQ(st.st_gid, kOwner);
  EXPECT_EQ(RunCommand({"find", exported, "!", "-uid", std::to_string(kOwner), "-o", "!",
                        "-gid", std::to_string(kOwner)}).out,
            "")
      << "entries of the export that are not the owner's";
  std::string diff = ReadFileOrEmpty(exported + "/git.diff");
  EXPECT_NE(diff.find("+two"), std::string::npos) << diff;
  EXPECT_NE(diff.find("b/NEW.md"), std::string::npos) << diff;
  EXPECT_NE(diff.find("+again"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("node_modules"), std::string::npos) << diff;
  EXPECT_EQ(ReadFileOrEmpty(exported + "/ignored.txt"),
            "3000\tnode_modules/pkg/big.bin\n17\tnode_modules/pkg/index.js\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/node_modules/pkg/index.js"), "module.exports=1\n");
  auto check = AsOwner({"git", "-C", clone, "apply", "--check", exported + "/git.diff"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  auto apply = AsOwner({"git", "-C", clone, "apply", exported + "/git.diff"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_EQ(ReadFileOrEmpty(clone + "/app.js"), "one\ntwo\n");
  EXPECT_EQ(ReadFileOrEmpty(clone + "/NEW.md"), "new\n");
  EXPECT_EQ(ReadFileOrEmpty(clone + "/dist/tracked.js"), "built\nagain\n");
}

// Issue 32, item 5: the agent commits in its copy. Its commits come out as a format-patch
// series (commits.mbox, which git am takes in a clone of the source) and a bundle
// (commits.bundle, whose ref "sandbox" git fetch takes); git.diff stays the working tree's
// change against the source. The copy's own refs and config go nowhere (its .git/hooks is
// the profile's protected path): no git of brig's reads them, and the clone's branch is
// where it was until the owner fetches.
TEST_F(Export, CommitsMadeInTheCopyComeOutAsASeriesAndABundle) {
  ScratchDir ws, out;
  Repo(ws, {{"app.js", "one\n"}});
  Own(out.path());
  std::string clone = out.path() + "/clone", exported = out.path() + "/changes";
  ASSERT_EQ(AsOwner({"git", "clone", "-q", ws.path(), clone}).exit_code, 0);
  auto r =
      Sh("cd /workspace && g() { git -c user.email=agent@test -c user.name=agent \"$@\"; } && "
         "echo two >> app.js && g commit -qam 'agent: two' && "
         "echo three >> app.js && g commit -qam 'agent: three' && "
         "echo wip > WIP.md",
         {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
          "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string mbox = ReadFileOrEmpty(exported + "/commits.mbox");
  EXPECT_NE(mbox.find("Subject: [PATCH 1/2] agent: two"), std::string::npos) << mbox;
  EXPECT_NE(mbox.find("Subject: [PATCH 2/2] agent: three"), std::string::npos) << mbox;
  struct stat st;
  ASSERT_EQ(stat((exported + "/commits.bundle").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOwner);
  std::string diff = ReadFileOrEmpty(exported + "/git.diff");
  EXPECT_NE(diff.find("b/WIP.md"), std::string::npos) << diff;
  auto am = AsOwner({"git", "-C", clone, "-c", "user.email=o@test", "-c", "user.name=o", "am", "-q",
                     exported + "/commits.mbox"});
  ASSERT_EQ(am.exit_code, 0) << am.err;
  EXPECT_EQ(ReadFileOrEmpty(clone + "/app.js"), "one\ntwo\nthree\n");
  auto fetched =
      AsOwner({"git", "-C", clone, "fetch", "-q", exported + "/commits.bundle", "sandbox:agent"});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  auto log = AsOwner({"git", "-C", clone, "log", "--format=%s", "agent"});
  EXPECT_EQ(log.out, "agent: three\nagent: two\ninit\n");
  // The source's own repository did not move.
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/app.js"), "one\n");
  // Without a commit, no series and no bundle.
  std::string plain = out.path() + "/plain";
  r = Sh("echo x >> /workspace/app.js", {"--profile", Shipped("untrusted-code-write"),
                                         "--workspace", ws.path(), "--export-changes", plain});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(access((plain + "/commits.mbox").c_str(), F_OK), 0);
  EXPECT_NE(access((plain + "/commits.bundle").c_str(), F_OK), 0);
}

// The copy's repository is the sandbox's: with a profile that leaves .git writable, the
// agent commits, then writes a config git would refuse to read (an unknown repository
// format) and that names a program (fsmonitor), and a hook. The export still has the
// commit, made by a git that read none of it (git fails on that config): nothing ran, and
// the series holds the agent's commit only.
TEST_F(Export, TheCopysConfigAndHooksAreNeverReadForItsCommits) {
  ScratchDir ws, out;
  Repo(ws, {{"app.js", "one\n"}});
  Own(out.path());
  std::string text =
      ReadFileOrEmpty(SourceRoot() + "/policies/profiles/untrusted-code-write.textproto");
  std::string open_git;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.find("protected_paths: \".git") == std::string::npos) open_git += line + "\n";
  }
  ScratchDir policy;
  std::string profile = policy.Write("open-git.textproto", open_git);
  std::string marker = out.path() + "/ran", exported = out.path() + "/changes";
  auto r =
      Sh("cd /workspace && echo two >> app.js && "
         "git -c user.email=a@test -c user.name=agent commit -qam 'agent: two' && "
         "printf '[core]\\n\\trepositoryformatversion = 99\\n\\tfsmonitor = touch " +
             marker +
             "\\n' > .git/config && "
             "printf '#!/bin/sh\\ntouch " +
             marker +
             "\\n' > .git/hooks/post-commit && "
             "chmod +x .git/hooks/post-commit",
         {"--profile", profile, "--workspace", ws.path(), "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string mbox = ReadFileOrEmpty(exported + "/commits.mbox");
  EXPECT_NE(mbox.find("Subject: [PATCH] agent: two"), std::string::npos) << mbox;
  EXPECT_EQ(mbox.find("Subject: [PATCH 2/"), std::string::npos) << mbox;
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "a program the copy's repository named ran";
}

// Issue 32, item 3: a harness running as root `git clone`s its checkouts, root's. A copy
// workspace takes one (it is read through an id map and never written); the export is the
// caller's, root's, and root's `git apply` takes it in the checkout itself, where a chown
// would have made git refuse ("dubious ownership"). What the sandbox tried to leave behind
// with set-id bits comes out without them.
TEST_F(Export, ARootOwnedCheckoutIsCopiedAndItsExportAppliesAsRoot) {
  ScratchDir ws, out;
  ws.Write("app.js", "one\n");
  ASSERT_EQ(RunCommand({"sh", "-c",
                        "cd " + ws.path() +
                            " && git init -q && git add -A && "
                            "git -c user.email=t@test -c user.name=t commit -qm init"})
                .exit_code,
            0);
  ASSERT_EQ(chmod(ws.path().c_str(), 0700), 0);
  std::string exported = out.path() + "/changes";
  auto r =
      Sh("cd /workspace; echo two >> app.js; cp /bin/true suid; chmod 6755 suid; "
         "mkdir d; chmod 2775 d; stat -c %a suid d",
         {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
          "--export-changes", exported});
  if (r.err.find("cannot be id-mapped") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "6755\n2775\n") << "the sandbox could not even try";
  struct stat st;
  ASSERT_EQ(stat(exported.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  ASSERT_EQ(stat((exported + "/files/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(stat((exported + "/files/d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07000, 0u);
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/app.js"), "one\n") << "the checkout was written";
  auto apply = RunCommand({"git", "-C", ws.path(), "apply", exported + "/git.diff"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/app.js"), "one\ntwo\n");
  // The same checkout read-write is still refused, naming the copy workspace.
  auto rw = Sh("true", {"--profile", Shipped("trusted-code-write"), "--workspace", ws.path()});
  EXPECT_EQ(rw.exit_code, 125);
  EXPECT_NE(rw.err.find("use a copy workspace (--workspace-mode copy, with --export-changes)"),
            std::string::npos)
      << rw.err;
}

// --export-owner gives the export to another user, whose clone takes git.diff; without
// --export-changes it is refused, as is a user the host does not know.
TEST_F(Export, ExportOwnerGivesTheExportToThatUser) {
  ScratchDir ws, out;
  Repo(ws, {{"app.js", "one\n"}});
  Own(out.path());
  std::string clone = out.path() + "/clone", exported = out.path() + "/changes";
  ASSERT_EQ(AsOwner({"git", "clone", "-q", ws.path(), clone}).exit_code, 0);
  ASSERT_EQ(RunCommand({"chown", "-R", "0:0", ws.path()}).exit_code, 0);
  auto r = Sh(
      "echo two >> /workspace/app.js",
      {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(), "--export-changes",
       exported, "--export-owner", std::to_string(kOwner) + ":" + std::to_string(kOwner)});
  if (r.err.find("cannot be id-mapped") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunCommand({"find", exported, "!", "-uid", std::to_string(kOwner), "-o", "!", "-gid",
                        std::to_string(kOwner)})
                .out,
            "");
  auto apply = AsOwner({"git", "-C", clone, "apply", exported + "/git.diff"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_EQ(ReadFileOrEmpty(clone + "/app.js"), "one\ntwo\n");
  auto lone = Sh("true", {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
                          "--export-owner", "root"});
  EXPECT_EQ(lone.exit_code, 125);
  EXPECT_NE(lone.err.find("--export-owner 'root': needs --export-changes"), std::string::npos)
      << lone.err;
  auto nobody =
      Sh("true", {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
                  "--export-changes", out.path() + "/x", "--export-owner", "no-such-user-here"});
  EXPECT_EQ(nobody.exit_code, 125);
  EXPECT_NE(nobody.err.find("no such user 'no-such-user-here'"), std::string::npos) << nobody.err;
  EXPECT_NE(access((out.path() + "/x").c_str(), F_OK), 0);
}

// A workspace whose git config names a program for everything git could run (fsmonitor,
// hooks, a diff driver and its textconv, a filter, a pager) and whose attributes select
// them for every file: exporting its changes runs none of them, nor those of a repository
// the export is written into.
// The export is handed to the owner without following a link: symlinks the sandbox left
// pointing at a root-owned host file and directory are the owner's as links, and their
// targets stay root's (a chown that followed them would give the owner any host file).
TEST_F(Export, HandingTheExportOverFollowsNoSymlink) {
  ScratchDir ws, out, victim;
  Repo(ws, {{"app.js", "one\n"}});
  Own(out.path());
  std::string file = victim.Write("secret", "root's\n", 0600);
  std::string exported = out.path() + "/changes";
  auto r = Sh("cd /workspace; ln -s " + file + " to-file; ln -s " + victim.path() + " to-dir",
              {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
               "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(lstat((exported + "/files/to-file").c_str(), &st), 0);
  ASSERT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_uid, kOwner) << "the link itself is the owner's";
  for (const std::string& target : {file, victim.path()}) {
    ASSERT_EQ(stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << target << " was handed to the owner through a symlink";
    EXPECT_EQ(st.st_gid, 0u) << target;
  }
}

TEST_F(Export, GitNeverRunsWhatTheWorkspacesConfigNames) {
  ScratchDir ws, out, marks;
  ASSERT_EQ(chmod(marks.path().c_str(), 0777), 0);
  std::string touch = "touch " + marks.path() + "/";
  Repo(ws, {{".gitattributes", "* diff=evil filter=evil\n"}, {"a.txt", "one\n"}});
  std::string config = "[core]\n\tfsmonitor = " + touch + "fsmonitor\n\thooksPath = " +
                       ws.path() + "/hooks\n\tpager = " + touch + "pager\n" +
                       "[diff \"evil\"]\n\ttextconv = " + touch + "textconv\n\tcommand = " +
                       touch + "diffcommand\n[diff]\n\texternal = " + touch + "external\n" +
                       "[filter \"evil\"]\n\tclean = " + touch + "clean\n\tsmudge = " + touch +
                       "smudge\n\tprocess = " + touch + "process\n";
  ws.Write(".git/config", config);
  ASSERT_EQ(mkdir((ws.path() + "/hooks").c_str(), 0755), 0);
  ws.Write("hooks/post-index-change", "#!/bin/sh\n" + touch + "hook\n", 0755);
  Own(ws.path());
  // The export's directory is in a repository of root's with the same configuration.
  ASSERT_EQ(RunCommand({"git", "init", "-q", out.path()}).exit_code, 0);
  out.Write(".git/config", config);
  out.Write(".gitattributes", "* diff=evil filter=evil\n");
  std::string dest = out.path() + "/changes";
  auto r = Sh("cd /workspace; echo two >> a.txt; echo x > b.txt",
              {"--profile", Shipped("untrusted-code-write"), "--workspace", ws.path(),
               "--export-changes", dest});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFileOrEmpty(dest + "/git.diff").find("+two"), std::string::npos);
  EXPECT_EQ(RunCommand({"ls", "-A", marks.path()}).out, "");
}

// In a copy and in a read-write workspace of a repository that has none of the protected
// paths (.husky, .gitmodules, .brig, .vscode, ...), git inside sees nothing brig put there:
// git status is empty, git add -A commits only the work's own file, and the export holds
// none of brig's placeholders.
TEST_F(Export, BrigsPlaceholdersAreInvisibleToGit) {
  for (const char* name : {"untrusted-code-write", "trusted-code-write"}) {
    ScratchDir ws, out;
    Repo(ws, {{"README", "hello\n"}});
    bool copy = std::string(name) == "untrusted-code-write";
    std::vector<std::string> args = {"--profile", Shipped(name), "--workspace", ws.path()};
    std::string exported = out.path() + "/changes";
    if (copy) args.insert(args.end(), {"--export-changes", exported});
    auto r = Sh("cd /workspace; git status --porcelain --ignored; echo --; echo x > new.txt; "
                "git add -A && git -c user.email=a@b -c user.name=a commit -qm work && "
                "git show --name-only --format= HEAD",
                args);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, "--\nnew.txt\n") << name;
    if (!copy) continue;
    auto found = RunCommand({"find", exported, "-name", ".husky", "-o", "-name", ".gitmodules",
                             "-o", "-name", ".brig", "-o", "-name", ".vscode", "-o", "-name",
                             ".mcp.json"});
    EXPECT_EQ(found.out, "");
    std::string diff = ReadFileOrEmpty(exported + "/git.diff");
    EXPECT_EQ(diff, "diff --git a/new.txt b/new.txt\nnew file mode 100644\n"
                    "index 0000000..587be6b\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n");
  }
}

}  // namespace
}  // namespace brig::testing
