#include "fs/hidden.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "util/parse.h"

namespace brig::fs {
namespace {

bool HasWildcard(std::string_view s) { return s.find_first_of("*?[\\") != std::string_view::npos; }

struct Walker {
  const std::vector<HiddenPattern>& patterns;
  dev_t dev;
  std::vector<std::string> found;

  void Walk(int dirfd, std::vector<std::string_view>& path, const std::string& rel) {
    DIR* d = fdopendir(dirfd);
    if (!d) {
      close(dirfd);
      return;
    }
    std::vector<std::pair<std::string, bool>> entries;
    while (dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        is_dir = fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      entries.emplace_back(e->d_name, is_dir);
    }
    for (const auto& [name, is_dir] : entries) {
      path.push_back(name);
      std::string sub = rel.empty() ? name : rel + "/" + name;
      bool hidden = false;
      for (const auto& p : patterns) hidden |= p.Matches(path, is_dir);
      if (hidden) {
        found.push_back(sub);
      } else if (is_dir) {
        int fd = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev) {
          Walk(fd, path, sub);  // takes fd
        } else if (fd >= 0) {
          close(fd);
        }
      }
      path.pop_back();
    }
    closedir(d);
  }
};

}  // namespace

bool HiddenPattern::Matches(const std::vector<std::string_view>& path, bool is_dir) const {
  if (dir_only && !is_dir) return false;
  auto match = [](const std::string& glob, std::string_view name) {
    return fnmatch(glob.c_str(), std::string(name).c_str(), 0) == 0;
  };
  if (anywhere) return parts[0] == path.back();
  if (path.size() != parts.size()) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!match(parts[i], path[i])) return false;
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
  }
  p.anywhere = p.parts.size() == 1 && !HasWildcard(p.parts[0]);
  return p;
}

Result<std::vector<std::string>> FindHidden(int dir, const std::vector<HiddenPattern>& patterns) {
  if (patterns.empty()) return std::vector<std::string>();
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError("open", "workspace");
  struct stat st;
  if (fstat(fd, &st) < 0) {
    close(fd);
    return SysError("stat", "workspace");
  }
  Walker w{patterns, st.st_dev, {}};
  std::vector<std::string_view> path;
  w.Walk(fd, path, "");
  return std::move(w.found);
}

}  // namespace brig::fs
