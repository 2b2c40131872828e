// The parent/child wire format and the parent's order check.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <vector>

#include "container/channel.h"
#include "container/launch.h"
#include "container/sync.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace brig::container {
namespace {

struct Pair {
  sys::UniqueFd a, b;
  Pair() {
    int sp[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
    a.Reset(sp[0]);
    b.Reset(sp[1]);
  }
};

TEST(Sync, MessagesRoundTrip) {
  Pair p;
  ASSERT_TRUE(SendMessage(p.a.get(), Msg::kWorkloadExit, 0x0f00, "payload"));
  auto m = RecvMessage(p.b.get(), 1000);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, Msg::kWorkloadExit);
  EXPECT_EQ(m->err, 0x0f00);
  EXPECT_EQ(m->payload, "payload");
}

TEST(Sync, WorkloadExitCarriesHowManyProcessesInitKilled) {
  Pair p;
  ASSERT_TRUE(SendWorkloadExit(p.a.get(), 3 << 8, 2));
  auto m = RecvMessage(p.b.get(), 1000);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, Msg::kWorkloadExit);
  EXPECT_EQ(m->err, 3 << 8);
  EXPECT_EQ(LeftKilled(*m), 2u);
  Message odd{Msg::kWorkloadExit, 0, "xyz"};
  EXPECT_EQ(LeftKilled(odd), 0u) << "a payload that is not a count counts nothing";
}

TEST(Sync, ErrorsRoundTripWithKindStepAndErrno) {
  Pair p;
  Error e = Fail("mount", "/proc", "", ErrorKind::kSetup);
  e.err = EPERM;
  e = std::move(e).Wrap("container init");
  ASSERT_TRUE(SendError(p.a.get(), e));
  auto m = RecvMessage(p.b.get(), 1000);
  ASSERT_TRUE(m);
  Error d = DecodeError(*m);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_EQ(d.op, "mount");
  EXPECT_EQ(d.subject, "/proc");
  EXPECT_EQ(d.kind, ErrorKind::kSetup);
  EXPECT_EQ(d.Render(), "container init: mount '/proc': Operation not permitted");
  Error nf = Fail("command", "nope", "not found in PATH", ErrorKind::kNotFound);
  ASSERT_TRUE(SendError(p.a.get(), nf));
  EXPECT_EQ(DecodeError(*RecvMessage(p.b.get(), 1000)).kind, ErrorKind::kNotFound);
}

TEST(Sync, EofAndTimeoutAreErrors) {
  Pair p;
  auto t = RecvMessage(p.b.get(), 10);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().Render().find("timed out"), std::string::npos);
  p.a.Reset();
  auto eof = RecvMessage(p.b.get(), 1000);
  ASSERT_FALSE(eof);
  EXPECT_NE(eof.error().Render().find("peer closed"), std::string::npos);
}

TEST(Sync, MalformedPacketsAreRejected) {
  Pair p;
  ASSERT_EQ(send(p.a.get(), "xy", 2, 0), 2);
  EXPECT_FALSE(RecvMessage(p.b.get(), 1000));
  uint32_t bogus[3] = {99, 0, 0};
  ASSERT_EQ(send(p.a.get(), bogus, sizeof bogus, 0), static_cast<ssize_t>(sizeof bogus));
  EXPECT_FALSE(RecvMessage(p.b.get(), 1000));
  uint32_t lying[3] = {1, 0, 100};  // claims a payload it does not carry
  ASSERT_EQ(send(p.a.get(), lying, sizeof lying, 0), static_cast<ssize_t>(sizeof lying));
  EXPECT_FALSE(RecvMessage(p.b.get(), 1000));
}

TEST(Sync, DecodeErrorSurvivesGarbagePayload) {
  Message m;
  m.type = Msg::kError;
  m.payload = std::string("\x7f\0\0", 3);
  Error e = DecodeError(m);
  EXPECT_EQ(e.kind, ErrorKind::kInternal);
  EXPECT_EQ(e.op, "brig init");
}

TEST(SyncSequence, AcceptsTheProtocolOrder) {
  SyncSequence s;
  EXPECT_TRUE(s.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(s.Accept(Msg::kReady));
  EXPECT_TRUE(s.Accept(Msg::kWorkloadExit));
  EXPECT_FALSE(s.Accept(Msg::kError));
}

TEST(SyncSequence, ErrorIsAcceptedBeforeTheEnd) {
  SyncSequence s;
  EXPECT_TRUE(s.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(s.Accept(Msg::kError));
  EXPECT_FALSE(s.Accept(Msg::kReady));
}

TEST(Sync, LogLinesCarryTheirLevelAndAreCut) {
  Pair p;
  ASSERT_TRUE(SendLog(p.a.get(), log::Level::kWarn, "mount: proc /proc"));
  auto m = RecvMessage(p.b.get(), 1000);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, Msg::kLog);
  ASSERT_GT(m->payload.size(), 17u);
  EXPECT_EQ(m->payload[0], '\2');
  EXPECT_EQ(m->payload.substr(17), "mount: proc /proc");
  ASSERT_TRUE(SendLog(p.a.get(), log::Level::kDebug, std::string(kMaxPayload * 2, 'x')));
  m = RecvMessage(p.b.get(), 1000);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->payload.size(), kMaxPayload);
}

