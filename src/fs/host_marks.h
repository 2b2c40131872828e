// What a sandbox's filesystem puts on the host for its lifetime, outside brig's detached
// mounts: a placeholder at each protected path a read-write workspace lacks (the mount
// point that holds the path), and a copy workspace's scratch directory
// under --copy-dir; and what brig writes beside a user's output before renaming it into
// place: the result's temporary file and an export's partial directory. Each is noted in
// the sandbox's record before it is made, removed once done with, and by brig gc
// (RemoveStaleMark) after brig itself died.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "brig/result.h"
#include "state/record.h"
#include "sys/fd.h"

namespace brig::fs {

// The kinds of record entries (state/record.h) that name marks.
inline constexpr char kPlaceholderKind[] = "placeholder";
inline constexpr char kScratchKind[] = "scratch";
inline constexpr char kTempKind[] = "temp";        // --result's FILE.tmpPID
inline constexpr char kPartialKind[] = "partial";  // --export-changes' DIR.partial-PID

// brig's placeholder at a missing protected path, in a read-write workspace and in a
// copy's upper layer alike: a FIFO of mode 0000. git lists, adds and cleans only regular
// files, symlinks and directories (and no empty directory), so `git status` in the
// workspace and `git add -A` never see it, and nothing in the repository changes to hide
// it; no one without CAP_DAC_OVERRIDE may open it (so no reader blocks on it), and held
// read-only (the mount on it) its mode cannot change. An empty file or directory would be
// listed by git status or removed by git clean.
inline constexpr mode_t kPlaceholderMode = 0;

// Notes `path`, a temporary file (kTempKind) or partial directory (kPartialKind) brig is
// about to make beside a user's output, in `record`; its owner removes or renames it.
Status NoteOutputTemp(state::Record& record, const char* kind, const std::string& path);

class HostMarks {
 public:
  HostMarks() = default;
  HostMarks(HostMarks&&) = default;
  HostMarks& operator=(HostMarks&& o) noexcept {
    if (this != &o) {
      (void)Remove();
      marks_ = std::move(o.marks_);
    }
    return *this;
  }
  ~HostMarks() { (void)Remove(); }

  // Makes a placeholder (kPlaceholderMode) owned by uid:gid at `name` in the directory
  // `dir`; `path` names it on the host. Fails with EEXIST if something is there.
  Status AddPlaceholder(state::Record& record, int dir, const std::string& name,
                        const std::string& path, uid_t uid, gid_t gid);
  // Makes the directory `name`, 0700, in `dir` (`path` names it) and returns it, opened.
  Result<sys::UniqueFd> AddScratch(state::Record& record, int dir, const std::string& name,
                                   const std::string& path);
  // Removes what was made, once the sandbox is gone: a placeholder only if it is still the
  // FIFO brig made, a scratch directory with everything in it. Idempotent.
  Status Remove();

 private:
  struct Mark {
    bool scratch;
    sys::UniqueFd dir;  // where it was made, held so a rename above cannot redirect removal
    std::string name, path;
  };
  std::vector<Mark> marks_;
};

// Whether `kind` is one of the record entry kinds above.
bool IsMarkKind(const std::string& kind);

// brig gc: removes what a record entry of one of the kinds above names, if the directory it
// was made in is still the one noted and it is still what brig made. Returns whether
// something was removed.
Result<bool> RemoveStaleMark(const std::string& kind, const std::string& value);

}  // namespace brig::fs
