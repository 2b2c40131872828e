// sys/id_map: the one writer of user namespace id maps, tried on a real namespace held by a
// child (as root: only root maps ids other than its own).
#include "sys/id_map.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace brig::sys {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fields of a map line, as the kernel prints them padded.
std::string Fields(const std::string& text) {
  std::istringstream in(text);
  std::string out, w;
  while (in >> w) out += (out.empty() ? "" : " ") + w;
  return out;
}

TEST(IdMap, RendersOneLinePerMapping) {
  EXPECT_EQ(
      RenderIdMap({{.inside = 0, .host = 100000, .count = 65536}, {.inside = 65536, .host = 5}}),
      "0 100000 65536\n65536 5 1\n");
  EXPECT_EQ(RenderIdMap({}), "");
}

TEST(IdMap, WritesBothMapsAndDeniesSetgroupsBeforeTheGidMap) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to map ids other than its own";
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char c;
    close(go[1]);
    if (unshare(CLONE_NEWUSER) < 0) _exit(1);
    // Held until the parent has looked, then gone.
    _exit(read(go[0], &c, 1) < 0 ? 1 : 0);
  }
  close(go[0]);
  // The child's namespace exists once its uid_map is no longer the host's whole range.
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  int status = 0;
  while (Read(proc + "uid_map").find("4294967295") != std::string::npos) {
    ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the child could not unshare";
    sched_yield();
  }
  Status s = WriteIdMaps(pid, {.uids = {{.inside = 1000, .host = 65534}},
                               .gids = {{.inside = 1000, .host = 65534}},
                               .deny_setgroups = true});
  std::string uid_map = Read(proc + "uid_map"), gid_map = Read(proc + "gid_map");
  std::string setgroups = Read(proc + "setgroups");
  close(go[1]);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(s) << s.error().Render();
  EXPECT_EQ(Fields(uid_map), "1000 65534 1");
  EXPECT_EQ(Fields(gid_map), "1000 65534 1");
  EXPECT_EQ(setgroups, "deny\n");
}

}  // namespace
}  // namespace brig::sys