TEST(SyncSequence, LogLinesAreAcceptedOnlyBeforeReady) {
  SyncSequence s;
  EXPECT_TRUE(s.Accept(Msg::kLog));
  EXPECT_TRUE(s.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(s.Accept(Msg::kLog));
  EXPECT_TRUE(s.Accept(Msg::kLog));
  EXPECT_TRUE(s.Accept(Msg::kReady));
  EXPECT_FALSE(s.Accept(Msg::kLog));
  SyncSequence failed;
  EXPECT_TRUE(failed.Accept(Msg::kError));
  EXPECT_FALSE(failed.Accept(Msg::kLog));
}

TEST(SyncSequence, RejectsOutOfOrder) {
  SyncSequence a;
  EXPECT_FALSE(a.Accept(Msg::kReady));
  SyncSequence b;
  EXPECT_TRUE(b.Accept(Msg::kNeedIdMap));
  EXPECT_FALSE(b.Accept(Msg::kNeedIdMap));
  SyncSequence c;
  EXPECT_FALSE(c.Accept(Msg::kWorkloadExit));
  SyncSequence d;
  EXPECT_FALSE(d.Accept(Msg::kIdMapDone));  // parent-to-child messages never come back
}

// An OCI container's init (oci/launch.cc): a stage child's pid once, between the id map
// and Ready; logs until Created; nothing of brig run's.
TEST(SyncSequence, AContainersOrderHasItsPidAndCreated) {
  SyncSequence s(Flow::kContainer);
  EXPECT_TRUE(s.Accept(Msg::kLog));
  EXPECT_TRUE(s.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(s.Accept(Msg::kPid));
  EXPECT_TRUE(s.Accept(Msg::kReady));
  EXPECT_TRUE(s.Accept(Msg::kLog));
  EXPECT_TRUE(s.Accept(Msg::kCreated));
  EXPECT_FALSE(s.Accept(Msg::kLog));
  SyncSequence no_pid(Flow::kContainer);
  EXPECT_TRUE(no_pid.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(no_pid.Accept(Msg::kReady));
  EXPECT_TRUE(no_pid.Accept(Msg::kError));
  for (const std::vector<Msg>& wrong :
       std::vector<std::vector<Msg>>{{Msg::kPid},
                                     {Msg::kNeedIdMap, Msg::kPid, Msg::kPid},
                                     {Msg::kNeedIdMap, Msg::kReady, Msg::kPid},
                                     {Msg::kNeedIdMap, Msg::kCreated},
                                     {Msg::kNeedIdMap, Msg::kReady, Msg::kWorkloadExit},
                                     {Msg::kNeedIdMap, Msg::kReady, Msg::kCreated, Msg::kError}}) {
    SyncSequence c(Flow::kContainer);
    for (size_t i = 0; i + 1 < wrong.size(); ++i) ASSERT_TRUE(c.Accept(wrong[i])) << i;
    EXPECT_FALSE(c.Accept(wrong.back())) << MsgName(wrong.back()) << " after " << wrong.size() - 1;
  }
}

// An exec's stage child (container/join.h) says the pid and nothing else; the process may fail after.
TEST(SyncSequence, AnExecsChildSaysItsPid) {
  SyncSequence s(Flow::kExec);
  EXPECT_TRUE(s.Accept(Msg::kPid));
  EXPECT_TRUE(s.Accept(Msg::kError));
  EXPECT_FALSE(s.Accept(Msg::kError));
  SyncSequence failed(Flow::kExec);
  EXPECT_TRUE(failed.Accept(Msg::kError));
  for (Msg m : {Msg::kNeedIdMap, Msg::kReady, Msg::kCreated, Msg::kWorkloadExit}) {
    SyncSequence e(Flow::kExec);
    EXPECT_FALSE(e.Accept(m)) << MsgName(m);
  }
  SyncSequence twice(Flow::kExec);
  EXPECT_TRUE(twice.Accept(Msg::kPid));
  EXPECT_FALSE(twice.Accept(Msg::kPid));
  SyncSequence native;
  EXPECT_TRUE(native.Accept(Msg::kNeedIdMap));
  EXPECT_FALSE(native.Accept(Msg::kPid));
}

// An OCI process's listener comes once, after Ready (a container's init) or after the
// stage child's Pid (an exec's process), and never in brig run's order.
TEST(SyncSequence, AListenerComesOnceFromAnOciProcess) {
  SyncSequence c(Flow::kContainer);
  EXPECT_FALSE(SyncSequence(Flow::kContainer).Accept(Msg::kSeccompFd));
  EXPECT_TRUE(c.Accept(Msg::kNeedIdMap));
  EXPECT_FALSE(SyncSequence(c).Accept(Msg::kSeccompFd)) << "before Ready";
  EXPECT_TRUE(c.Accept(Msg::kReady));
  EXPECT_TRUE(c.Accept(Msg::kSeccompFd));
  EXPECT_FALSE(SyncSequence(c).Accept(Msg::kSeccompFd)) << "twice";
  EXPECT_TRUE(c.Accept(Msg::kCreated));
  SyncSequence e(Flow::kExec);
  EXPECT_FALSE(SyncSequence(e).Accept(Msg::kSeccompFd)) << "from the stage child";
  EXPECT_TRUE(e.Accept(Msg::kPid));
  EXPECT_TRUE(e.Accept(Msg::kSeccompFd));
  EXPECT_FALSE(e.Accept(Msg::kSeccompFd));
  SyncSequence native;
  EXPECT_TRUE(native.Accept(Msg::kNeedIdMap));
  EXPECT_TRUE(native.Accept(Msg::kReady));
  EXPECT_FALSE(native.Accept(Msg::kSeccompFd));
  EXPECT_FALSE(SyncSequence(Flow::kContainer).Accept(Msg::kSeccompDone)) << "the parent's word";
}

// The listener travels as SCM_RIGHTS with its packet; a descriptor with any other packet,
// or a SeccompFd without one, is a malformed packet, and what came is closed.
TEST(Sync, OnlyASeccompFdPacketCarriesADescriptor) {
  Pair p;
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  sys::UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  std::thread parent([&] {
    auto m = RecvMessage(p.b.get(), 5000);
    ASSERT_TRUE(m) << m.error().Render();
    EXPECT_EQ(m->type, Msg::kSeccompFd);
    ASSERT_TRUE(m->fd.valid());
    EXPECT_EQ(write(m->fd.get(), "x", 1), 1) << "the descriptor is the one sent";
    EXPECT_TRUE(SendMessage(p.b.get(), Msg::kSeccompDone));
  });
  int listener = dup(w.get());
  ASSERT_TRUE(HandOverListener(p.a.get(), listener));
  parent.join();
  EXPECT_EQ(fcntl(listener, F_GETFD), -1) << "the process's copy is closed once handed over";
  char c = 0;
  EXPECT_EQ(read(r.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');

  uint32_t header[3] = {static_cast<uint32_t>(Msg::kReady), 0, 0};
  auto send_with = [&](int fd) {
    struct iovec iov = {header, sizeof header};
    return sys::SendWithFd(p.a.get(), &iov, 1, fd, "test");
  };
  ASSERT_TRUE(send_with(w.get()));
  auto stray = RecvMessage(p.b.get(), 1000);
  ASSERT_FALSE(stray);
  EXPECT_NE(stray.error().Render().find("descriptors"), std::string::npos);
  header[0] = static_cast<uint32_t>(Msg::kSeccompFd);
  ASSERT_TRUE(send_with(-1));
  EXPECT_FALSE(RecvMessage(p.b.get(), 1000)) << "a SeccompFd without its listener";
  w.Reset();
  EXPECT_EQ(read(r.get(), &c, 1), 0) << "the stray descriptor was closed, not kept";
}

// Init's side waits for the parent's word no longer than it is told, and takes only the
// message it expects.
TEST(Sync, ExpectWaitsBoundedForTheOneMessage) {
  Pair p;
  auto none = Expect(p.b.get(), Msg::kStart, 50);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("timed out"), std::string::npos) << none.error().Render();
  ASSERT_TRUE(SendMessage(p.a.get(), Msg::kIdMapDone));
  EXPECT_FALSE(Expect(p.b.get(), Msg::kStart, 1000));
  ASSERT_TRUE(SendMessage(p.a.get(), Msg::kStart, 0, "state"));
  auto go = Expect(p.b.get(), Msg::kStart, 1000);
  ASSERT_TRUE(go);
  EXPECT_EQ(go->payload, "state");
}

// The parent's end: log lines go to brig's log, not to the front end; the child's kError
// is the error; a message out of the flow's order is refused.
TEST(Channel, NextSkipsLogLinesAndReturnsTheChildsErrorAsTheError) {
  auto opened = Channel::Open(Flow::kSandbox, "brig init");
  ASSERT_TRUE(opened) << opened.error().Render();
  auto& [channel, child] = *opened;
  ASSERT_TRUE(SendLog(child.get(), log::Level::kDebug, "a step"));
  ASSERT_TRUE(SendMessage(child.get(), Msg::kNeedIdMap));
  auto m = channel.Next(1000);
  ASSERT_TRUE(m) << m.error().Render();
  EXPECT_EQ(m->type, Msg::kNeedIdMap);
  Error e = Fail("mount", "/proc", "", ErrorKind::kSetup);
  e.err = EPERM;
  ASSERT_TRUE(SendError(child.get(), e));
  auto failed = channel.Next(1000);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().Render(), "mount '/proc': Operation not permitted");
  EXPECT_EQ(failed.error().kind, ErrorKind::kSetup);
}

TEST(Channel, AMessageOutOfItsFlowsOrderIsRefused) {
  auto opened = Channel::Open(Flow::kExec, "exec");
  ASSERT_TRUE(opened);
  auto& [channel, child] = *opened;
  ASSERT_TRUE(SendMessage(child.get(), Msg::kReady));
  auto m = channel.Next(1000);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().Render(), "sync 'Ready': message out of order");
}

// EOF is what AwaitClose waits for (an exec reached execve, an OCI init let go); a word
// instead is the error, and so is silence past the deadline.
TEST(Channel, AwaitCloseTakesEofAndNothingElse) {
  auto opened = Channel::Open(Flow::kExec, "exec");
  ASSERT_TRUE(opened);
  auto& [channel, child] = *opened;
  auto silent = channel.AwaitClose(50);
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().Render(), "exec: sync: timed out waiting for the other end");
  ASSERT_TRUE(SendMessage(child.get(), Msg::kPid, 0, "42"));
  ASSERT_TRUE(channel.Next(1000));
  ASSERT_TRUE(SendError(child.get(), Fail("command", "nope", "not found", ErrorKind::kNotFound)));
  auto said = channel.AwaitClose(1000);
  ASSERT_FALSE(said);
  EXPECT_EQ(said.error().Render(), "command 'nope': not found");

  auto again = Channel::Open(Flow::kExec, "exec");
  ASSERT_TRUE(again);
  ASSERT_TRUE(SendMessage(again->second.get(), Msg::kPid, 0, "42"));
  ASSERT_TRUE(again->first.Next(1000));
  again->second.Reset();
  EXPECT_TRUE(again->first.AwaitClose(1000));
}

// A send that meets a child gone reports what the child said before it went, not the
// broken pipe it left.
TEST(Channel, ASendToAChildThatIsGoneReportsWhatItSaid) {
  auto opened = Channel::Open(Flow::kSandbox, "brig init");
  ASSERT_TRUE(opened);
  auto& [channel, child] = *opened;
  ASSERT_TRUE(SendMessage(child.get(), Msg::kNeedIdMap));
  ASSERT_TRUE(channel.Next(1000));
  ASSERT_TRUE(SendError(child.get(), Fail("pivot_root", "/", "refused", ErrorKind::kSetup)));
  child.Reset();
  Status s = channel.Send(Msg::kIdMapDone);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().Render(), "pivot_root '/': refused");
}

