// What a running sandbox holds on the host, written down before it is made, so `brig gc`
// can remove it if brig dies without cleaning up (SIGKILL, a crash, the machine's OOM
// killer). One file a sandbox in /run/brig/sandboxes, named by its id, held under an
// exclusive flock by brig for the sandbox's lifetime. brig init closes its copy before the
// workload starts (it holds no host descriptor), so a free lock proves brig gone, and the
// sandbox gone or being killed with it (init dies with its supervisor).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brig/result.h"
#include "sys/fd.h"
#include "util/dirs.h"

namespace brig::state {

inline std::string SandboxDir() { return util::RunDir() + "/sandboxes"; }
// Lines of this kind say what the sandbox is ("about name=task-7"), for `brig list`; they
// name no resource, so `brig gc` has nothing to remove for them.
inline constexpr char kAboutKind[] = "about";

// One line of a record: what kind of thing ("cgroup") and which one (its path).
struct Entry {
  std::string kind, value;
};

class Record {
 public:
  // Creates and locks `dir`/`id` (dir is made 0700 if missing). Refuses an existing one.
  static Result<Record> Create(const std::string& dir, const std::string& id);
  Record() = default;
  Record(Record&& o) noexcept : path_(std::exchange(o.path_, {})), fd_(std::move(o.fd_)) {}
  Record& operator=(Record&& o) noexcept {
    if (this != &o) {
      Remove();
      path_ = std::exchange(o.path_, {});
      fd_ = std::move(o.fd_);
    }
    return *this;
  }
  ~Record() { Remove(); }

  // Notes a resource before it is created. The kind holds no space or newline; the value
  // may hold anything but NUL (it is escaped in the file, and ParseRecord gives it back).
  Status Add(std::string_view kind, std::string_view value);
  // What `brig list` shows of a sandbox: an about line "KEY=VALUE" for each of `about`,
  // then "started=" the time now (UTC, to the second).
  Status Describe(const std::vector<std::pair<std::string, std::string>>& about);
  // The sandbox is gone and everything in it was removed: unlink, then unlock.
  void Remove();
  // The sandbox is gone but not all of it could be removed: unlock and leave the record
  // for brig gc.
  void Keep();

 private:
  std::string path_;
  sys::UniqueFd fd_;
};

// An about line's "KEY=VALUE" split at its first '=' (views into `e`); nullopt for a line of
// another kind, or one without '='. brig list and brig exec read the about lines by it.
std::optional<std::pair<std::string_view, std::string_view>> About(const Entry& e);

// Parses a record's text; lines that are not "KIND VALUE" are skipped.
std::vector<Entry> ParseRecord(std::string_view text);

// Whether the record `dir`/`id` is there and its brig alive (it holds the lock).
enum class RecordState { kMissing, kLive, kStale };
Result<RecordState> StateOf(const std::string& dir, const std::string& id);

struct LiveRecord {
  std::string id;
  std::vector<Entry> entries;
};
// The records in `dir` whose brig is alive, by id. Probes each lock with a shared one,
// without waiting, and lets go of it at once.
Result<std::vector<LiveRecord>> ListLive(const std::string& dir);

struct Collected {
  std::vector<std::string> removed;  // ids whose records were cleaned and removed
  std::vector<Error> failed;         // records kept because cleaning them failed
};

// Runs `clean` on every record in `dir` whose sandbox is gone (its lock is free: taken
// without waiting, so a live brig never holds this up) and removes the record once `clean`
// says everything in it is gone (true); a record `clean` leaves (false) or fails on stays.
// With `only`, just the record of that id.
Result<Collected> CollectStale(
    const std::string& dir,
    const std::function<Result<bool>(const std::string& id, const std::vector<Entry>&)>& clean,
    const std::string& only = "");

}  // namespace brig::state
