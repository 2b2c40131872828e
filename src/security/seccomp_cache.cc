// The seccomp filter cache (see seccomp_cache.h). Entry layout, native byte order:
//   "BRIGBPF1" | u32 flags | u32 text_len | text | u32 insn_count | sock_filter[insn_count]
#include "security/seccomp_cache.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "sys/fd.h"
#include "util/files.h"

namespace brig::security {
namespace {

constexpr char kMagic[8] = {'B', 'R', 'I', 'G', 'B', 'P', 'F', '1'};

// FNV-1a over the text and what shapes the output: only a file name. `kind` keeps a
// policy file's text and a serialized policy message apart.
std::string EntryName(std::string_view kind, const std::string& text) {
  const scmp_version* v = seccomp_version();
  // The build of brig too (a rebuild may compile or check differently at one version):
  // its executable's identity and change time.
  struct stat self = {};
  (void)stat("/proc/self/exe", &self);
  std::string salt = std::string(kind) + "/" + BRIG_VERSION + "/" + std::to_string(v->major) + "." +
                     std::to_string(v->minor) + "." + std::to_string(v->micro) + "/" +
                     std::to_string(self.st_dev) + ":" + std::to_string(self.st_ino) + ":" +
                     std::to_string(self.st_ctim.tv_sec) + "." +
                     std::to_string(self.st_ctim.tv_nsec) + "/";
  uint64_t h = 1469598103934665603ull;
  for (const std::string* s : std::initializer_list<const std::string*>{&salt, &text}) {
    for (unsigned char c : *s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%016llx.bpf", static_cast<unsigned long long>(h));
  return buf;
}

// Only root may have written it: owned by root, not writable by group or others.
bool Trusted(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool Read(const std::string& bytes, size_t& off, void* out, size_t n) {
  if (bytes.size() - off < n) return false;
  memcpy(out, bytes.data() + off, n);
  off += n;
  return true;
}

std::optional<SeccompProgram> Lookup(int dirfd, const std::string& name, const std::string& text) {
  sys::UniqueFd fd(openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || !Trusted(fd.get())) return std::nullopt;
  auto bytes = util::ReadFd(fd.get(), 0);
  if (!bytes) return std::nullopt;
  size_t off = 0;
  char magic[8];
  uint32_t flags, text_len, count;
  if (!Read(*bytes, off, magic, sizeof magic) || memcmp(magic, kMagic, sizeof magic) != 0 ||
      !Read(*bytes, off, &flags, 4) || !Read(*bytes, off, &text_len, 4) ||
      text_len != text.size() || bytes->compare(off, text_len, text) != 0) {
    return std::nullopt;
  }
  off += text_len;
  if (!Read(*bytes, off, &count, 4) || count == 0 ||
      bytes->size() - off != count * sizeof(sock_filter)) {
    return std::nullopt;
  }
  SeccompProgram p;
  p.flags = flags;
  p.insns.resize(count);
  memcpy(p.insns.data(), bytes->data() + off, count * sizeof(sock_filter));
  return p;
}

void Store(const std::string& dir, const std::string& name, const std::string& text,
           const SeccompProgram& p) {
  std::string entry(kMagic, sizeof kMagic);
  uint32_t flags = p.flags, text_len = static_cast<uint32_t>(text.size()),
           count = static_cast<uint32_t>(p.insns.size());
  entry.append(reinterpret_cast<const char*>(&flags), 4);
  entry.append(reinterpret_cast<const char*>(&text_len), 4);
  entry += text;
  entry.append(reinterpret_cast<const char*>(&count), 4);
  entry.append(reinterpret_cast<const char*>(p.insns.data()), count * sizeof(sock_filter));
  (void)util::WriteFileAtomic(dir + "/" + name, entry, 0600);
}

// Opens (creating if needed, mode 0700) the cache directory; invalid if it is not trusted.
sys::UniqueFd OpenCacheDir(const std::string& dir) {
  std::string parent = dir.substr(0, dir.rfind('/'));
  (void)mkdir(parent.c_str(), 0700);
  (void)mkdir(dir.c_str(), 0700);
  sys::UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || !Trusted(fd.get())) return {};
  return fd;
}

// The program for `text` from `cache_dir`, or compile()'s, stored for the next time.
Result<SeccompProgram> Cached(std::string_view kind, const std::string& text,
                              const std::string& cache_dir,
                              const std::function<Result<SeccompProgram>()>& compile) {
  std::string name = EntryName(kind, text);
  sys::UniqueFd dir;
  if (!cache_dir.empty()) dir = OpenCacheDir(cache_dir);
  if (dir) {
    if (auto hit = Lookup(dir.get(), name, text)) return std::move(*hit);
  }
  SeccompProgram p = BRIG_TRY(compile());
  if (dir) Store(cache_dir, name, text, p);
  return p;
}

}  // namespace

Result<SeccompProgram> CompileSeccompFile(const std::string& policy_path,
                                          const std::string& cache_dir) {
  std::string text = BRIG_TRY_CTX(util::ReadUserFile(policy_path), "seccomp policy");
  SeccompProgram p = BRIG_TRY(Cached("file", text, cache_dir, [&]() -> Result<SeccompProgram> {
    auto policy = BRIG_TRY(ParseSeccompPolicy(text, policy_path));
    return BRIG_TRY_CTX(CompileSeccomp(policy), "seccomp policy " + policy_path);
  }));
  p.text = std::move(text);
  return p;
}

Result<SeccompProgram> CompileSeccompCached(
    const v1::SeccompPolicy& policy, const std::string& cache_dir,
    const std::function<Result<SeccompProgram>(const v1::SeccompPolicy&)>& compile) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    if (!policy.SerializeToCodedStream(&coded)) {
      return Fail("seccomp policy", "", "cannot be serialized");
    }
  }
  return Cached("message", bytes, cache_dir, [&] { return compile(policy); });
}

}  // namespace brig::security
