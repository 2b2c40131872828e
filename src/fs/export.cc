#include "fs/export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "fs/export_git.h"
#include "fs/host_marks.h"
#include "fs/spec.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "util/files.h"

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
    if (util::PathWithin(path, p)) return true;
  }
  return false;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
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
  std::vector<std::string> names = util::ListDir(upper);
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
      if (sub_lower && fgetxattr(sub.get(), OverlayXattr("opaque").c_str(), opaque, 1) == 1 &&
          opaque[0] == 'y') {
        std::vector<std::string> kept = util::ListDir(sub.get());
        for (const std::string& old : util::ListDir(sub_lower.get())) {
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
  for (const std::string& name : util::ListDir(dir->get())) {
    std::string path = Join(rel, name);
    mode_t t = SourceType(lower, path);
    if (t == S_IFDIR) {
      SourceFiles(lower, path, out);
    } else if (t == S_IFREG || t == S_IFLNK) {
      out.push_back(path);
    }
  }
}

// git diff names the sides "o/PATH" and "n/PATH" (export_git.h); the patch is for the
// source, PATH itself.
std::string FixHeaders(const std::string& raw) {
  std::string fixed;
  size_t at = 0;
  while (at < raw.size()) {
    size_t end = raw.find('\n', at);
    end = end == std::string::npos ? raw.size() : end + 1;
    std::string line = raw.substr(at, end - at);
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

// What git status could show of the copy's changes: every changed file or symlink, and
// every file or symlink of the source that is gone, outside .git and hidden paths (what
// the sandbox made at a hidden path is new to it: the source's is never read), each with
// whether each side has it. A path holding a newline is not one git diff can name.
std::vector<GitPath> GitCandidates(int lower, const Changes& c,
                                   const std::vector<std::string>& hidden) {
  std::vector<GitPath> out;
  auto wanted = [&](const std::string& p) {
    return !InGitDir(p) && p.find('\n') == std::string::npos;
  };
  for (const auto& p : c.changed) {
    if (!wanted(p)) continue;
    mode_t old = UnderAny(hidden, p) ? 0 : SourceType(lower, p);
    out.push_back({p, old == S_IFREG || old == S_IFLNK, true});
  }
  std::vector<std::string> gone;
  for (const auto& p : c.deleted) {
    if (UnderAny(hidden, p)) continue;
    mode_t old = SourceType(lower, p);
    if (old == S_IFDIR) {
      SourceFiles(lower, p, gone);
    } else if (old == S_IFREG || old == S_IFLNK) {
      gone.push_back(p);
    }
  }
  for (const auto& p : gone) {
    if (wanted(p) && !UnderAny(hidden, p)) out.push_back({p, true, false});
  }
  return out;
}

// git.diff and ignored.txt (export.h) in `out`.
Status WriteGitFiles(int out, int files, const GitTrees& trees, const Changes& c,
                     const std::vector<std::string>& hidden, const std::string& dest) {
  std::vector<GitPath> paths = GitCandidates(trees.source, c, hidden);
  GitChanges git = BRIG_TRY(DiffForGit(trees, paths));
  BRIG_TRY(WriteAll(out, "git.diff", FixHeaders(git.patch), dest));
  if (!git.mbox.empty()) {
    BRIG_TRY(WriteAll(out, "commits.mbox", git.mbox, dest));
    BRIG_TRY(WriteAll(out, "commits.bundle", git.bundle, dest));
  }
  std::string listed;
  for (const auto& p : git.ignored) {
    struct stat st;
    if (fstatat(files, p.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;  // deleted
    listed += std::to_string(st.st_size) + "\t" + Escape(p) + "\n";
  }
  return WriteAll(out, "ignored.txt", listed, dest);
}

Result<sys::UniqueFd> MakeDirAt(int dir, const std::string& name, const std::string& path) {
  if (mkdirat(dir, name.c_str(), 0700) < 0) return SysError("export: mkdir", path);
  sys::UniqueFd fd(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysError("export: open", path);
  return fd;
}

// ExportChanges into `dest`, a directory it makes: root's and no one else's to enter until
// everything in it is written and given to `to`, its top last.
Status ExportInto(int scratch, int merged, const std::string& source, const std::string& dest,
                  const std::vector<std::string>& protected_paths,
                  const std::vector<std::string>& hidden, std::pair<uid_t, gid_t> to) {
  sys::UniqueFd upper(openat(scratch, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!upper) return SysError("export: open", "the copy's changes");
  sys::UniqueFd lower(open(source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat owner;
  if (!lower || fstat(lower.get(), &owner) < 0) return SysError("export: open", source);
  sys::UniqueFd out = BRIG_TRY(MakeDirAt(AT_FDCWD, dest, dest));
  sys::UniqueFd files = BRIG_TRY(MakeDirAt(out.get(), "files", dest + "/files"));
  if (fchmod(files.get(), 0755) < 0) return SysError("export: chmod", dest + "/files");
  Changes c;
  c.skip = &protected_paths;
  c.hidden = &hidden;
  BRIG_TRY(Walk(upper.get(), lower.get(), files.get(), "", c));
  // files/ is complete, and git reads it as the owner; the top stays root's, 0700.
  BRIG_TRY(util::ChownTreeAt(out.get(), "files", owner.st_uid, owner.st_gid, dest + "/files"));
  std::string deleted;
  for (const auto& d : c.deleted) deleted += Escape(d) + "\n";
  BRIG_TRY(WriteAll(out.get(), "deleted", deleted, dest));
  struct stat st;
  if (fstatat(lower.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    GitTrees trees{lower.get(), files.get(), merged, upper.get(), owner.st_uid, owner.st_gid};
    BRIG_TRY(WriteGitFiles(out.get(), files.get(), trees, c, hidden, dest));
  }
  if (to.first != owner.st_uid || to.second != owner.st_gid) {
    BRIG_TRY(util::ChownTreeAt(out.get(), "files", to.first, to.second, dest + "/files"));
  }
  for (const char* name :
       {"deleted", "git.diff", "ignored.txt", "commits.mbox", "commits.bundle", "."}) {
    if (fchownat(out.get(), name, to.first, to.second, AT_SYMLINK_NOFOLLOW) < 0 &&
        errno != ENOENT) {
      return SysError("export: chown", dest + "/" + name);
    }
  }
  if (fchmod(out.get(), owner.st_mode & 0777) < 0) return SysError("export: chmod", dest);
  return {};
}

}  // namespace

Status ExportChanges(state::Record& record, int scratch, int merged, const std::string& source,
                     const std::string& dest, const std::vector<std::string>& protected_paths,
                     const std::vector<std::string>& hidden, std::pair<uid_t, gid_t> owner) {
  // Written beside `dest` and renamed into place whole: a failed export leaves nothing.
  std::string partial = dest + ".partial-" + std::to_string(getpid());
  BRIG_TRY(NoteOutputTemp(record, kPartialKind, partial));
  Status s = ExportInto(scratch, merged, source, partial, protected_paths, hidden, owner);
  if (s && renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) < 0) {
    s = SysError("export: rename", partial + " to " + dest);
  }
  if (!s) (void)util::RemoveTreeAt(AT_FDCWD, partial, partial);
  return s;
}

}  // namespace brig::fs
