// security/sandbox_ids: the range brig takes each sandbox's host ids from, checked against
// the host's grants and users, and the lease that keeps one sandbox's ids its own.
#include "security/sandbox_ids.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "testlib/testlib.h"

namespace brig::security {
namespace {

using brig::testing::ScratchDir;

constexpr char kPasswd[] =
    "root:x:0:0:root:/root:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    "alice:x:1000:1000::/home/alice:/bin/bash\n";
constexpr char kGroup[] = "root:x:0:\nnogroup:x:65534:\nalice:x:1000:\n";

TEST(IdRange, TheDefaultWhereBrigHasNoEntry) {
  auto r = ChooseIdRange({"alice:100000:65536\n", "alice:100000:65536\n", kPasswd, kGroup});
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->uid, kDefaultFirst);
  EXPECT_EQ(r->gid, kDefaultFirst);
  EXPECT_EQ(r->count, kDefaultCount);
  EXPECT_EQ(r->source, "brig's default");
}

TEST(IdRange, BrigsOwnEntriesWin) {
  auto r = ChooseIdRange({"alice:100000:65536\nbrig:300000:1000\n",
                          "brig:400000:500\nalice:100000:65536\n", kPasswd, kGroup});
  ASSERT_TRUE(r) << r.error().Render();
  EXPECT_EQ(r->uid, 300000u);
  EXPECT_EQ(r->gid, 400000u);
  EXPECT_EQ(r->count, 500u) << "the smaller of the two";
}

TEST(IdRange, AnOverlapWithAnotherGrantOrUserIsRefused) {
  auto grant = ChooseIdRange({"bob:1879000000:100000\n", "", kPasswd, kGroup});
  ASSERT_FALSE(grant);
  EXPECT_EQ(grant.error().Render(),
            "host ids 'brig's host uids 1879048192-1879113727 (brig's default)': overlap "
            "/etc/subuid's entry for bob (1879000000-1879099999); give brig ids of its own "
            "with a line 'brig:FIRST:COUNT' in /etc/subuid and /etc/subgid (brig-run(1), "
            "Host ids)");
  auto user =
      ChooseIdRange({"", "", std::string(kPasswd) + "svc:x:1879048200:1000::/:/bin/sh\n", kGroup});
  ASSERT_FALSE(user);
  EXPECT_NE(user.error().Render().find("hold uid 1879048200 of /etc/passwd's svc"),
            std::string::npos)
      << user.error().Render();
  auto group = ChooseIdRange({"", "", kPasswd, std::string(kGroup) + "g:x:1879048193:\n"});
  ASSERT_FALSE(group);
  EXPECT_NE(group.error().Render().find("hold gid 1879048193 of /etc/group's g"), std::string::npos)
      << group.error().Render();
  auto gid = ChooseIdRange({"", "carol:1879100000:10\n", kPasswd, kGroup});
  ASSERT_FALSE(gid);
  EXPECT_NE(gid.error().Render().find("/etc/subgid's entry for carol"), std::string::npos);
}

TEST(Subordinate, TheCallersFirstGrantByNameOrUid) {
  auto r = ChooseSubordinate(
      {"bob:300000:10\nalice:100000:65536\nalice:900000:5\n", "1000:200000:1000\n", "", ""},
      "alice", 1000, 1000);
  ASSERT_TRUE(r) << r.error().Render();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->uid, 100000u);
  EXPECT_EQ((*r)->uid_count, 65536u);
  EXPECT_EQ((*r)->gid, 200000u) << "/etc/subgid names alice by her uid";
  EXPECT_EQ((*r)->gid_count, 1000u);
}

TEST(Subordinate, NoneUnlessBothFilesGrantIds) {
  for (const IdFiles& files :
       {IdFiles{"alice:100000:65536\n", "", "", ""}, IdFiles{"", "alice:100000:65536\n", "", ""},
        IdFiles{"bob:100000:65536\n", "bob:100000:65536\n", "", ""}}) {
    auto r = ChooseSubordinate(files, "alice", 1000, 1000);
    ASSERT_TRUE(r) << r.error().Render();
    EXPECT_FALSE(r->has_value()) << files.subuid << "|" << files.subgid;
  }
  auto nameless = ChooseSubordinate({"alice:1:2\n", "alice:1:2\n", "", ""}, "", 1000, 1000);
  ASSERT_TRUE(nameless);
  EXPECT_FALSE(nameless->has_value()) << "a uid without a name matches only its number";
}

TEST(Subordinate, AGrantHoldingTheCallersOwnIdOrZeroIsRefused) {
  auto own =
      ChooseSubordinate({"alice:1:65536\n", "alice:100000:65536\n", "", ""}, "alice", 1000, 1000);
  ASSERT_FALSE(own);
  EXPECT_EQ(own.error().Render(),
            "subordinate ids '/etc/subuid's entry for alice': (1-65536) holds the user's own uid "
            "1000");
  auto gid = ChooseSubordinate({"alice:100000:65536\n", "alice:100000:65536\n", "", ""}, "alice",
                               1000, 100001);
  ASSERT_FALSE(gid);
  EXPECT_NE(gid.error().Render().find("own gid 100001"), std::string::npos);
  auto zero =
      ChooseSubordinate({"alice:0:10\n", "alice:100000:65536\n", "", ""}, "alice", 1000, 1000);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().Render().find("must lie within 1-4294967294"), std::string::npos);
  auto past = ChooseSubordinate({"alice:4294967290:10\n", "alice:100000:65536\n", "", ""}, "alice",
                                1000, 1000);
  ASSERT_FALSE(past);
}

