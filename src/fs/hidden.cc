#include "fs/hidden.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>

#include "util/parse.h"

namespace brig::fs {
namespace {

bool Glob(const std::string& glob, std::string_view name) {
  return fnmatch(glob.c_str(), std::string(name).c_str(), 0) == 0;
}

// Whether `parts`, which hold a "**", match `path`: "**" takes any number of components,
// and at the end at least one (gitignore: "a/**" is everything inside a). Dynamic
// programming over (pattern, path) suffixes, so any number of "**" costs parts x path
// steps, not the exponential of a backtracking match.
bool MatchGlobstar(const std::vector<std::string>& parts,
                   const std::vector<std::string_view>& path) {
  const size_t n = path.size();
  std::vector<char> next(n + 1, 0), cur(n + 1, 0);
  next[n] = 1;  // no pattern left matches no path left
  for (size_t i = parts.size(); i-- > 0;) {
    if (parts[i] == "**") {
      bool any = false;
      size_t least = i + 1 == parts.size() ? 1 : 0;
      for (size_t j = n + 1; j-- > 0;) {
        if (j + least <= n) any |= next[j + least] != 0;
        cur[j] = any;
      }
    } else {
      for (size_t j = 0; j <= n; ++j) cur[j] = j < n && next[j + 1] && Glob(parts[i], path[j]);
    }
    std::swap(cur, next);
  }
  return next[0] != 0;
}

struct Walker {
  const std::vector<HiddenPattern>& patterns;
  bool find_links;
  dev_t dev;
  WorkspaceScan scan;
  // Regular files with more than one name: how many names the walk found of each inode,
  // and each name with its inode, in walk order.
  struct Names {
    nlink_t nlink, seen;
  };
  std::unordered_map<ino_t, Names> inodes;
  std::vector<std::pair<std::string, ino_t>> multi;
  // The first directory the walk could not enter for another reason than it being gone
  // or replaced meanwhile (say, out of descriptors in a very deep tree): a walk that
  // missed part of the tree would miss what to hide or hold there.
  int err = 0;
  std::string err_path;

  void Fail(const std::string& sub) {
    if (err == 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
      err = errno;
      err_path = sub.empty() ? "." : sub;
    }
  }

  void NoteFile(int dirfd, const std::string& name, const std::string& sub) {
    struct stat st;
    if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return;
    if (!S_ISREG(st.st_mode) || st.st_nlink < 2) return;
    ++inodes.try_emplace(st.st_ino, Names{st.st_nlink, 0}).first->second.seen;
    multi.emplace_back(sub, st.st_ino);
  }

  void Walk(int dirfd, std::vector<std::string_view>& path, const std::string& rel) {
    DIR* d = fdopendir(dirfd);
    if (!d) {
      Fail(rel);
      close(dirfd);
      return;
    }
    struct Entry {
      std::string name;
      unsigned char type;
    };
    std::vector<Entry> entries;
    while (dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
      }
      entries.push_back({e->d_name, type});
    }
    for (const auto& [name, type] : entries) {
      bool is_dir = type == DT_DIR;
      path.push_back(name);
      std::string sub = rel.empty() ? name : rel + "/" + name;
      bool hidden = false;
      for (const auto& p : patterns) hidden |= p.Matches(path, is_dir);
      if (hidden) {
        scan.hidden.push_back(sub);
      } else if (is_dir) {
        int fd = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) Fail(sub);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev) {
          Walk(fd, path, sub);  // takes fd
        } else if (fd >= 0) {
          close(fd);
        }
      } else if (find_links && type == DT_REG) {
        NoteFile(dirfd, name, sub);
      }
      path.pop_back();
    }
    closedir(d);
  }
};

}  // namespace

bool HiddenPattern::Matches(const std::vector<std::string_view>& path, bool is_dir) const {
  if (dir_only && !is_dir) return false;
  if (anywhere) return literal ? parts[0] == path.back() : Glob(parts[0], path.back());
  if (globstar) return MatchGlobstar(parts, path);
  if (path.size() != parts.size()) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!Glob(parts[i], path[i])) return false;
  }
  return true;
}

Result<HiddenPattern> ParseHiddenPattern(std::string_view entry) {
  auto bad = [&](const char* why) { return BadInput("hidden path", std::string(entry), why); };
  HiddenPattern p;
  std::string_view s = entry;
  if (!s.empty() && s.back() == '/') {
    p.dir_only = true;
    s.remove_suffix(1);
  }
  if (s.empty()) return bad("empty");
  if (s.front() == '/') return bad("absolute: hidden paths are relative to the workspace");
  if (s.find('\0') != std::string_view::npos) return bad("holds a NUL byte");
  for (std::string_view part : util::Split(s, '/')) {
    if (part.empty() || part == ".") return bad("an empty or \".\" component");
    if (part == "..") return bad("\"..\" leaves the workspace");
    p.parts.emplace_back(part);
    p.globstar |= part == "**";
  }
  p.anywhere = p.parts.size() == 1;
  p.literal = p.anywhere && p.parts[0].find_first_of("*?[\\") == std::string::npos;
  return p;
}

Result<WorkspaceScan> ScanWorkspace(int dir, const std::vector<HiddenPattern>& patterns,
                                    bool find_links) {
  if (patterns.empty() && !find_links) return WorkspaceScan();
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError("open", "workspace");
  struct stat st;
  if (fstat(fd, &st) < 0) {
    close(fd);
    return SysError("stat", "workspace");
  }
  Walker w{patterns, find_links, st.st_dev, {}, {}, {}};
  std::vector<std::string_view> path;
  w.Walk(fd, path, "");
  if (w.err != 0) {
    errno = w.err;
    return SysError("walk", w.err_path);
  }
  for (auto& [name, ino] : w.multi) {
    const auto& n = w.inodes.at(ino);
    if (n.seen < n.nlink) w.scan.linked_out.push_back(std::move(name));
  }
  return std::move(w.scan);
}

}  // namespace brig::fs
