// Command lookup, as execvp(3) does it, but before anything runs: brig init uses it inside
// the new root so 126/127 are known before Ready; the unconfined launcher on the host.
#include "container/command.h"

#include <sys/stat.h>
#include <unistd.h>

namespace brig::container {
namespace {

std::string EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& kv : env) {
    if (kv.compare(0, key.size() + 1, key + "=") == 0) return kv.substr(key.size() + 1);
  }
  return {};
}

}  // namespace

Result<std::string> ResolveCommand(const std::string& cmd, const std::vector<std::string>& env) {
  auto check = [](const std::string& path) -> Result<std::string> {
    struct stat st;
    if (stat(path.c_str(), &st) < 0) {
      return SysError("command", path).WithKind(errno == ENOENT || errno == ENOTDIR
                                                    ? ErrorKind::kNotFound
                                                    : ErrorKind::kNotExecutable);
    }
    if (S_ISDIR(st.st_mode)) {
      errno = EISDIR;
      return SysError("command", path).WithKind(ErrorKind::kNotExecutable);
    }
    if (access(path.c_str(), X_OK) < 0) {
      return SysError("command", path).WithKind(ErrorKind::kNotExecutable);
    }
    return path;
  };
  if (cmd.find('/') != std::string::npos) return check(cmd);
  std::string path = EnvValue(env, "PATH");
  Error last = Fail("command", cmd, "not found in PATH", ErrorKind::kNotFound);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir.push_back('.');  // an empty PATH entry is the cwd
    dir += '/';
    dir += cmd;
    auto r = check(dir);
    if (r) return r;
    // Like execvp: a candidate that exists but cannot run is remembered, not final.
    if (r.error().kind == ErrorKind::kNotExecutable) last = Error(r.error());
    start = end + 1;
  }
  if (last.kind == ErrorKind::kNotExecutable) last.subject = cmd;
  return last;
}


std::vector<char*> ExecArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace brig::container
