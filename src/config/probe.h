// The host probe: completes a resolved plan (resolve.h) from the host, after resolution
// and before anything is created. It canonicalises and checks the paths (--rootfs,
// --layer, --workspace and its owner; --result, --audit-log, --export-changes and
// --copy-dir with fs/outputs.h) and the seccomp policy's file, reads the host's nameservers when
// the run names none, reads broker header values and finds broker targets, reads the
// caller's locale for the terminal filter, checks the rlimits against brig's own hard
// limits, and probes the cgroup layout, fitting the limits to it. It creates nothing.
#pragma once

#include "brig/result.h"
#include "config/sandbox.h"

namespace brig::config {

// Errors name the flag, path or controller; all are refusals (exit 125). `environ` is
// brig's own environment, where broker headers' env: values and the locale are read.
Status ProbeHost(Sandbox& sb, char** environ);

// The codeset of the caller's terminal, read as every program writing to it reads it, by
// the locale in `environ` (LC_ALL, LC_CTYPE, LANG): for brig run, and for brig exec's relay.
supervise::TerminalCodeset TerminalCodesetOf(char** environ);

}  // namespace brig::config
