// The paths brig writes for the user (--result, --manifest, --audit-log, --export-changes,
// --copy-dir),
// checked before anything is created or run: a run whose outputs cannot be written must
// not do the phase's work first and then fail. Each directory must exist, be writable and
// lie outside the workspace (where the sandbox could plant a link, truncate or forge what
// brig writes; design.md, Invariant 5); what is already at a file's path must be a regular
// file, never a FIFO, symlink or device that writing or renaming would reach through.
#pragma once

#include <string>

#include "brig/result.h"

namespace brig::fs {

struct Outputs {
  std::string result;          // a file, replaced whole at the end
  std::string audit_log;       // a file, appended to
  std::string export_changes;  // a directory brig creates; must be absent
  std::string copy_dir;        // an existing directory brig makes its scratch in
  std::string manifest;        // a file, replaced whole at the start
};

// Checks every non-empty path in `o`. export_changes and copy_dir come back absolute with
// their directories' symlinks resolved, so what is checked is what is later written.
Status CheckOutputs(Outputs& o, const std::string& workspace);

}  // namespace brig::fs
