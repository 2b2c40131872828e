#include "state/record.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "util/files.h"
#include "util/parse.h"

namespace brig::state {
namespace {

// A value is one line with no space: '%', space, tab and newline are written %XX (a
// workspace path may hold any of them).
std::string Escape(std::string_view v) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : v) {
    if (c == '%' || c == ' ' || c == '\t' || c == '\n') {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[c & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string Unescape(std::string_view v) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out += static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2]));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

}  // namespace

Result<Record> Record::Create(const std::string& dir, const std::string& id) {
  BRIG_TRY(util::MakeDirs(dir));
  Record r;
  r.path_ = dir + "/" + id;
  // Made unnamed, locked, then linked at its name: no one ever sees it unlocked, so a
  // record without a lock is always one whose brig is gone. linkat refuses an existing one.
  r.fd_.Reset(open(dir.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600));
  if (!r.fd_) return SysError("create", r.path_);
  if (flock(r.fd_.get(), LOCK_EX) < 0) return SysError("flock", r.path_);
  std::string self = "/proc/self/fd/" + std::to_string(r.fd_.get());
  if (linkat(AT_FDCWD, self.c_str(), AT_FDCWD, r.path_.c_str(), AT_SYMLINK_FOLLOW) < 0) {
    r.path_.clear();  // not ours to remove
    return SysError("create", dir + "/" + id);
  }
  return r;
}

Status Record::Add(std::string_view kind, std::string_view value) {
  std::string line = std::string(kind) + " " + Escape(value) + "\n";
  if (write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return SysError("write", path_);
  }
  return {};
}

Status Record::Describe(const std::vector<std::pair<std::string, std::string>>& about) {
  for (const auto& [key, value] : about) BRIG_TRY(Add(kAboutKind, key + "=" + value));
  char started[32];
  time_t now = time(nullptr);
  struct tm tm;
  strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  return Add(kAboutKind, std::string("started=") + started);
}

void Record::Keep() {
  path_.clear();
  fd_.Reset();
}

void Record::Remove() {
  if (path_.empty()) return;
  (void)unlink(path_.c_str());
  path_.clear();
  fd_.Reset();
}

std::optional<std::pair<std::string_view, std::string_view>> About(const Entry& e) {
  if (e.kind != kAboutKind) return std::nullopt;
  std::string_view v = e.value;
  size_t eq = v.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return std::make_pair(v.substr(0, eq), v.substr(eq + 1));
}

std::vector<Entry> ParseRecord(std::string_view text) {
  std::vector<Entry> out;
  for (std::string_view line : util::Split(text, '\n')) {
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size()) continue;
    out.push_back({std::string(line.substr(0, sp)), Unescape(line.substr(sp + 1))});
  }
  return out;
}

namespace {

// The names of the records in `dir`, sorted; none if it does not exist.
Result<std::vector<std::string>> Names(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return names;
    return SysError("opendir", dir);
  }
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] != '.') names.push_back(de->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// The record's fd, and whether its lock is held by a live brig.
Result<std::pair<sys::UniqueFd, bool>> Probe(const std::string& path) {
  sys::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return SysError("open", path);
  if (flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
    (void)flock(fd.get(), LOCK_UN);
    return std::make_pair(std::move(fd), false);
  }
  if (errno != EWOULDBLOCK) return SysError("flock", path);
  return std::make_pair(std::move(fd), true);
}

}  // namespace

Result<RecordState> StateOf(const std::string& dir, const std::string& id) {
  auto probed = Probe(dir + "/" + id);
  if (!probed) {
    if (probed.error().err == ENOENT) return RecordState::kMissing;
    return std::move(probed).error();
  }
  return probed->second ? RecordState::kLive : RecordState::kStale;
}

Result<std::vector<LiveRecord>> ListLive(const std::string& dir) {
  std::vector<LiveRecord> out;
  for (const auto& id : BRIG_TRY(Names(dir))) {
    auto probed = Probe(dir + "/" + id);
    if (!probed && probed.error().err == ENOENT) continue;  // gone meanwhile
    auto [fd, live] = BRIG_TRY(std::move(probed));
    if (!live) continue;
    std::string text = BRIG_TRY_CTX(util::ReadFd(fd.get(), 0), dir + "/" + id);
    out.push_back({id, ParseRecord(text)});
  }
  return out;
}

Result<Collected> CollectStale(
    const std::string& dir,
    const std::function<Result<bool>(const std::string& id, const std::vector<Entry>&)>& clean,
    const std::string& only) {
  Collected out;
  std::vector<std::string> names = BRIG_TRY(Names(dir));
  for (const auto& id : names) {
    if (!only.empty() && id != only) continue;
    std::string path = dir + "/" + id;
    sys::UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) continue;
    if (flock(fd.get(), LOCK_EX | LOCK_NB) < 0) continue;  // its sandbox is alive
    // Another collector may have cleaned and unlinked it before this one got the lock.
    struct stat held, named;
    if (fstat(fd.get(), &held) < 0 || stat(path.c_str(), &named) < 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      continue;
    }
    auto text_or = util::ReadFd(fd.get(), 0);
    if (!text_or) {
      out.failed.push_back(std::move(text_or).error().Wrap(path));
      continue;
    }
    std::string text = std::move(*text_or);
    auto cleaned = clean(id, ParseRecord(text));
    if (!cleaned) {
      out.failed.push_back(std::move(cleaned).error());
      continue;
    }
    if (!*cleaned) continue;
    if (unlink(path.c_str()) < 0 && errno != ENOENT) return SysError("unlink", path);
    out.removed.push_back(id);
  }
  return out;
}

}  // namespace brig::state
