#include "fs/disk_image.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "fs/mount_plan.h"
#include "sys/syscalls.h"

namespace brig::fs {
namespace {

constexpr char kLoopControl[] = "/dev/loop-control";

// mkfs.ext4 from the system's own directories, never from the caller's PATH.
std::string FindMkfs() {
  for (const char* p : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/bin/mkfs.ext4"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return {};
}

// Formats the open file `image` as ext4 with mkfs.ext4, which gets it as its fd 3 and an
// empty environment (no MKE2FS_CONFIG of the caller's). No journal, no backup superblocks
// and no room kept for growing or for root: the file system is thrown away with the
// sandbox, and all of it is the sandbox's; the fewer places mkfs writes, the fewer extents
// the host frees at the end (a free costs a discard on a host fs mounted with one). mkfs
// punches the whole (sparse) file, so it marks the inode tables zeroed and the kernel has
// none to zero in the background: the file holds only what is written.
Status Mkfs(const std::string& mkfs, int image, const std::string& path) {
  return sys::RunProgram(mkfs,
                         {"-q", "-F", "-O", "^has_journal,^resize_inode,sparse_super2", "-E",
                          "lazy_itable_init=1,num_backup_sb=0", "-m", "0", "/proc/self/fd/3"},
                         path, image);
}

// Attaches `image` to a free loop device that clears itself on its last close. Returns the
// device, open, and its path in `dev`.
Result<sys::UniqueFd> AttachLoop(int image, std::string& dev) {
  sys::UniqueFd ctl(open(kLoopControl, O_RDWR | O_CLOEXEC));
  if (!ctl) return SysError("open", kLoopControl);
  // Another process may take the free device between the two calls (EBUSY): ask again.
  for (int attempt = 0; attempt < 16; ++attempt) {
    int n = ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return SysError("find a free loop device", kLoopControl);
    dev = "/dev/loop" + std::to_string(n);
    sys::UniqueFd loop(open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return SysError("open", dev);
    struct loop_config c;
    memset(&c, 0, sizeof c);
    c.fd = static_cast<__u32>(image);
    c.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(loop.get(), LOOP_CONFIGURE, &c) == 0) return loop;
    if (errno != EBUSY) return SysError("attach the disk image to", dev);
  }
  return Fail("attach the disk image", kLoopControl, "every free loop device was taken first");
}

}  // namespace

Status CheckDiskImage(const std::string& dir) {
  if (FindMkfs().empty()) {
    return BadInput("--disk-size", "mkfs.ext4",
                    "not found in /usr/sbin or /sbin: the disk image needs it (install "
                    "e2fsprogs)");
  }
  if (access(kLoopControl, R_OK | W_OK) < 0) {
    return BadInput("--disk-size", kLoopControl,
                    std::string(strerror(errno)) + ": the disk image needs loop devices (load "
                    "the loop module)");
  }
  if (!sys::FsOpen("ext4")) {
    return BadInput("--disk-size", "ext4", "the kernel cannot mount it, and the disk image is one");
  }
  sys::UniqueFd probe(open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!probe) {
    return BadInput("--copy-dir", dir,
                    "its file system cannot hold the disk image of --disk-size, an unnamed file "
                    "(O_TMPFILE: " + std::string(strerror(errno)) +
                        "): use a directory on ext4, xfs, btrfs or tmpfs");
  }
  return {};
}

Result<sys::UniqueFd> NewDiskImage(int dir, const std::string& path, uint64_t size) {
  const std::string what = "disk image in " + path;
  sys::UniqueFd image(openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!image) return SysError("create", what);
  if (ftruncate(image.get(), static_cast<off_t>(size)) < 0) return SysError("size", what);
  std::string mkfs = FindMkfs();
  if (mkfs.empty()) return Fail("format", what, "mkfs.ext4 not found (install e2fsprogs)");
  BRIG_TRY(Mkfs(mkfs, image.get(), what));
  std::string dev;
  // Held until the file system is mounted, which then holds the device alone.
  sys::UniqueFd loop = BRIG_TRY_CTX(AttachLoop(image.get(), dev), what);
  // No cache flushes (each one an fsync of the image on the host): nothing in it outlives
  // the run, so nothing needs to reach the disk in order.
  return NewFs("ext4", {{"source", dev}, {"barrier", "0"}},
               MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, what);
}

}  // namespace brig::fs
