// Entry layout, native byte order: "BRIGCAC2" | u32 key_len | key | value, where the key
// is the salt and the text: an entry matches only both, byte for byte.
#include "util/trusted_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "util/files.h"

namespace brig::util {
namespace {

constexpr char kMagic[8] = {'B', 'R', 'I', 'G', 'C', 'A', 'C', '2'};

// Only brig's own user may have written it (root, or without root the user, whose cache is
// in its own directories: util/dirs.h): owned by that uid, not writable by group or others.
bool Trusted(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// brig's version and its executable's identity and change time: a rebuild may derive
// differently at one version. Read once a process (a run makes three caches).
const std::string& Build() {
  static const std::string build = [] {
    struct stat self = {};
    (void)stat("/proc/self/exe", &self);
    return std::string(BRIG_VERSION) + "/" + std::to_string(self.st_dev) + ":" +
           std::to_string(self.st_ino) + ":" + std::to_string(self.st_ctim.tv_sec) + "." +
           std::to_string(self.st_ctim.tv_nsec) + "/";
  }();
  return build;
}

}  // namespace

TrustedCache::TrustedCache(const std::string& dir, std::string_view salt) : dir_(dir) {
  if (dir.empty()) return;
  salt_ = std::string(salt) + "/" + Build();
  std::string parent = dir.substr(0, dir.rfind('/'));
  (void)mkdir(parent.c_str(), 0700);
  (void)mkdir(dir.c_str(), 0700);
  fd_.Reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd_ && !Trusted(fd_.get())) fd_.Reset();
}

// FNV-1a over the salt and the text: only a file name, never trusted alone.
std::string TrustedCache::EntryName(const std::string& text) const {
  uint64_t h = 1469598103934665603ull;
  for (const std::string* s : {&salt_, &text}) {
    for (unsigned char c : *s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::optional<std::string> TrustedCache::Get(const std::string& text) const {
  if (!fd_) return std::nullopt;
  sys::UniqueFd fd(openat(fd_.get(), EntryName(text).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || !Trusted(fd.get())) return std::nullopt;
  auto bytes = ReadFd(fd.get(), 0);
  if (!bytes) return std::nullopt;
  uint32_t key_len;
  size_t head = sizeof kMagic + sizeof key_len;
  if (bytes->size() < head || memcmp(bytes->data(), kMagic, sizeof kMagic) != 0) {
    return std::nullopt;
  }
  memcpy(&key_len, bytes->data() + sizeof kMagic, sizeof key_len);
  if (key_len != salt_.size() + text.size() || bytes->size() - head < key_len ||
      bytes->compare(head, salt_.size(), salt_) != 0 ||
      bytes->compare(head + salt_.size(), text.size(), text) != 0) {
    return std::nullopt;
  }
  return bytes->substr(head + key_len);
}

void TrustedCache::Put(const std::string& text, std::string_view value) const {
  if (!fd_) return;
  std::string entry(kMagic, sizeof kMagic);
  uint32_t key_len = static_cast<uint32_t>(salt_.size() + text.size());
  entry.append(reinterpret_cast<const char*>(&key_len), sizeof key_len);
  entry += salt_;
  entry += text;
  entry += value;
  (void)WriteFileAtomic(dir_ + "/" + EntryName(text), entry, 0600);
}

}  // namespace brig::util
