// The writable workspaces (issue 7). A copy ("--workspace-mode copy"): the sandbox works on
// an overlay over the source, and the source is byte for byte what it was afterwards:
// contents, modes, owners, mtimes and xattrs. --export-changes writes what changed, and its
// git diff applies in the source to give what the sandbox left. Each test tries to change
// the source. A read-write workspace: the protected paths hold there too, and what brig
// puts in the source to hold them is gone afterwards, even after a SIGKILL (brig gc).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

#include "host/host_fixture.h"
#include "sys/fd.h"

namespace brig::testing {
namespace {

class WorkspaceCopy : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (RunCommand({"git", "--version"}).exit_code != 0) GTEST_SKIP() << "needs git";
  }
  // brig run with the copy workspace: the read-write test profile narrowed to a copy.
  RunOutput Copy(const std::string& ws, const std::string& script,
                 std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--profile", RwProfile(), "--workspace", ws,
                                     "--workspace-mode", "copy"};
    args.insert(args.end(), more.begin(), more.end());
    return Sh(script, args);
  }
};

// Everything about a tree that a change could touch, a line per entry, sorted.
std::string Snapshot(const std::string& root, const std::string& rel = "") {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::ostringstream out;
  for (const auto& n : names) {
    std::string path = rel.empty() ? n : rel + "/" + n;
    std::string full = root + "/" + path;
    struct stat st;
    if (lstat(full.c_str(), &st) < 0) continue;
    out << path << " mode=" << std::oct << st.st_mode << std::dec << " uid=" << st.st_uid
        << " gid=" << st.st_gid << " size=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "."
        << st.st_mtim.tv_nsec << " nlink=" << st.st_nlink;
    char xattrs[4096];
    ssize_t len = llistxattr(full.c_str(), xattrs, sizeof xattrs);
    for (ssize_t i = 0; i < len; i += static_cast<ssize_t>(strlen(xattrs + i)) + 1) {
      char value[256] = {};
      (void)!lgetxattr(full.c_str(), xattrs + i, value, sizeof value - 1);
      out << " " << (xattrs + i) << "=" << value;
    }
    if (S_ISREG(st.st_mode)) out << " content=" << ReadFileOrEmpty(full);
    if (S_ISLNK(st.st_mode)) {
      char t[4096] = {};
      (void)!readlink(full.c_str(), t, sizeof t - 1);
      out << " -> " << t;
    }
    out << "\n";
    if (S_ISDIR(st.st_mode)) out << Snapshot(root, path);
  }
  return out.str();
}

// A source with something of every kind to change, owned by an unprivileged user.
void Populate(const ScratchDir& ws) {
  ws.Write("a.txt", "hello\n");
  ws.Write("keep.txt", "kept\n");
  ws.Write("script.sh", "#!/bin/sh\necho hi\n", 0755);
  ASSERT_EQ(mkdir((ws.path() + "/sub").c_str(), 0750), 0);
  ws.Write("sub/deep.txt", "deep\n");
  ASSERT_EQ(mkdir((ws.path() + "/gone").c_str(), 0755), 0);
  ws.Write("gone/one", "1\n");
  ws.Write("gone/two", "2\n");
  ASSERT_EQ(symlink("a.txt", (ws.path() + "/link").c_str()), 0);
  // tmpfs has user xattrs only since Linux 6.6: where /tmp cannot hold one, the snapshot
  // simply has none to compare.
  if (setxattr((ws.path() + "/a.txt").c_str(), "user.brig", "tagged", 6, 0) != 0) {
    ASSERT_EQ(errno, EOPNOTSUPP) << strerror(errno);
  }
  // Old, exact mtimes, so a touch of any kind would show.
  RunCommand({"touch", "-h", "-d", "2001-02-03 04:05:06.123456789", ws.path() + "/a.txt",
              ws.path() + "/sub", ws.path() + "/link", ws.path() + "/keep.txt"});
  RunCommand({"chown", "-hR", "1234:2345", ws.path()});
}

// Every way a workload changes files, as one script.
constexpr char kChanges[] =
    "set -e; echo more >> a.txt; echo new > new.txt; rm keep.txt; chmod 600 script.sh; "
    "mv sub/deep.txt sub/moved.txt; rm -r gone; mkdir -p made/inner; echo x > made/inner/f; "
    "ln -sf keep.txt link; touch -d '2020-01-01' sub; "
    "setfattr -n user.brig -v changed a.txt 2>/dev/null || true; "
    "printf '\\000\\001\\002' > bin.dat; cat a.txt";

