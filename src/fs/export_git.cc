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
#include "util/parse.h"

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

// The regular files under `from` (a directory of the copy's changes) into `to`, by fd,
// never following a symlink; directories as they come, anything else left out.
Status CopyFiles(int from, int to, const std::string& path) {
  for (const std::string& name : util::ListDir(from)) {
    struct stat st;
    if (fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    if (S_ISDIR(st.st_mode)) {
      sys::UniqueFd sub(
          openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) return SysError("export: open", path + "/" + name);
      if (mkdirat(to, name.c_str(), 0755) < 0 && errno != EEXIST) {
        return SysError("export: mkdir", path + "/" + name);
      }
      sys::UniqueFd dst(openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!dst) return SysError("export: open", path + "/" + name);
      BRIG_TRY(CopyFiles(sub.get(), dst.get(), path + "/" + name));
    } else if (S_ISREG(st.st_mode)) {
      sys::UniqueFd in(openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!in) return SysError("export: open", path + "/" + name);
      std::string data = BRIG_TRY(util::ReadFd(in.get(), 0));
      BRIG_TRY(WriteAt(to, name, data));
    }
  }
  return {};
}

// Where the copy's HEAD moved, git's objects: what the sandbox added, copied from the
// copy's changes (its .git/objects in the overlay's upper layer, info/ and its alternates
// left out), and the source's own through git/objects/info/alternates, at o/.
Status WriteCommitsDir(int root, int upper) {
  auto objects = sys::Openat2(upper, ".git/objects", O_RDONLY | O_DIRECTORY,
                              RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  sys::UniqueFd to(openat(root, "git/objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!to) return SysError("export: open", "git/objects");
  if (objects) {
    for (const std::string& name : util::ListDir(objects->get())) {
      if (name == "info") continue;
      sys::UniqueFd one(
          openat(objects->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!one) continue;  // a file or a whiteout: not an object directory
      if (mkdirat(to.get(), name.c_str(), 0755) < 0) return SysError("export: mkdir", name);
      sys::UniqueFd dst(openat(to.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dst) return SysError("export: open", name);
      BRIG_TRY(CopyFiles(one.get(), dst.get(), ".git/objects/" + name));
    }
  }
  if (mkdirat(root, "git/objects/info", 0755) < 0) {
    return SysError("export: mkdir", "git/objects/info");
  }
  return WriteAt(root, "git/objects/info/alternates", "/tmp/o/.git/objects\n");
}

// The child's mount namespace and /tmp, everything in it the owner's, o/ and n/ attached;
// with `commits`, the copy's objects named for git (WriteCommitsDir).
Result<bool> SetUpRoot(const GitTrees& t, const std::vector<GitPath>& paths, sys::UniqueFd o,
                       sys::UniqueFd n, bool commits) {
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
  if (commits) BRIG_TRY(WriteCommitsDir(root.get(), t.upper));
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

// The copy's commits from `old` (none: the source has no commit) to `now`, as the owner:
// brig's ref "sandbox" set to `now`, format-patch's mbox, and the bundle of that ref.
Status Commits(const std::optional<std::string>& old, const std::string& now, GitChanges& c) {
  GitRun set = BRIG_TRY(RunGit({"update-ref", "refs/heads/sandbox", now}, "/dev/null", false));
  if (set.status != 0) return GitFailed("update-ref", now, set);
  std::string range = old ? *old + "..refs/heads/sandbox" : "refs/heads/sandbox";
  std::vector<std::string> args = {"format-patch", "--stdout", "--no-color", "--binary"};
  if (old) {
    args.push_back(range);
  } else {
    args.insert(args.end(), {"--root", "refs/heads/sandbox"});
  }
  GitRun mbox = BRIG_TRY(RunGit(args, "/dev/null", false));
  if (mbox.status != 0) return GitFailed("format-patch", range, mbox);
  c.mbox = std::move(mbox.out);
  if (c.mbox.empty()) return {};  // HEAD moved back, or onto the source's history only
  std::vector<std::string> bundle = {"bundle", "create", "-q", "/tmp/commits.bundle",
                                     "refs/heads/sandbox"};
  if (old) bundle.push_back("^" + *old);
  GitRun made = BRIG_TRY(RunGit(bundle, "/dev/null", false));
  if (made.status != 0) return GitFailed("bundle", range, made);
  c.bundle = BRIG_TRY(util::ReadFile("/tmp/commits.bundle"));
  return {};
}

// A length, ":" and the bytes: the answer's fields, each whatever it holds.
std::string Field(const std::string& s) { return std::to_string(s.size()) + ":" + s; }

std::optional<std::string> NextField(const std::string& in, size_t& at) {
  size_t colon = in.find(':', at);
  if (colon == std::string::npos) return std::nullopt;
  auto n = util::ParseLimit(in.substr(at, colon - at));
  if (!n || *n > in.size() - colon - 1) return std::nullopt;
  at = colon + 1 + *n;
  return in.substr(colon + 1, *n);
}

[[noreturn]] void ChildMain(const GitTrees& t, const std::vector<GitPath>& paths, int out) {
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the supervisor's signalfd blocks some
  Result<std::string> r = [&]() -> Result<std::string> {
    sys::UniqueFd o = BRIG_TRY(CloneReadOnly(t.source, "the source"));
    sys::UniqueFd n = BRIG_TRY(CloneReadOnly(t.files, "files/"));
    // The copy's commits, where its HEAD is another commit than the source's.
    std::optional<std::string> old = HeadCommit(t.source), now = HeadCommit(t.merged);
    bool commits = now && now != old;
    bool index = BRIG_TRY(SetUpRoot(t, paths, std::move(o), std::move(n), commits));
    BRIG_TRY(DropTo(t.uid, t.gid));
    std::string classified = BRIG_TRY(Classify(paths, index));
    GitChanges c;
    if (commits) BRIG_TRY(Commits(old, *now, c));
    return Field(classified) + Field(c.mbox) + Field(c.bundle);
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

bool IsObjectHash(std::string_view h) {
  return (h.size() == 40 || h.size() == 64) &&
         h.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::optional<GitHead> ParseHead(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  if (IsObjectHash(line)) return GitHead{std::string(line), ""};
  if (line.substr(0, 10) != "ref: refs/") return std::nullopt;
  std::string_view ref = line.substr(5);
  if (ref.find("..") != std::string_view::npos || ref.back() == '/' ||
      ref.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") !=
          std::string_view::npos) {
    return std::nullopt;
  }
  return GitHead{"", std::string(ref)};
}

std::optional<std::string> PackedRef(std::string_view packed, std::string_view ref) {
  for (std::string_view l : util::Split(packed, '\n')) {
    size_t space = l.find(' ');
    if (space != std::string_view::npos && l.substr(space + 1) == ref &&
        IsObjectHash(l.substr(0, space))) {
      return std::string(l.substr(0, space));
    }
  }
  return std::nullopt;
}

std::optional<std::string> HeadCommit(int root) {
  auto text = ReadBeneath(root, ".git/HEAD");
  if (!text) return std::nullopt;
  std::optional<GitHead> head = ParseHead(*text);
  if (!head || !head->hash.empty()) return head ? std::optional(head->hash) : std::nullopt;
  if (auto loose = ReadBeneath(root, ".git/" + head->ref)) {
    std::string hash = loose->substr(0, loose->find('\n'));
    return IsObjectHash(hash) ? std::optional(hash) : std::nullopt;
  }
  auto packed = ReadBeneath(root, ".git/packed-refs");
  return packed ? PackedRef(*packed, head->ref) : std::nullopt;
}

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
  size_t field = 1;
  std::optional<std::string> classified = NextField(out, field), mbox = NextField(out, field),
                             bundle = NextField(out, field);
  if (!classified || !mbox || !bundle)
    return Fail("export", "git.diff", "git's helper's answer is cut");
  GitChanges c;
  c.mbox = std::move(*mbox);
  c.bundle = std::move(*bundle);
  const std::string& in = *classified;
  size_t at = 0;
  for (size_t end; (end = in.find('\0', at)) != std::string::npos && end > at; at = end + 1) {
    c.ignored.push_back(in.substr(at, end - at));
  }
  c.patch = in.substr(at + 1);
  return c;
}

}  // namespace brig::fs
