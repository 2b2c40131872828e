// Control files read and written (cgroup/control.h).
#include "cgroup/control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "sys/fd.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::cgroup {

using util::Split;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::optional<std::string> ReadTrimmed(const std::string& path) {
  auto text = util::ReadFile(path);
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

std::vector<std::string> Words(const std::string& path) {
  std::vector<std::string> out;
  auto text = ReadTrimmed(path);
  if (!text) return out;
  for (auto w : Split(*text, ' ')) {
    if (!w.empty()) out.emplace_back(w);
  }
  return out;
}

std::optional<uint64_t> Number(const std::string& path) {
  auto text = ReadTrimmed(path);
  if (!text || text->empty()) return std::nullopt;
  if (*text == "max") return UINT64_MAX;
  if ((*text)[0] < '0' || (*text)[0] > '9') return std::nullopt;
  return std::strtoull(text->c_str(), nullptr, 10);
}

std::optional<std::string> KeyedIn(std::string_view text, std::string_view key) {
  for (auto line : Split(text, '\n')) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      return std::string(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> Keyed(const std::string& path, std::string_view key) {
  auto text = util::ReadFile(path);
  if (!text) return std::nullopt;
  auto v = KeyedIn(*text, key);
  if (!v || v->empty() || (*v)[0] < '0' || (*v)[0] > '9') return std::nullopt;
  return std::strtoull(v->c_str(), nullptr, 10);
}

std::vector<std::string> MissingDirs(const std::string& dir) {
  std::vector<std::string> missing;
  for (std::string d = dir; !d.empty() && !Exists(d); d = d.substr(0, d.rfind('/'))) {
    missing.insert(missing.begin(), d);
  }
  return missing;
}

Result<std::vector<pid_t>> ReadProcs(const std::string& dir) {
  std::string text = BRIG_TRY_CTX(util::ReadFile(dir + "/cgroup.procs"), "cgroup");
  std::vector<pid_t> pids;
  for (auto line : Split(text, '\n')) {
    if (!line.empty()) pids.push_back(static_cast<pid_t>(std::atol(std::string(line).c_str())));
  }
  return pids;
}

void Backoff::Wait() {
  std::this_thread::sleep_for(pause_);
  pause_ = std::min(pause_ * 2, std::chrono::microseconds(10000));
}

Status FreezeV1(const std::string& dir, bool frozen) {
  std::string state = dir + "/freezer.state";
  if (!frozen) return util::WriteFile(state, "THAWED");
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Backoff backoff;
  while (std::chrono::steady_clock::now() < end) {
    BRIG_TRY(util::WriteFile(state, "FROZEN"));
    if (ReadTrimmed(state) == "FROZEN") return {};
    backoff.Wait();
  }
  (void)util::WriteFile(state, "THAWED");
  return Fail("freeze", dir, "the v1 freezer did not reach FROZEN within 10 s");
}

HostFacts ReadFacts(const Routes& routes) {
  auto route = [&](const char* c) -> const Route* {
    auto it = routes.find(c);
    return it == routes.end() ? nullptr : &it->second;
  };
  HostFacts facts;
  if (const Route* m = route("memory")) {
    facts.swap_accounting =
        Exists(m->dir + (m->v2 ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes"));
    if (!m->v2) facts.v1_memory_limit = Number(m->dir + "/memory.limit_in_bytes");
  }
  if (const Route* b = route("blkio")) facts.bfq = Exists(b->dir + "/blkio.bfq.weight");
  if (const Route* b = route("io")) facts.bfq = Exists(b->dir + "/io.bfq.weight");
  if (const Route* c = route("cpu"); c && c->v2) {
    auto max = Words(c->dir + "/cpu.max");
    if (!max.empty()) facts.v2_cpu_quota = max[0];
  }
  return facts;
}

Status WriteControl(const ControlWrite& w) {
  std::string op = "write " + w.file;
  sys::UniqueFd fd(open((w.dir + "/" + w.file).c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError(op).Wrap(w.property);
  ssize_t n = write(fd.get(), w.value.data(), w.value.size());
  if (n != static_cast<ssize_t>(w.value.size())) return SysError(op).Wrap(w.property);
  return {};
}

}  // namespace brig::cgroup