TEST_F(WorkspaceCopy, TheSourceIsUnchangedWhateverTheSandboxDoes) {
  ScratchDir ws;
  Populate(ws);
  std::string before = Snapshot(ws.path());
  auto r = Copy(ws.path(), kChanges);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\nmore\n") << "the sandbox sees its own changes";
  EXPECT_EQ(Snapshot(ws.path()), before);
  // And a second run starts from the source again: nothing was kept.
  auto again = Copy(ws.path(), "cat a.txt; ls");
  EXPECT_EQ(again.out, "hello\na.txt\ngone\nkeep.txt\nlink\nscript.sh\nsub\n") << again.err;
}

TEST_F(WorkspaceCopy, FilesItMakesBelongToTheSandboxInsideAndNobodyOutside) {
  ScratchDir ws;
  Populate(ws);
  auto r = Copy(ws.path(), "echo x > mine; stat -c '%u %g' mine a.txt; id -u");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1000 1000\n1000 1000\n1000\n");
  EXPECT_NE(access((ws.path() + "/mine").c_str(), F_OK), 0);
}

// Device nodes and set-id programs in the source stay inert inside: the overlay is nodev
// and nosuid like every writable tree of the sandbox.
TEST_F(WorkspaceCopy, DeviceNodesAndSetuidProgramsInTheSourceAreInert) {
  ScratchDir ws;
  ASSERT_EQ(mknod((ws.path() + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string id = ws.path() + "/setuid-id";
  ASSERT_EQ(RunCommand({"cp", "/usr/bin/id", id}).exit_code, 0);
  ASSERT_EQ(chmod(id.c_str(), 04755), 0);
  auto r = Copy(ws.path(), "echo x > null && echo WROTE; cat null && echo READ; ./setuid-id -u");
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("READ"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1000\n"), std::string::npos) << r.out << r.err;
}

TEST_F(WorkspaceCopy, ExportedChangesRoundTripThroughGitApply) {
  ScratchDir ws, out, twin;
  Populate(ws);
  ASSERT_EQ(RunCommand({"sh", "-c", "cd " + ws.path() + " && git init -q && git -c safe.directory='*' add -A && "
                        "git -c safe.directory='*' -c user.email=t@test -c user.name=t "
                        "commit -qm init && "
                        "chown -R 1234:2345 ."}).exit_code, 0);
  std::string before = Snapshot(ws.path());
  std::string exported = out.path() + "/changes";
  auto r = Copy(ws.path(), kChanges, {"--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Snapshot(ws.path()), before);

  EXPECT_EQ(ReadFileOrEmpty(exported + "/deleted"), "gone\nkeep.txt\nsub/deep.txt\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/a.txt"), "hello\nmore\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/made/inner/f"), "x\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/files/bin.dat"), std::string("\0\1\2", 3));
  struct stat st;
  ASSERT_EQ(stat((exported + "/files/script.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // The same changes made for real, in a read-write twin of the source: applying the
  // export to another twin must give the same tree.
  std::string made = twin.path() + "/made", applied = twin.path() + "/applied";
  for (const auto& dir : {made, applied}) {
    ASSERT_EQ(RunCommand({"cp", "-a", ws.path(), dir}).exit_code, 0);
  }
  auto rw = Sh(kChanges, {"--profile", RwProfile(), "--workspace", made});
  ASSERT_EQ(rw.exit_code, 0) << rw.err;
  auto apply = RunCommand({"git", "-c", "safe.directory=*", "-C", applied, "apply", "--binary",
                           exported + "/git.diff"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err << ReadFileOrEmpty(exported + "/git.diff");
  // Contents, kinds, modes and names; mtimes and owners differ by who made them.
  auto tree = [](const std::string& dir) {
    return RunCommand({"sh", "-c", "cd " + dir + " && find . -path ./.git -prune -o -type d "
                       "-printf '%p d\\n' -o -printf '%p %y %m %l\\n' | sort && find . -path "
                       "./.git -prune -o -type f -exec sha256sum {} + | sort"}).out;
  };
  // git records no directory (nor its mode) and no file mode but 644/755: compare what
  // it carries.
  std::string want = tree(made), got = tree(applied);
  RunCommand({"sh", "-c", "cd " + made + " && find . -type d -empty -delete; chmod 644 script.sh"});
  RunCommand({"sh", "-c", "cd " + applied + " && chmod 644 script.sh"});
  EXPECT_EQ(tree(applied), tree(made)) << "before normalising:\n" << want << "---\n" << got;
}

// Entering a copy costs nothing per file: after the sandbox has read every file of a large
// source, nothing has been copied (the export is empty).
TEST_F(WorkspaceCopy, ALargeSourceIsNotCopied) {
  ScratchDir ws, out;
  ASSERT_EQ(RunCommand({"python3", "-c",
                        "import os, sys\n"
                        "for d in range(100):\n"
                        "    os.mkdir(f'{sys.argv[1]}/d{d}')\n"
                        "    for f in range(1000):\n"
                        "        open(f'{sys.argv[1]}/d{d}/f{f}', 'w').write('x')\n",
                        ws.path()}).exit_code, 0);
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string exported = out.path() + "/changes";
  auto r = Copy(ws.path(), "find . -type f | wc -l; cat d7/f7", {"--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "100000\nx");
  EXPECT_EQ(RunCommand({"find", exported + "/files", "-mindepth", "1"}).out, "");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/deleted"), "");
}

std::string CopyProfile() { return SourceRoot() + "/tests/host/profiles/workspace-copy.textproto"; }

// A git work tree with a hook and a config, owned by an unprivileged user.
void GitSource(const ScratchDir& ws) {
  ASSERT_EQ(RunCommand({"git", "init", "-q", ws.path()}).exit_code, 0);
  ws.Write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  ws.Write("a.txt", "hello\n");
  RunCommand({"chown", "-hR", "1234:1234", ws.path()});
}

// Protected paths (the profile's, untrusted-code-write's defaults) cannot be written,
// created, removed, or moved out of the way with a directory above them, whether or not
// the source has them; and none of the attempts reaches the source.
TEST_F(WorkspaceCopy, ProtectedPathsResistEveryWayToChangeThem) {
  ScratchDir ws;
  GitSource(ws);
  std::string before = Snapshot(ws.path());
  const std::pair<const char*, const char*> attacks[] = {
      {"config", "echo '[core]' >> .git/config"},
      {"hook", "echo evil > .git/hooks/pre-commit"},
      {"new-hook", "echo evil > .git/hooks/post-checkout"},
      {"rm-config", "rm -f .git/config"},
      {"rm-hooks", "rm -rf .git/hooks"},
      {"mv-git", "mv .git .git-old"},
      {"mv-hooks", "mv .git/hooks .git/hooks-old"},
      {"rm-git", "rm -rf .git"},
      {"husky", "mkdir .husky"},
      {"husky-file", "echo x > .husky/pre-commit"},
      {"gitmodules", "echo '[submodule]' > .gitmodules"},
      {"rm-gitmodules", "rm -f .gitmodules"},
      {"brig", "mkdir -p .brig/x"},
      {"chmod", "chmod 777 .git/hooks"},
  };
  std::string script = "cd /workspace; ";
  for (const auto& [name, cmd] : attacks) {
    script += std::string("if (") + cmd + ") 2>/dev/null; then echo CHANGED " + name + "; fi; ";
  }
  script += "cat .git/hooks/pre-commit; echo ok > a.txt; cat a.txt; ls -A .git/hooks";
  auto r = Sh(script, {"--profile", CopyProfile(), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("CHANGED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#!/bin/sh\nexit 0\nok\n"), std::string::npos)
      << "the rest of the copy stays writable: " << r.out;
  EXPECT_EQ(Snapshot(ws.path()), before);
}

// A symlink planted where a protected path would be (to /etc, or up and out of the
// workspace) is replaced in the copy by brig's placeholder (a FIFO no one may open):
// nothing is reached through it, and nothing can be made there.
TEST_F(WorkspaceCopy, ASymlinkAtAProtectedPathLeadsNowhere) {
  ScratchDir ws;
  GitSource(ws);
  ASSERT_EQ(RunCommand({"rm", "-rf", ws.path() + "/.git/hooks"}).exit_code, 0);
  ASSERT_EQ(symlink("/etc", (ws.path() + "/.git/hooks").c_str()), 0);
  ASSERT_EQ(symlink("../../../../..", (ws.path() + "/.husky").c_str()), 0);
  ASSERT_EQ(symlink("/proc/self/root", (ws.path() + "/.brig").c_str()), 0);
  RunCommand({"chown", "-hR", "1234:1234", ws.path()});
  std::string before = Snapshot(ws.path());
  auto r = Sh("cd /workspace; for p in .git/hooks .husky .brig; do stat -c '%n %F %s' $p; "
              "ls $p/ 2>/dev/null && echo LISTED $p; (echo x > $p/planted) 2>/dev/null && "
              "echo WROTE $p; done; true",
              {"--profile", CopyProfile(), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ".git/hooks fifo 0\n.husky fifo 0\n.brig fifo 0\n");
  EXPECT_EQ(Snapshot(ws.path()), before);
}

// A workspace that is no git work tree gets an unwritable .git in the copy (so no hooks or
// config can be made under it), and one whose .git is a file (a linked worktree) keeps it,
// read-only.
TEST_F(WorkspaceCopy, AMissingOrFileGitIsHeldToo) {
  ScratchDir plain, worktree;
  plain.Write("a.txt", "hello\n");
  worktree.Write(".git", "gitdir: /nowhere/.git/worktrees/w\n");
  for (const auto* ws : {&plain, &worktree}) {
    RunCommand({"chown", "-R", "1234:1234", ws->path()});
    std::string before = Snapshot(ws->path());
    auto r = Sh("cd /workspace; for c in 'mkdir -p .git/hooks' 'git init -q .' 'rm -f .git' "
                "'echo x > .git' 'mv .git .git2'; do (sh -c \"$c\") 2>/dev/null && echo \"DID $c\"; "
                "done; stat -c '%F' .git; cat .git; echo done",
                {"--profile", CopyProfile(), "--workspace", ws->path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("DID"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(ws == &plain ? "fifo" : "regular file"), std::string::npos) << r.out;
    EXPECT_EQ(Snapshot(ws->path()), before);
  }
}

// What brig put at protected paths is not a change of the sandbox's: an export holds only
// what the workload did.
TEST_F(WorkspaceCopy, AnExportLeavesProtectedPathsOut) {
  ScratchDir ws, out;
  GitSource(ws);
  std::string exported = out.path() + "/changes";
  auto r = Sh("echo more >> a.txt", {"--profile", CopyProfile(), "--workspace", ws.path(),
                                     "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunCommand({"sh", "-c", "cd " + exported + "/files && find . -type f | sort"}).out,
            "./a.txt\n");
  EXPECT_EQ(ReadFileOrEmpty(exported + "/deleted"), "");
  std::string diff = ReadFileOrEmpty(exported + "/git.diff");
  EXPECT_NE(diff.find("+more"), std::string::npos) << diff;
  EXPECT_EQ(diff.find(".husky"), std::string::npos) << diff;
  EXPECT_EQ(diff.find(".gitmodules"), std::string::npos) << diff;
}

TEST_F(WorkspaceCopy, ABadExportDirIsRefusedBeforeAnythingRuns) {
  ScratchDir ws, out;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string marker = out.path() + "/ran";
  for (const auto& [dir, why] : std::vector<std::pair<std::string, std::string>>{
           {out.path(), "already exists"},
           {ws.path() + "/changes", "inside the workspace"},
           {out.path() + "/no/such/dir", "No such file or directory"}}) {
    auto r = Copy(ws.path(), "true", {"--export-changes", dir});
    EXPECT_EQ(r.exit_code, 125) << dir;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  auto ro = Sh("true", {"--workspace", ws.path(), "--export-changes", out.path() + "/c"});
  EXPECT_EQ(ro.exit_code, 125);
  EXPECT_NE(ro.err.find("needs a copy workspace"), std::string::npos) << ro.err;
  EXPECT_NE(access((out.path() + "/c").c_str(), F_OK), 0);
}

// A directory for --copy-dir: a scratch directory on /tmp's filesystem (this host's disk),
// or, where /tmp is itself an overlay (the vm tier), which cannot hold an upper layer, one
// on /run's tmpfs.
class CopyDir {
 public:
  CopyDir() {
    struct statfs fs;
    if (statfs("/tmp", &fs) == 0 && fs.f_type == 0x794c7630 /* OVERLAYFS_SUPER_MAGIC */) {
      char tmpl[] = "/run/brig-test.XXXXXX";
      path_ = mkdtemp(tmpl) ? tmpl : "";
      own_ = true;
    } else {
      path_ = dir_.path();
    }
  }
  ~CopyDir() {
    if (own_) RunCommand({"rm", "-rf", path_});
  }
  const std::string& path() const { return path_; }
  // What is in it now, a name a line.
  std::string List() const { return RunCommand({"ls", "-A", path_}).out; }

 private:
  ScratchDir dir_;
  std::string path_;
  bool own_ = false;
};

// --copy-dir: the changes live on disk under a directory of brig's (root's, 0700), past the
// --tmp-size a tmpfs copy has; they export as they do from a tmpfs, the source is
// unchanged, and the directory is gone afterwards.
TEST_F(WorkspaceCopy, ACopyDirHoldsTheChangesOnDiskAndGoes) {
  ScratchDir ws, out;
  Populate(ws);
  CopyDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::string before = Snapshot(ws.path());
  std::string exported = out.path() + "/changes";
  auto r = Copy(ws.path(),
                "set -e; head -c 3000000 /dev/zero > big; stat -c %s big; " + std::string(kChanges),
                {"--copy-dir", dir.path(), "--tmp-size", "1M", "--export-changes", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "3000000\nhello\nmore\n");
  EXPECT_EQ(Snapshot(ws.path()), before);
  EXPECT_EQ(dir.List(), "") << "the scratch directory outlived the run";
  struct stat st;
  ASSERT_EQ(stat((exported + "/files/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 3000000);
  EXPECT_EQ(ReadFileOrEmpty(exported + "/deleted"), "gone\nkeep.txt\nsub/deep.txt\n");
}

// While the sandbox runs, no one but root can enter its scratch directory; after a SIGKILL
// of brig it is left, and brig gc removes it.
TEST_F(WorkspaceCopy, ACopyDirIsRootsAloneAndBrigGcRemovesIt) {
  ScratchDir ws, logs;
  Populate(ws);
  CopyDir dir;
  std::string marker = "sleep 6" + std::to_string(getpid() % 1000);
  pid_t pid = SpawnBrig({"run", "--profile", RwProfile(), "--workspace", ws.path(),
                         "--workspace-mode", "copy", "--copy-dir", dir.path(), "--",
                         "sh", "-c", "echo x > made; exec " + marker},
                        logs.path());
  Eventually([&] { return !FindProcesses(marker).empty(); });
  std::string name = dir.List();
  kill(pid, SIGKILL);
  WaitExit(pid);
  ASSERT_EQ(name.rfind("brig-", 0), 0u) << name;
  name.pop_back();
  struct stat st;
  ASSERT_EQ(lstat((dir.path() + "/" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  SettleUntilGone(marker);
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed scratch " + dir.path() + "/" + name), std::string::npos) << gc.out;
  EXPECT_EQ(dir.List(), "");
}

TEST_F(WorkspaceCopy, ABadCopyDirIsRefusedBeforeAnythingRuns) {
  ScratchDir ws, other;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string file = other.Write("file", "x");
  for (const auto& [dir, why] : std::vector<std::pair<std::string, std::string>>{
           {other.path() + "/missing", "No such file or directory"},
           {file, "not a directory"},
           {ws.path(), "inside the workspace"}}) {
    auto r = Copy(ws.path(), "touch /tmp/ran; echo RAN", {"--copy-dir", dir});
    EXPECT_EQ(r.exit_code, 125) << dir;
    EXPECT_NE(r.err.find("--copy-dir"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  auto rw = Sh("echo RAN", {"--profile", RwProfile(), "--workspace", ws.path(), "--copy-dir",
                            other.path()});
  EXPECT_EQ(rw.exit_code, 125);
  EXPECT_NE(rw.err.find("needs a copy workspace"), std::string::npos) << rw.err;
  EXPECT_EQ(other.path().empty() ? "" : RunCommand({"ls", other.path()}).out, "file\n");
}

// The read-write workspace with trusted-code-write's protected paths.
class WorkspaceRw : public WorkspaceCopy {
 protected:
  static std::string Profile() {
    return SourceRoot() + "/tests/host/profiles/workspace-rw-protected.textproto";
  }
};

// The same attacks as on a copy: none changes a protected path, wherever it is or is not
// in the workspace, while the rest of the workspace is written for real (rm -rf .git
// removes all of it that is not protected). Afterwards the workspace holds the sandbox's
// changes and nothing of brig's.
TEST_F(WorkspaceRw, ProtectedPathsResistEveryWayToChangeThem) {
  ScratchDir ws;
  GitSource(ws);
  std::string hooks = Snapshot(ws.path() + "/.git/hooks");
  std::string config = ReadFileOrEmpty(ws.path() + "/.git/config");
  const char* const attacks[] = {
      "echo '[core]' >> .git/config", "echo evil > .git/hooks/pre-commit",
      "echo evil > .git/hooks/post-checkout", "rm -f .git/config", "rm -rf .git/hooks",
      "mv .git .git-old", "mv .git/hooks .git/hooks-old", "rm -rf .git", "rm -f .husky",
      "mkdir .husky", "echo x > .husky/pre-commit", "echo '[submodule]' > .gitmodules",
      "rm -f .gitmodules", "mkdir -p .brig/x", "chmod 777 .git/hooks", "mv .brig brig2",
      "ln .husky hardlink", "chmod 644 .husky", "touch .git/hooks/pre-commit"};
  std::string script = "cd /workspace; ";
  for (const char* cmd : attacks) {
    script += std::string("if (") + cmd + ") 2>/dev/null; then echo 'CHANGED: " + cmd + "'; fi; ";
  }
  script += "stat -c '%n %F %s' .husky .brig .gitmodules; echo ok > a.txt";
  auto r = Sh(script, {"--profile", Profile(), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ".husky fifo 0\n.brig fifo 0\n.gitmodules fifo 0\n");
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/a.txt"), "ok\n") << "the workspace is written";
  EXPECT_EQ(Snapshot(ws.path() + "/.git/hooks"), hooks);
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.git/config"), config);
  EXPECT_EQ(RunCommand({"ls", "-A", ws.path()}).out, ".git\na.txt\n");
  EXPECT_EQ(RunCommand({"ls", "-A", ws.path() + "/.git"}).out, "config\nhooks\n");
}

// A workspace without .git gets an unwritable .git for the run, and a symlink planted at a
// protected path is refused before anything runs, with the placeholders made before it
// removed again.
TEST_F(WorkspaceRw, AMissingGitIsHeldAndASymlinkIsRefused) {
  ScratchDir plain;
  plain.Write("a.txt", "hello\n");
  RunCommand({"chown", "-R", "1234:1234", plain.path()});
  auto r = Sh("cd /workspace; for c in 'mkdir -p .git/hooks' 'git init -q .' 'rm -f .git'; do "
              "(sh -c \"$c\") 2>/dev/null && echo \"DID $c\"; done; stat -c '%F' .git",
              {"--profile", Profile(), "--workspace", plain.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "fifo\n");
  EXPECT_EQ(RunCommand({"ls", "-A", plain.path()}).out, "a.txt\n");

  ScratchDir ws;
  GitSource(ws);
  ASSERT_EQ(symlink("/etc", (ws.path() + "/.husky").c_str()), 0);
  std::string before = Snapshot(ws.path());
  auto refused = Sh("echo RAN; touch /workspace/ran",
                    {"--profile", Profile(), "--workspace", ws.path()});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find(ws.path() + "/.husky': a symlink at a protected path"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(Snapshot(ws.path()), before) << "a placeholder was left behind";
}

// After a SIGKILL of brig the placeholders are still in the workspace; brig gc removes
// them, but never a file the workspace's owner put there since.
TEST_F(WorkspaceRw, BrigGcRemovesPlaceholdersAndNothingElse) {
  ScratchDir ws, logs;
  GitSource(ws);
  std::string before = Snapshot(ws.path());
  std::string marker = "sleep 7" + std::to_string(getpid() % 1000);
  pid_t pid = SpawnBrig({"run", "--profile", Profile(), "--workspace", ws.path(), "--", "sh",
                         "-c", "exec " + marker},
                        logs.path());
  Eventually([&] { return !FindProcesses(marker).empty(); });
  std::string during = RunCommand({"ls", "-A", ws.path()}).out;
  kill(pid, SIGKILL);
  WaitExit(pid);
  SettleUntilGone(marker);
  EXPECT_EQ(during, ".brig\n.git\n.gitmodules\n.husky\na.txt\n");
  // The owner replaces one placeholder with a file of their own.
  ASSERT_EQ(unlink((ws.path() + "/.brig").c_str()), 0);
  ws.Write(".brig", "mine\n", 0444);
  auto gc = RunBrig({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed placeholder " + ws.path() + "/.husky"), std::string::npos)
      << gc.out;
  EXPECT_EQ(gc.out.find(".brig"), std::string::npos) << gc.out;
  EXPECT_EQ(RunCommand({"ls", "-A", ws.path()}).out, ".brig\n.git\na.txt\n");
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/.brig"), "mine\n");
  ASSERT_EQ(unlink((ws.path() + "/.brig").c_str()), 0);
  EXPECT_EQ(Snapshot(ws.path()), before);
}


// Issue 14, item 5. A file of the workspace that is also a file outside it (a hard link,
// as a home directory's .bashrc linked into a checkout) is one inode: a write through the
// workspace's name would change the file outside. Every attempt fails, and the outside
// file is unchanged; a link whose other name is in the workspace too stays writable.
constexpr char kLinkAttacks[] =
    "cd /workspace; for c in 'echo evil >> bashrc' 'echo evil > bashrc' 'truncate -s 0 bashrc' "
    "'chmod 666 bashrc && echo evil >> bashrc' 'ln bashrc again && echo evil >> again' "
    "'cp /dev/null bashrc' 'dd if=/dev/zero of=bashrc bs=1 count=1 conv=notrunc'; do "
    "(sh -c \"$c\") 2>/dev/null && echo \"WROTE: $c\"; done; "
    "echo ok >> pair-a; cat pair-b";

void LinkedOutside(const ScratchDir& ws, const ScratchDir& home) {
  home.Write(".bashrc", "# mine\n");
  ws.Write("a.txt", "hello\n");
  ws.Write("pair-a", "pair\n");
  ASSERT_EQ(link((home.path() + "/.bashrc").c_str(), (ws.path() + "/bashrc").c_str()), 0);
  ASSERT_EQ(link((ws.path() + "/pair-a").c_str(), (ws.path() + "/pair-b").c_str()), 0);
  RunCommand({"chown", "-R", "1234:1234", ws.path(), home.path()});
}

TEST_F(WorkspaceRw, NoWriteLeavesThroughAHardLink) {
  ScratchDir ws, home;
  LinkedOutside(ws, home);
  auto r = Sh(kLinkAttacks, {"--profile", RwProfile(), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "pair\nok\n");
  EXPECT_EQ(ReadFileOrEmpty(home.path() + "/.bashrc"), "# mine\n");
  struct stat st;
  ASSERT_EQ(stat((home.path() + "/.bashrc").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// In a copy the first write copies the file up into brig's scratch space, which breaks
// the link: the sandbox changes its copy, never the file outside.
TEST_F(WorkspaceCopy, AHardLinkToAFileOutsideIsCopiedUpNotWrittenThrough) {
  ScratchDir ws, home;
  LinkedOutside(ws, home);
  auto r = Copy(ws.path(), kLinkAttacks + std::string("; cat bashrc"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("WROTE: echo evil >> bashrc"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFileOrEmpty(home.path() + "/.bashrc"), "# mine\n");
  EXPECT_EQ(ReadFileOrEmpty(ws.path() + "/pair-b"), "pair\n");
}

// A local git clone hard-links its objects to the source repository's: the clone works
// in a read-write workspace (status, commit, log), and no object of the source can be
// changed through it.
TEST_F(WorkspaceRw, ALocalGitCloneWorksAndItsSourceStaysAsItWas) {
  ScratchDir src, ws;
  const std::string git = "git -c safe.directory='*' -c user.email=t@test -c user.name=t ";
  ASSERT_EQ(RunCommand({"sh", "-c", "cd " + src.path() + " && git init -q && echo a > a.txt && " +
                        git + "add a.txt && " + git + "commit -qm one && " + git + "clone -q " +
                        src.path() + " " + ws.path() + " && chown -R 1234:1234 . " + ws.path()})
                .exit_code,
            0);
  std::string linked = RunCommand({"find", ws.path() + "/.git/objects", "-type", "f",
                                   "-links", "+1"}).out;
  ASSERT_NE(linked, "") << "git clone made no hard links here";
  std::string before = Snapshot(src.path());
  auto r = Sh("cd /workspace; export HOME=/tmp; " + git + "status --short; echo b >> a.txt; " +
                  git + "commit -qam two && " + git + "log --oneline | wc -l; "
                  "find .git/objects -type f -links +1 | while read f; do "
                  "(chmod u+w $f && echo evil >> $f) 2>/dev/null && echo \"WROTE $f\"; done; true",
              {"--profile", RwProfile(), "--workspace", ws.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(Snapshot(src.path()), before);
  EXPECT_EQ(RunCommand({"git", "-c", "safe.directory=*", "-C", src.path(), "fsck"}).exit_code, 0);
}


// Past 1,000 files that are hard links to files outside, the run is refused before
// anything runs, naming the first and the count; nothing is left in the workspace.
TEST_F(WorkspaceRw, TooManyHardLinksOutsideAreRefused) {
  ScratchDir ws, store;
  for (int i = 0; i < 1001; ++i) {
    std::string name = "f" + std::to_string(i);
    store.Write(name, "x\n");
    ASSERT_EQ(link((store.path() + "/" + name).c_str(), (ws.path() + "/" + name).c_str()), 0);
  }
  RunCommand({"chown", "-R", "1234:1234", ws.path(), store.path()});
  auto r = Sh("echo RAN", {"--profile", RwProfile(), "--workspace", ws.path()});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("1001 files of the read-write workspace are hard links to files "
                       "outside it"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(ws.path() + "/f"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--workspace-mode copy"), std::string::npos) << r.err;
  auto copy = Copy(ws.path(), "echo evil >> f1; echo RAN");
  EXPECT_EQ(copy.out, "RAN\n") << copy.err;
  EXPECT_EQ(ReadFileOrEmpty(store.path() + "/f1"), "x\n");
}

// Every set-uid or set-gid entry under `root`, with its owner, a line each, unless it is
// `uid`'s (set-uid) or `gid`'s (set-gid).
std::string ForeignSetIds(const std::string& root, uid_t uid, gid_t gid) {
  auto r = RunCommand({"find", root, "-perm", "/6000", "-printf", "%p %U %G %m\\n"});
  std::istringstream in(r.out);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    struct stat st;
    if (lstat(line.substr(0, line.find(' ')).c_str(), &st) < 0) continue;
    if (((st.st_mode & S_ISUID) && st.st_uid != uid) || ((st.st_mode & S_ISGID) && st.st_gid != gid)) {
      out += line + "\n";
    }
  }
  return out;
}

// The sandbox user is a host user of its own, from brig's range, neither root nor the
// workspace's owner (issue 27, item 4): its namespaces and counts are its own. What it makes
// in a read-write workspace, or exports from a copy, is the owner's on disk all the same
// (the workspace is mounted id-mapped), and no set-uid or set-gid file there belongs to
// anyone else: chown and chmod of a file that is not its own fail inside.
TEST_F(WorkspaceRw, TheSandboxUserIsAHostUserOfItsOwnAndItsFilesAreTheOwners) {
  const std::string attack =
      "awk '{print $1, $2, $3}' /proc/self/uid_map; "
      "echo data > /workspace/made && mkdir /workspace/dir && cp /bin/true /workspace/prog && "
      "chmod 4755 /workspace/prog && chmod 2775 /workspace/dir && "
      "stat -c '%u %g' /workspace/made; "
      "chown 0:0 /workspace/prog 2>/dev/null && echo CHOWNED; "
      "chown 1000:0 /workspace/dir 2>/dev/null && echo CHGRPED; "
      "chmod 4755 /workspace/roots 2>/dev/null && echo ROOTS-SETUID; "
      "cp -p /workspace/roots /workspace/copy-of-roots && stat -c '%u' /workspace/copy-of-roots";
  for (const bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "copy" : "rw");
    ScratchDir ws, out;
    ws.Write("roots", "root's\n");
    ASSERT_EQ(chown(ws.path().c_str(), 1234, 2345), 0);
    const std::string exported = out.path() + "/changes";
    std::vector<std::string> args = {"--profile", RwProfile(), "--workspace", ws.path()};
    if (copy) args.insert(args.end(), {"--workspace-mode", "copy", "--export-changes", exported});
    auto r = Sh(attack, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    uint64_t inside = 0, host = 0, count = 0;
    lines >> inside >> host >> count;
    EXPECT_EQ(inside, 1000u) << r.out;
    EXPECT_EQ(count, 1u) << r.out;
    EXPECT_NE(host, 0u) << r.out;
    if (IdMappable(ws.path())) {
      EXPECT_NE(host, 1234u) << "the sandbox user is the workspace's owner on the host: "
                             << r.out;
      EXPECT_GE(host, 1879048192u) << "not from brig's default range: " << r.out;
    } else {
      // brig-run(1): where the workspace cannot be mounted id-mapped, the sandbox user is
      // its owner on the host, as before (its namespaces are still its own uid's).
      EXPECT_EQ(host, 1234u) << "no id-mapped mount here, yet not the owner: " << r.out;
    }
    EXPECT_NE(r.out.find("\n1000 1000\n1000\n"), std::string::npos)
        << "inside, what it makes is its own: " << r.out;
    for (const char* refused : {"CHOWNED", "CHGRPED", "ROOTS-SETUID"}) {
      EXPECT_EQ(r.out.find(refused), std::string::npos) << r.out;
    }
    const std::string made = copy ? exported + "/files" : ws.path();
    for (const char* name : {"made", "dir", "prog", "copy-of-roots"}) {
      struct stat st;
      ASSERT_EQ(lstat((made + "/" + name).c_str(), &st), 0) << name;
      EXPECT_EQ(st.st_uid, 1234u) << name;
      EXPECT_EQ(st.st_gid, 2345u) << name;
    }
    EXPECT_EQ(ForeignSetIds(ws.path(), 1234, 2345), "");
    if (copy) {
      EXPECT_EQ(ForeignSetIds(exported, 1234, 2345), "");
    }
    struct stat roots;
    ASSERT_EQ(lstat((ws.path() + "/roots").c_str(), &roots), 0);
    EXPECT_EQ(roots.st_uid, 0u);
    EXPECT_EQ(roots.st_mode & 07777, 0644u);
  }
}

}  // namespace
}  // namespace brig::testing
