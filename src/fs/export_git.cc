// The git side of --export-changes (export_git.h). The child is brig's own fork: it clones
// the trees it needs while still in the host's mount namespace, builds its /tmp as root,
// hands it to the workspace's owner, drops to that owner and only then runs git. It must
// not return into brig: it answers on a pipe and _exits.
#include "fs/export_git.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <set>

#include "security/caps.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

namespace brig::fs {
namespace {

// The child's tmpfs, over /tmp in its own mount namespace only.
constexpr char kRoot[] = "/tmp";
// Where git writes its error messages, read back when it fails.
constexpr char kStderr[] = "/tmp/git-stderr";
// The largest .gitignore brig copies: more than any real one.
constexpr size_t kMaxIgnoreFile = 4 << 20;
constexpr char kConfig[] = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
constexpr char kConfigSha256[] =
    "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = "
    "sha256\n";

Status WriteAt(int dir, const std::string& name, const std::string& data) {
  sys::UniqueFd fd(
      openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return SysError("export: create", name);
  for (size_t done = 0; done < data.size();) {
    ssize_t w = write(fd.get(), data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return SysError("export: write", name);
    done += static_cast<size_t>(w);
  }
  return {};
}

// A regular file at `path` below `dir`, reached without a symlink, read whole; nothing if
// there is none (or it is larger than any .gitignore).
std::optional<std::string> ReadBeneath(int dir, const std::string& path) {
  auto fd = sys::Openat2(dir, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW,
                         RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  struct stat st;
  if (!fd || fstat(fd->get(), &st) < 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (static_cast<size_t>(st.st_size) > kMaxIgnoreFile) return std::nullopt;
  auto data = util::ReadFd(fd->get(), 0);
  if (!data) return std::nullopt;
  return std::move(*data);
}

// A read-only clone of the tree at `fd`, made in the host's mount namespace.
Result<sys::UniqueFd> CloneReadOnly(int fd, const std::string& what) {
  sys::UniqueFd tree = BRIG_TRY(sys::OpenTree(fd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH));
  BRIG_TRY(sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH,
                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                 MOUNT_ATTR_NOEXEC,
                             0, what));
  return tree;
}

// git/: HEAD, a config of built-in defaults, empty objects and refs; the source's
// info/exclude and split-index files as links into o/, which git follows as the owner.
// Returns whether the source has a .git directory (so an index to read).
Result<bool> WriteGitDir(int root, int source) {
  for (const char* d : {"git", "git/objects", "git/refs", "git/info", "w", "o", "n"}) {
    if (mkdirat(root, d, 0755) < 0) return SysError("export: mkdir", d);
  }
  BRIG_TRY(WriteAt(root, "git/HEAD", "ref: refs/heads/brig\n"));
  BRIG_TRY(WriteAt(root, "git/config", kConfig));
  auto dotgit = sys::Openat2(source, ".git", O_RDONLY | O_DIRECTORY,
                             RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  if (!dotgit) return false;
  if (symlinkat("/tmp/o/.git/info/exclude", root, "git/info/exclude") < 0) {
    return SysError("export: symlink", "git/info/exclude");
  }
  for (const std::string& name : util::ListDir(dotgit->get())) {
    if (name.rfind("sharedindex.", 0) != 0) continue;
    if (symlinkat(("/tmp/o/.git/" + name).c_str(), root, ("git/" + name).c_str()) < 0) {
      return SysError("export: symlink", name);
    }
  }
  return true;
}

// w/: the copy's .gitignore in every directory on the way to one of `paths` (the top's
// too), where it is a regular file reached without a symlink: what git status would read
// there. And paths: `paths` for git check-ignore --stdin -z.
Status WriteWorkTree(int root, int merged, const std::vector<GitPath>& paths) {
  std::set<std::string> dirs = {""};
  std::string list;
  for (const auto& p : paths) {
    list += p.path + '\0';
    for (size_t i = p.path.find('/'); i != std::string::npos; i = p.path.find('/', i + 1)) {
      dirs.insert(p.path.substr(0, i));
    }
  }
  BRIG_TRY(WriteAt(root, "paths", list));
  sys::UniqueFd w(openat(root, "w", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!w) return SysError("export: open", "w");
  for (const std::string& d : dirs) {  // a directory sorts before everything in it
    if (!d.empty() && mkdirat(w.get(), d.c_str(), 0755) < 0) return SysError("export: mkdir", d);
    std::string name = d.empty() ? ".gitignore" : d + "/.gitignore";
    if (auto data = ReadBeneath(merged, name)) BRIG_TRY(WriteAt(w.get(), name, *data));
  }
  return {};
}

// The child's mount namespace and /tmp, everything in it the owner's, o/ and n/ attached.
Result<bool> SetUpRoot(const GitTrees& t, const std::vector<GitPath>& paths, sys::UniqueFd o,
                       sys::UniqueFd n) {
  if (unshare(CLONE_NEWNS) < 0) return SysError("export: unshare", "a mount namespace for git");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    return SysError("export: make mounts private", "/");
  }
  if (mount("tmpfs", kRoot, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") < 0) {
    return SysError("export: mount", "a tmpfs for git");
  }
  sys::UniqueFd root(open(kRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysError("export: open", kRoot);
  bool index = BRIG_TRY(WriteGitDir(root.get(), t.source));
  BRIG_TRY(WriteWorkTree(root.get(), t.merged, paths));
  BRIG_TRY(util::ChownTreeAt(root.get(), ".", t.uid, t.gid, kRoot));
  BRIG_TRY(sys::MoveMount(o.get(), "", root.get(), "o", MOVE_MOUNT_F_EMPTY_PATH));
  BRIG_TRY(sys::MoveMount(n.get(), "", root.get(), "n", MOVE_MOUNT_F_EMPTY_PATH));
  return index;
}

// From here on the child is the workspace's owner, with no capability left and no way to
// gain one, even as uid 0 (a root-owned workspace): every set empty, the bounding set
// too, so no execve gives root's back; no_new_privs.
Status DropTo(uid_t uid, gid_t gid) {
  if (auto s = security::ApplyCredentials({.uid = uid, .gid = gid, .no_new_privs = true}); !s) {
    return std::move(s).error().Wrap("export: become the workspace's owner " + std::to_string(uid));
  }
  if (chdir(kRoot) < 0) return SysError("export: chdir", kRoot);
  return {};
}

struct GitRun {
  int status = 0;
  std::string out;
};

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> c;
  for (auto& s : v) c.push_back(s.data());
  c.push_back(nullptr);
  return c;
}

// git `args` in kRoot with stdin from `in`: built-in defaults and brig's git dir only, no
// fsmonitor, hook, pager, prompt or optional lock.
Result<GitRun> RunGit(const std::vector<std::string>& args, const char* in, bool index) {
  std::vector<std::string> argv = {"git", "-c", "core.fsmonitor=false", "-c",
                                   "core.hooksPath=/dev/null", "-c", "core.quotepath=false"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {
      "PATH=/usr/bin:/bin",      "HOME=/nonexistent",          "LC_ALL=C",
      "GIT_CONFIG_NOSYSTEM=1",   "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
      "GIT_DIR=/tmp/git",        "GIT_WORK_TREE=/tmp/w",       "GIT_OPTIONAL_LOCKS=0",
      "GIT_TERMINAL_PROMPT=0",   "GIT_NO_REPLACE_OBJECTS=1"};
  if (index) env.push_back("GIT_INDEX_FILE=/tmp/o/.git/index");
  std::vector<char*> cargv = CStrings(argv), cenv = CStrings(env);
  sys::FdPair out = BRIG_TRY(sys::FdPair::Pipe(true, "export: git"));
  sys::UniqueFd r = out.TakeParentEnd(), w = out.TakeChildEnd();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, w.get(), 1);
  posix_spawn_file_actions_addopen(&fa, 2, kStderr, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  int rc = posix_spawnp(&pid, "git", &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return SysError("export: run", "git " + args.front());
  }
  w.Reset();
  GitRun run;
  int st = sys::ReadAllAndReap(r.get(), pid, run.out);
  run.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return run;
}

Error GitFailed(const std::string& what, const std::string& subject, const GitRun& run) {
  auto read = util::ReadFile(kStderr);
  std::string err = read ? read->substr(0, read->find('\n')) : "";
  return Fail("export: git " + what, subject,
              "exited with status " + std::to_string(run.status) + (err.empty() ? "" : ": " + err));
}

// A sha256 repository's index is read only by a git dir of that object format.
Status MatchObjectFormat() {
  GitRun run = BRIG_TRY(RunGit({"config", "--file", "/tmp/o/.git/config", "--get",
                                "extensions.objectformat"},
                               "/dev/null", false));
  if (run.status != 0 || run.out.rfind("sha256", 0) != 0) return {};
  return WriteAt(AT_FDCWD, "/tmp/git/config", kConfigSha256);
}

// The patch of one path, "o/PATH" against "n/PATH" (or /dev/null for a side that lacks
// it), as git diff --no-index writes it, with no external diff and no textconv.
Result<std::string> DiffOne(const GitPath& p) {
  std::string a = p.old_exists ? "o/" + p.path : "/dev/null";
  std::string b = p.new_exists ? "n/" + p.path : "/dev/null";
  GitRun run = BRIG_TRY(RunGit({"diff", "--no-index", "--binary", "--no-ext-diff",
                                "--no-textconv", "--no-color", "--", a, b},
                               "/dev/null", false));
  if (run.status > 1) return GitFailed("diff", p.path, run);  // 0: the same, 1: differences
  return std::move(run.out);
}

// As the owner: the answer's body, each ignored path and "\0", "\0", the raw patch.
Result<std::string> Classify(const std::vector<GitPath>& paths, bool index) {
  if (index) BRIG_TRY(MatchObjectFormat());
  std::vector<std::string> args = {"check-ignore", "--stdin", "-z"};
  if (!index) args.push_back("--no-index");
  GitRun run = BRIG_TRY(RunGit(args, "/tmp/paths", index));
  if (run.status > 1) return GitFailed("check-ignore", "", run);  // 1: none ignored
  std::set<std::string> ignored;
  for (size_t at = 0, end; (end = run.out.find('\0', at)) != std::string::npos; at = end + 1) {
    ignored.insert(run.out.substr(at, end - at));
  }
  std::string answer;
  for (const auto& p : paths) {
    if (ignored.count(p.path)) answer += p.path + '\0';
  }
  answer += '\0';
  for (const auto& p : paths) {
    if (!ignored.count(p.path)) answer += BRIG_TRY(DiffOne(p));
  }
  return answer;
}

[[noreturn]] void ChildMain(const GitTrees& t, const std::vector<GitPath>& paths, int out) {
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the supervisor's signalfd blocks some
  Result<std::string> r = [&]() -> Result<std::string> {
    sys::UniqueFd o = BRIG_TRY(CloneReadOnly(t.source, "the source"));
    sys::UniqueFd n = BRIG_TRY(CloneReadOnly(t.files, "files/"));
    bool index = BRIG_TRY(SetUpRoot(t, paths, std::move(o), std::move(n)));
    BRIG_TRY(DropTo(t.uid, t.gid));
    return Classify(paths, index);
  }();
  std::string answer = r ? "O" + *r : "E" + r.error().Render();
  for (size_t done = 0; done < answer.size();) {
    ssize_t w = write(out, answer.data() + done, answer.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) break;
    done += static_cast<size_t>(w);
  }
  _exit(r ? 0 : 1);
}

}  // namespace

Result<GitChanges> DiffForGit(const GitTrees& trees, const std::vector<GitPath>& paths) {
  sys::FdPair report = BRIG_TRY(sys::FdPair::Pipe(true, "export"));
  sys::UniqueFd r = report.TakeParentEnd(), w = report.TakeChildEnd();
  pid_t pid = fork();
  if (pid < 0) return SysError("export: fork", "git");
  if (pid == 0) ChildMain(trees, paths, w.get());
  w.Reset();
  std::string out;
  int st = sys::ReadAllAndReap(r.get(), pid, out);
  if (!out.empty() && out[0] == 'E') {
    return Fail("export", "git.diff", out.substr(1));
  }
  if (out.empty() || out[0] != 'O' || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    return Fail("export", "git.diff", "git's helper process died");
  }
  GitChanges c;
  size_t at = 1;
  for (size_t end; (end = out.find('\0', at)) != std::string::npos && end > at; at = end + 1) {
    c.ignored.push_back(out.substr(at, end - at));
  }
  c.patch = out.substr(at + 1);
  return c;
}

}  // namespace brig::fs