// The launch's drive to Ready answers each id map request and lets nothing else through:
// a staged init's Ready before its stage child's hand-over, or a pid from an init that
// has no stage child, is out of order.
TEST(Launch, DriveToReadyAnswersTheIdMapAndStopsAtReady) {
  auto opened = Channel::Open(Flow::kContainer, "container init");
  ASSERT_TRUE(opened);
  auto& [channel, child] = *opened;
  ASSERT_TRUE(SendMessage(child.get(), Msg::kNeedIdMap));
  ASSERT_TRUE(SendMessage(child.get(), Msg::kReady));
  int answered = 0;
  sys::Child none;
  Status s = DriveToReady(channel, none, false, [&]() -> Status {
    ++answered;
    return {};
  });
  ASSERT_TRUE(s) << s.error().Render();
  EXPECT_EQ(answered, 1);
  auto done = RecvMessage(child.get(), 1000);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->type, Msg::kIdMapDone);

  for (bool staged : {true, false}) {
    auto o = Channel::Open(Flow::kContainer, "container init");
    ASSERT_TRUE(o);
    ASSERT_TRUE(SendMessage(o->second.get(), Msg::kNeedIdMap));
    ASSERT_TRUE(SendMessage(o->second.get(), staged ? Msg::kReady : Msg::kPid, 0, "42"));
    Status refused = DriveToReady(o->first, none, staged, [] { return Status(); });
    ASSERT_FALSE(refused) << "staged " << staged;
    EXPECT_EQ(refused.error().Render(), std::string("sync '") + (staged ? "Ready" : "Pid") +
                                            "': message out of order");
  }
}

}  // namespace
}  // namespace brig::container
