"""The cgroup parent of a tool's sandboxes (imported by tools/bench and its kin).

brig puts a sandbox under the group it runs in unless given --cgroup-parent; on a managed
host the caller's group belongs to the host's manager, so every tool that runs `brig run`
passes a parent of its own: /TOOL-PID in each hierarchy, made by brig on the first run and
removed here when the tool exits.
"""
import atexit
import glob
import os
import sys


def remove(parent):
    for hierarchy in ["/sys/fs/cgroup"] + glob.glob("/sys/fs/cgroup/*"):
        d = hierarchy + parent
        if os.path.isdir(d):
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"cannot remove cgroup {d}: {e.strerror}", file=sys.stderr)


def make(tool):
    """The parent's path for `tool`, removed at exit; pass it as --cgroup-parent."""
    parent = f"/{tool}-{os.getpid()}"
    atexit.register(remove, parent)
    return parent