TEST(IdRange, BrigNeedsBothEntriesAndNeverRoot) {
  auto half = ChooseIdRange({"brig:300000:1000\n", "", kPasswd, kGroup});
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().Render(),
            "host ids '/etc/subgid': has no entry for brig, and /etc/subuid has one; give brig "
            "both, or neither for its default range");
  EXPECT_FALSE(ChooseIdRange({"brig:0:1000\n", "brig:0:1000\n", kPasswd, kGroup}));
  EXPECT_FALSE(ChooseIdRange({"brig:4294967000:1000\n", "brig:300000:1000\n", kPasswd, kGroup}));
  // A line that is not "name:first:count" grants nothing.
  EXPECT_TRUE(ChooseIdRange({"# bob:1879048192:10\nbob:x:10\n", "", kPasswd, kGroup}));
}

TEST(SandboxIds, ConcurrentTakersNeverShareAndAReleasedIdIsFreeAgain) {
  ScratchDir dir;
  IdRange range{5000, 7000, 3, "test"};
  auto a = SandboxIds::Take(range, dir.path());
  auto b = SandboxIds::Take(range, dir.path());
  auto c = SandboxIds::Take(range, dir.path());
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(a->uid(), b->uid());
  EXPECT_NE(a->uid(), c->uid());
  EXPECT_NE(b->uid(), c->uid());
  for (const SandboxIds* ids : {&*a, &*b, &*c}) {
    EXPECT_GE(ids->uid(), 5000u);
    EXPECT_LT(ids->uid(), 5003u);
    EXPECT_EQ(ids->gid(), ids->uid() + 2000);
  }
  auto none = SandboxIds::Take(range, dir.path());
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("every id of brig's range (test) is held"),
            std::string::npos);
  uid_t freed = b->uid();
  b->Release();
  EXPECT_NE(access((dir.path() + "/" + std::to_string(freed)).c_str(), F_OK), 0)
      << "a released id leaves no file";
  auto again = SandboxIds::Take(range, dir.path());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->uid(), freed);
}

// A killed brig's sandbox dies after it: its uid is taken by no run while any process of
// the host has it, a zombie included, and is free again once none has (issue 27; the last
// note's open door 5: the lock went with the brig, and a run could take the uid of a
// sandbox still dying).
TEST(SandboxIds, AKilledHoldersIdIsTakenAgainOnlyOnceNoProcessHasIt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to start a process of the sandbox's uid";
  ScratchDir dir;
  const uid_t uid = 3999999000;  // no one's: brig's default range ends at 1879113727
  IdRange range{uid, uid, 1, "test"};
  auto has = [uid] {
    auto uids = ProcessUids();
    return uids && uids->count(uid) > 0;
  };
  ASSERT_FALSE(has());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t holder = fork();
  if (holder == 0) {
    auto ids = SandboxIds::Take(range, dir.path());
    char c = ids ? '1' : '0';
    (void)!write(p[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(p[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  // The sandbox: a process of the uid, which outlives its holder.
  pid_t sandbox = fork();
  if (sandbox == 0) {
    if (setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0) {
      (void)!write(p[1], "1", 1);
      pause();
    }
    _exit(1);
  }
  ASSERT_EQ(read(p[0], &c, 1), 1);
  close(p[0]);
  close(p[1]);
  EXPECT_TRUE(has());
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  std::string file = dir.path() + "/" + std::to_string(uid);
  auto taken = SandboxIds::Take(range, dir.path());
  ASSERT_FALSE(taken) << "the uid of a sandbox still alive was taken";
  EXPECT_NE(taken.error().Render().find("or by one whose brig was killed"), std::string::npos)
      << taken.error().Render();
  std::vector<std::string> removed;
  auto drop = [&] {
    auto all = DropLeft(dir.path(), &removed);
    EXPECT_TRUE(all) << all.error().Render();
    return all && *all;
  };
  EXPECT_FALSE(drop());
  EXPECT_TRUE(removed.empty());
  // Killed, not yet reaped: a zombie still has the uid.
  kill(sandbox, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(sandbox), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(has());
  EXPECT_FALSE(drop());
  EXPECT_FALSE(SandboxIds::Take(range, dir.path()));
  waitpid(sandbox, nullptr, 0);
  EXPECT_FALSE(has());
  EXPECT_TRUE(drop());
  EXPECT_EQ(removed, std::vector<std::string>{file});
  taken = SandboxIds::Take(range, dir.path());
  ASSERT_TRUE(taken) << taken.error().Render();
  EXPECT_EQ(taken->uid(), uid);
}

}  // namespace
}  // namespace brig::security
