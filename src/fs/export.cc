#include "fs/export.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "fs/host_marks.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

extern char** environ;

namespace brig::fs {
namespace {

struct Changes {
  std::vector<std::string> changed;  // regular files and symlinks, in files/
  std::vector<std::string> deleted;
  const std::vector<std::string>* skip = nullptr;  // the protected paths
  const std::vector<std::string>* hidden = nullptr;  // their whiteouts are brig's
};

// Whether `path` is one of `list` or below one.
bool UnderAny(const std::vector<std::string>& list, const std::string& path) {
  for (const auto& p : list) {
    if (path == p || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '/')) {
      return true;
    }
  }
  return false;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::vector<std::string> Names(int dirfd) {
  std::vector<std::string> out;
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) out.push_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status CopyFile(int from_dir, const std::string& name, int to_dir, mode_t mode,
                const std::string& rel) {
  sys::UniqueFd in(openat(from_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) return SysError("export: open", rel);
  sys::UniqueFd out(openat(to_dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           mode & 0777));
  if (!out) return SysError("export: create", rel);
  char buf[65536];
  for (;;) {
    ssize_t n = read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("export: read", rel);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out.get(), buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return SysError("export: write", rel);
      done += w;
    }
  }
  return {};
}

// Walks the upper dir `upper` (relative path `rel`) beside the source dir `lower` (-1 if the
// source has no such directory), mirroring it into `out`.
Status Walk(int upper, int lower, int out, const std::string& rel, Changes& c) {
  std::vector<std::string> names = Names(upper);
  for (const std::string& name : names) {
    std::string path = Join(rel, name);
    if (UnderAny(*c.skip, path)) continue;
    struct stat st;
    if (fstatat(upper, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
      return SysError("export: stat", path);
    }
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
      if (std::find(c.hidden->begin(), c.hidden->end(), path) != c.hidden->end()) continue;
      c.deleted.push_back(path);  // a whiteout
    } else if (S_ISDIR(st.st_mode)) {
      sys::UniqueFd sub(openat(upper, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) return SysError("export: open", path);
      if (mkdirat(out, name.c_str(), st.st_mode & 0777) < 0) return SysError("export: mkdir", path);
      sys::UniqueFd sub_out(openat(out, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_out) return SysError("export: open", path);
      sys::UniqueFd sub_lower;
      if (lower >= 0) {
        sub_lower.Reset(openat(lower, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      }
      // An opaque directory replaced the source's: what the source had there is gone (but a
      // hidden one's names stay unsaid).
      char opaque[2] = {};
      if (UnderAny(*c.hidden, path)) sub_lower.Reset();
      if (sub_lower && fgetxattr(sub.get(), "trusted.overlay.opaque", opaque, 1) == 1 &&
          opaque[0] == 'y') {
        std::vector<std::string> kept = Names(sub.get());
        for (const std::string& old : Names(sub_lower.get())) {
          std::string gone = Join(path, old);
          if (!std::binary_search(kept.begin(), kept.end(), old) && !UnderAny(*c.hidden, gone)) {
            c.deleted.push_back(gone);
          }
        }
        sub_lower.Reset();
      }
      BRIG_TRY(Walk(sub.get(), sub_lower.get(), sub_out.get(), path, c));
    } else if (S_ISREG(st.st_mode)) {
      BRIG_TRY(CopyFile(upper, name, out, st.st_mode, path));
      c.changed.push_back(path);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = readlinkat(upper, name.c_str(), target, sizeof target - 1);
      if (n < 0) return SysError("export: readlink", path);
      target[n] = '\0';
      if (symlinkat(target, out, name.c_str()) < 0) return SysError("export: symlink", path);
      c.changed.push_back(path);
    }
    // FIFOs and sockets carry no content; a sandbox cannot make device nodes.
  }
  return {};
}

std::string Escape(const std::string& path) {
  std::string out;
  for (char ch : path) {
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\\') {
      out += "\\\\";
    } else {
      out += ch;
    }
  }
  return out;
}

Status WriteAll(int dirfd, const char* name, const std::string& data, const std::string& dest) {
  sys::UniqueFd fd(openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return SysError("export: create", dest + "/" + name);
  for (size_t done = 0; done < data.size();) {
    ssize_t w = write(fd.get(), data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return SysError("export: write", dest + "/" + name);
    done += static_cast<size_t>(w);
  }
  return {};
}

bool InGitDir(const std::string& path) { return UnderAny({".git"}, path); }

// What `path` is in the source, reached without following any symlink on the way (the
// sandbox may have put a directory where the source has a link to elsewhere on the host):
// 0 if it is not there that way.
mode_t SourceType(int lower, const std::string& path) {
  auto fd = sys::Openat2(lower, path, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
  struct stat st;
  if (!fd || fstat(fd->get(), &st) < 0) return 0;
  return st.st_mode & S_IFMT;
}

// The regular files and symlinks below the source directory `rel`, links not followed.
void SourceFiles(int lower, const std::string& rel, std::vector<std::string>& out) {
  auto dir = sys::Openat2(lower, rel, O_RDONLY | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
  if (!dir) return;
  for (const std::string& name : Names(dir->get())) {
    std::string path = Join(rel, name);
    mode_t t = SourceType(lower, path);
    if (t == S_IFDIR) {
      SourceFiles(lower, path, out);
    } else if (t == S_IFREG || t == S_IFLNK) {
      out.push_back(path);
    }
  }
}

// `git diff --no-index --binary` of one path, source ("o/PATH" in `cwd`) against copy
// ("n/PATH"), with the "o/" and "n/" taken out of the headers so the patch applies in the
// source with `git apply`. git reads no configuration but its built-in defaults and runs
// no external diff or textconv: the copy's content is the sandbox's.
Result<std::string> GitDiff(const std::string& cwd, const std::string& path, bool old_exists,
                            bool new_exists) {
  // Both sides were checked to be reached without a symlink on the way (SourceType; files/
  // holds only directories brig made).
  std::string a = old_exists ? "o/" + path : "/dev/null";
  std::string b = new_exists ? "n/" + path : "/dev/null";
  std::vector<std::string> argv = {"git", "-c", "core.quotepath=false", "diff", "--no-index",
                                   "--binary", "--no-ext-diff", "--no-textconv", "--no-color",
                                   "--", a, b};
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1",
                                  "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"};
  std::vector<char*> cenv;
  for (auto& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return SysError("export: pipe");
  sys::UniqueFd r(p[0]), w(p[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, w.get(), 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid;
  int rc = posix_spawnp(&pid, "git", &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return SysError("export: run git diff", path);
  }
  w.Reset();
  std::string out;
  int st = sys::ReadAllAndReap(r.get(), pid, out);
  // 0: no difference, 1: differences.
  if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
    return Fail("export: git diff", path, "exited with status " + std::to_string(WEXITSTATUS(st)));
  }
  // Headers name "o/PATH" and "n/PATH"; the patch is for the source, PATH itself.
  std::string fixed;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    end = end == std::string::npos ? out.size() : end + 1;
    std::string line = out.substr(at, end - at);
    at = end;
    bool header = line.rfind("diff --git ", 0) == 0 || line.rfind("--- ", 0) == 0 ||
                  line.rfind("+++ ", 0) == 0;
    if (header) {
      for (const char* from : {"a/o/", "b/n/", "a/n/", "b/o/"}) {
        std::string f = from;
        std::string to = f.substr(0, 2);
        for (size_t i; (i = line.find(f)) != std::string::npos;) line.replace(i, f.size(), to);
      }
    }
    fixed += line;
  }
  return fixed;
}

// ExportChanges into `dest`, a directory it makes.
Status ExportInto(int scratch, const std::string& source, const std::string& dest,
                  const std::vector<std::string>& protected_paths,
                  const std::vector<std::string>& hidden) {
  sys::UniqueFd upper(openat(scratch, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!upper) return SysError("export: open", "the copy's changes");
  sys::UniqueFd lower(open(source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lower) return SysError("export: open", source);
  if (mkdir(dest.c_str(), 0700) < 0) return SysError("export: mkdir", dest);
  sys::UniqueFd out(open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!out) return SysError("export: open", dest);
  if (mkdirat(out.get(), "files", 0755) < 0) return SysError("export: mkdir", dest + "/files");
  sys::UniqueFd files(openat(out.get(), "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!files) return SysError("export: open", dest + "/files");
  Changes c;
  c.skip = &protected_paths;
  c.hidden = &hidden;
  BRIG_TRY(Walk(upper.get(), lower.get(), files.get(), "", c));
  std::string deleted;
  for (const auto& d : c.deleted) deleted += Escape(d) + "\n";
  BRIG_TRY(WriteAll(out.get(), "deleted", deleted, dest));

  struct stat st;
  if (fstatat(lower.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) return {};
  // git diff runs in a directory of brig's own where "o" is the source and "n" the copy's
  // changed files; a path holding a newline is not one git diff can name.
  std::string cwd = dest + "/.git-diff";
  if (mkdir(cwd.c_str(), 0700) < 0) return SysError("export: mkdir", cwd);
  Status s = [&]() -> Status {
    if (symlink(source.c_str(), (cwd + "/o").c_str()) < 0 ||
        symlink((dest + "/files").c_str(), (cwd + "/n").c_str()) < 0) {
      return SysError("export: symlink", cwd);
    }
    std::string patch;
    for (const auto& p : c.changed) {
      if (InGitDir(p) || p.find('\n') != std::string::npos) continue;
      // What the sandbox made at a hidden path is new to it: the source's is never read.
      mode_t old = UnderAny(hidden, p) ? 0 : SourceType(lower.get(), p);
      patch += BRIG_TRY(GitDiff(cwd, p, old == S_IFREG || old == S_IFLNK, true));
    }
    std::vector<std::string> gone;
    for (const auto& p : c.deleted) {
      if (UnderAny(hidden, p)) continue;
      mode_t old = SourceType(lower.get(), p);
      if (old == S_IFDIR) {
        SourceFiles(lower.get(), p, gone);
      } else if (old == S_IFREG || old == S_IFLNK) {
        gone.push_back(p);
      }
    }
    for (const auto& p : gone) {
      if (InGitDir(p) || UnderAny(hidden, p) || p.find('\n') != std::string::npos) continue;
      patch += BRIG_TRY(GitDiff(cwd, p, true, false));
    }
    return WriteAll(out.get(), "git.diff", patch, dest);
  }();
  unlink((cwd + "/o").c_str());
  unlink((cwd + "/n").c_str());
  rmdir(cwd.c_str());
  return s;
}

}  // namespace

Status ExportChanges(state::Record& record, int scratch, const std::string& source,
                     const std::string& dest, const std::vector<std::string>& protected_paths,
                     const std::vector<std::string>& hidden) {
  // Written beside `dest` and renamed into place whole: a failed export leaves nothing.
  std::string partial = dest + ".partial-" + std::to_string(getpid());
  BRIG_TRY(NoteOutputTemp(record, kPartialKind, partial));
  Status s = ExportInto(scratch, source, partial, protected_paths, hidden);
  if (s && renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) < 0) {
    s = SysError("export: rename", partial + " to " + dest);
  }
  if (!s) (void)util::RemoveTreeAt(AT_FDCWD, partial, partial);
  return s;
}

}  // namespace brig::fs
