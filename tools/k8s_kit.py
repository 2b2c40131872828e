"""The k8s-kit beside the repository (../shared/k8s-kit: not part of brig, called, never
copied), as tools/k8s-test and tools/bench-k8s drive it: where it is, the environment its
`setup` and `run` get (its K8S3 under build/k8s3), and what the kubelet leaves on the host,
recorded before a run and removed after."""
import glob
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_KIT = os.environ.get("BRIG_K8S_KIT") or os.path.join(
    os.path.dirname(REPO), "shared", "k8s-kit")
# Directories the kubelet and containerd make outside the kit's directory (pod logs, the
# shim sockets, named netns): those that did not exist before are removed after, deepest
# first, each only if empty.
OUTSIDE = ["/run/containerd/s", "/run/containerd", "/run/netns", "/var/log/pods",
           "/var/log/containers"]


def present(kit):
    return os.path.isfile(os.path.join(kit, "run"))


def env(runtime):
    return dict(os.environ, K8S3=os.path.join(REPO, "build", "k8s3"),
                RUNTIME=os.path.abspath(runtime))


def nft_tables():
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    return {line.split(None, 1)[1] for line in out.splitlines() if line.startswith("table ")}


def netns():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def mounted(path):
    """Whether `path` is a mount point in this process's mount namespace."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class HostState:
    """What the host has before a run; after it, clean() removes what the run added (the
    kubelet's iptables-nft tables, the directories of OUTSIDE) and returns what is left."""

    def __init__(self):
        self.tables, self.namespaces = nft_tables(), netns()
        self.absent = [d for d in OUTSIDE if not os.path.lexists(d)]

    def clean(self):
        for table in sorted(nft_tables() - self.tables):
            subprocess.run(["nft", "delete", "table", *table.split()], capture_output=True)
        for d in self.absent:
            # The CNI's netns library makes /run/netns a mount of itself, shared, the first
            # time it is used on a host: gone with the directory, once nothing is in it.
            # (os.path.ismount cannot tell a mount of a directory onto itself: mountinfo can.)
            if os.path.isdir(d) and not os.listdir(d) and mounted(d):
                subprocess.run(["umount", d], capture_output=True)
            try:
                os.rmdir(d)
            except OSError:
                pass
        left = [f"nft table {t}" for t in sorted(nft_tables() - self.tables)]
        left += [f"netns {n}" for n in sorted(netns() - self.namespaces)]
        left += [d for d in self.absent if os.path.lexists(d)]
        left += glob.glob("/sys/fs/cgroup/*/k8s3") + glob.glob("/sys/fs/cgroup/k8s3")
        return left
