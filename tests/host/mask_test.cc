// The masking both front ends run (fs::ApplySteps's kMask: brig run's kernel paths, an OCI
// container's maskedPaths), on a root of the test's own, in a mount namespace of a forked
// child's: a masked file is covered only by the root's own /dev/null, and only if that is
// the null device (runc CVE-2025-31133).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "fs/rootfs.h"
#include "host/host_fixture.h"
#include "sys/fd.h"

namespace brig::testing {
namespace {

// What `root`/secret is once fs::ApplySteps has masked it, in a child with a mount
// namespace of its own: "the null device", "unchanged" (still the file it was), or the
// masking's error.
std::string MaskSecret(const std::string& root) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string out = [&]() -> std::string {
      if (unshare(CLONE_NEWNS) < 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
        return "no mount namespace";
      }
      sys::UniqueFd fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      std::vector<fs::Step> steps;
      steps.push_back({.kind = fs::StepKind::kMask, .dest = "secret"});
      if (auto s = fs::ApplySteps(fd.get(), steps); !s) return s.error().Render();
      struct stat st;
      if (stat((root + "/secret").c_str(), &st) < 0) return "secret gone";
      if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) return "the null device";
      return S_ISREG(st.st_mode) ? "unchanged" : "something else";
    }();
    (void)!write(p[1], out.data(), out.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

TEST(Mask, AFileIsCoveredOnlyByTheRootsOwnRealNullDevice) {
  if (auto why = NeedRoot(); !why.empty()) GTEST_SKIP() << why;
  const std::vector<std::pair<std::string, std::function<int(const std::string&)>>> nulls = {
      {"a regular file", [](const std::string& p) { return close(creat(p.c_str(), 0666)); }},
      {"a symlink to the host's /dev/null",
       [](const std::string& p) { return symlink("/dev/null", p.c_str()); }},
      {"a relative symlink out of the root",
       [](const std::string& p) { return symlink("../../../../../../dev/null", p.c_str()); }},
      {"the zero device",
       [](const std::string& p) { return mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 5)); }},
  };
  for (const auto& [what, make] : nulls) {
    ScratchDir root;
    root.Write("secret", "kept\n");
    ASSERT_EQ(mkdir((root.path() + "/dev").c_str(), 0755), 0);
    ASSERT_EQ(make(root.path() + "/dev/null"), 0) << what;
    EXPECT_EQ(MaskSecret(root.path()), "mask '/secret': /dev/null is not the null device") << what;
  }
  // Nor through a dev that leads out of the root.
  ScratchDir linked;
  linked.Write("secret", "kept\n");
  ASSERT_EQ(symlink("/dev", (linked.path() + "/dev").c_str()), 0);
  EXPECT_EQ(MaskSecret(linked.path()), "mask '/secret': /dev/null is not the null device");
  // The real one covers it.
  ScratchDir real;
  real.Write("secret", "kept\n");
  ASSERT_EQ(mkdir((real.path() + "/dev").c_str(), 0755), 0);
  ASSERT_EQ(mknod((real.path() + "/dev/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  EXPECT_EQ(MaskSecret(real.path()), "the null device");
}

}  // namespace
}  // namespace brig::testing
