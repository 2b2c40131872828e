// Command lookup, as execvp(3) does it, but before anything runs: brig init uses it inside
// the new root, from the workload's working directory, so 126/127 are known before Ready;
// the unconfined launcher on the host, from the workspace.
#include "container/command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

std::string EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& kv : env) {
    if (kv.compare(0, key.size() + 1, key + "=") == 0) return kv.substr(key.size() + 1);
  }
  return {};
}

// Why `path` cannot be run, worded as runc words it: execve's error in lower case, as Go
// prints it. Engines read these words, not brig's exit status: Docker and podman make "no
// such file or directory" and "executable file not found" 127, and "permission denied"
// 126.
Error CannotRun(const std::string& path, int err, ErrorKind kind) {
  std::string why = strerror(err);
  if (!why.empty()) why[0] = static_cast<char>(tolower(static_cast<unsigned char>(why[0])));
  return Fail("command", path, why, kind);
}

// One candidate, looked up from `dir` (an O_PATH fd, or AT_FDCWD) with the caller's real
// ids, as execve would judge it.
Result<std::string> Check(int dir, const std::string& path) {
  struct stat st;
  if (fstatat(dir, path.c_str(), &st, 0) < 0) {
    return CannotRun(
        path, errno,
        errno == ENOENT || errno == ENOTDIR ? ErrorKind::kNotFound : ErrorKind::kNotExecutable);
  }
  if (S_ISDIR(st.st_mode)) return CannotRun(path, EISDIR, ErrorKind::kNotExecutable);
  if (auto s = sys::Faccessat(dir, path, X_OK, path); !s) {
    return CannotRun(path, s.error().err, ErrorKind::kNotExecutable);
  }
  return path;
}

}  // namespace

Result<std::string> ResolveCommand(const std::string& cmd, const std::vector<std::string>& env,
                                   const std::string& workdir) {
  sys::UniqueFd wd;
  if (!workdir.empty()) {
    wd.Reset(open(workdir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!wd) return SysError("chdir", workdir).WithKind(ErrorKind::kSetup);
  }
  const int dir = wd ? wd.get() : AT_FDCWD;
  if (cmd.find('/') != std::string::npos) return Check(dir, cmd);
  std::string path = EnvValue(env, "PATH");
  Error last = Fail("command", cmd, "executable file not found in $PATH", ErrorKind::kNotFound);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start);
    if (candidate.empty()) candidate.push_back('.');  // an empty PATH entry is the cwd
    candidate += '/';
    candidate += cmd;
    auto r = Check(dir, candidate);
    if (r) return r;
    // Like execvp: a candidate that exists but cannot run is remembered, not final.
    if (r.error().kind == ErrorKind::kNotExecutable) last = Error(r.error());
    start = end + 1;
  }
  if (last.kind == ErrorKind::kNotExecutable) last.subject = cmd;
  return last;
}

std::vector<std::string> ScriptArgv(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/bin/sh", path};
  if (argv.size() > 1) out.insert(out.end(), argv.begin() + 1, argv.end());
  return out;
}

std::vector<char*> ExecArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace brig::container
