// brig's log (issue 15, item 5): runc's global options before the verb, json lines with
// level/msg/time, brig init's setup steps forwarded over the sync socket so a failure
// inside comes with the steps before it, hostile log files refused before anything runs,
// and the one-line errors on stderr exactly as they were.
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "host/host_fixture.h"
#include "sys/fd.h"

namespace brig::testing {
namespace {

struct LogLine {
  std::string level, msg, time;
};

// Every line of `path` as json; a line that does not parse, or lacks one of the three
// keys as a string, fails the test.
std::vector<LogLine> JsonLines(const std::string& path) {
  std::vector<LogLine> lines;
  std::istringstream in(ReadFileOrEmpty(path));
  std::string text;
  while (std::getline(in, text)) {
    google::protobuf::Struct s;
    auto parsed = google::protobuf::util::JsonStringToMessage(text, &s);
    EXPECT_TRUE(parsed.ok()) << text;
    const auto& f = s.fields();
    for (const char* key : {"level", "msg", "time"}) {
      EXPECT_TRUE(f.count(key) > 0 && f.at(key).has_string_value()) << key << " in " << text;
    }
    if (!parsed.ok() || f.count("msg") == 0) continue;
    lines.push_back({f.at("level").string_value(), f.at("msg").string_value(),
                     f.at("time").string_value()});
  }
  return lines;
}

// The index of the first line whose msg starts with `prefix`, or -1.
int Find(const std::vector<LogLine>& lines, const std::string& prefix) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].msg.rfind(prefix, 0) == 0) return static_cast<int>(i);
  }
  return -1;
}

std::string Dump(const std::vector<LogLine>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.level + " " + l.msg + "\n";
  return out;
}

class Log : public HostTest {};

TEST_F(Log, DebugJsonLinesHoldTheSupervisorsAndInitsSteps) {
  ScratchDir dir;
  std::string log = dir.path() + "/brig.log";
  auto r = RunBrig({"--debug", "--log", log, "--log-format", "json", "run", "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "the log went to its file, not to stderr";
  auto lines = JsonLines(log);
  for (const auto& l : lines) EXPECT_EQ(l.level, "debug") << l.msg;
  for (const char* step :
       {"plan resolved", "mount plan prepared", "clone: brig init is pid", "init: started",
        "init: mount: mount proc /proc", "init: pivot_root", "init: capabilities dropped",
        "init: ready", "sync: Ready", "teardown: brig init reaped"}) {
    EXPECT_GE(Find(lines, step), 0) << step << " missing from:\n" << Dump(lines);
  }
  EXPECT_LT(Find(lines, "init: pivot_root"), Find(lines, "sync: Ready")) << Dump(lines);
}

// Init resolves the command last, after every setup step: a command it cannot find fails
// inside init, and the log holds what init did before it, in order, then the failure.
// stderr is the same one line as without a log.
TEST_F(Log, AFailureInsideInitComesWithTheStepsBeforeIt) {
  ScratchDir dir;
  std::string log = dir.path() + "/brig.log";
  auto plain = RunBrig({"run", "--", "no-such-command-anywhere"});
  auto logged = RunBrig({"--debug", "--log=" + log, "--log-format=json", "run", "--",
                         "no-such-command-anywhere"});
  EXPECT_EQ(plain.exit_code, 127) << plain.err;
  EXPECT_EQ(logged.exit_code, 127) << logged.err;
  EXPECT_EQ(logged.err, plain.err);
  auto lines = JsonLines(log);
  int mount = Find(lines, "init: mount: "), root = Find(lines, "init: pivot_root"),
      caps = Find(lines, "init: capabilities dropped"), failed = Find(lines, "sync: init failed");
  ASSERT_GE(mount, 0) << Dump(lines);
  EXPECT_LT(mount, root) << Dump(lines);
  EXPECT_LT(root, caps) << Dump(lines);
  ASSERT_LT(caps, failed) << Dump(lines);
  EXPECT_NE(lines[failed].msg.find("no-such-command-anywhere"), std::string::npos)
      << lines[failed].msg;
  EXPECT_EQ(Find(lines, "init: ready"), -1) << Dump(lines);
  EXPECT_EQ(lines.back().level, "error") << Dump(lines);
  EXPECT_EQ("brig: " + lines.back().msg + "\n", logged.err);
}

// Without --debug the log holds only the run's error, the line stderr has too (a caller
// reading the log, as containerd reads runc's, finds it there).
TEST_F(Log, WithoutDebugOnlyTheErrorIsWritten) {
  ScratchDir dir;
  std::string log = dir.path() + "/brig.log";
  auto ok = RunBrig({"--log", log, "--log-format", "json", "run", "--", "true"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  struct stat st;
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  EXPECT_EQ(ReadFileOrEmpty(log), "");
  auto nf = RunBrig({"--log", log, "--log-format", "json", "run", "--",
                     "no-such-command-anywhere"});
  EXPECT_EQ(nf.exit_code, 127) << nf.err;
  auto lines = JsonLines(log);
  ASSERT_EQ(lines.size(), 1u) << Dump(lines);
  EXPECT_EQ(lines[0].level, "error");
  EXPECT_EQ("brig: " + lines[0].msg + "\n", nf.err);
  // And without --log, stderr holds only what it always held.
  auto plain = RunBrig({"run", "--", "no-such-command-anywhere"});
  EXPECT_EQ(nf.err, plain.err);
  auto on_stderr = RunBrig({"--log-format", "json", "run", "--", "no-such-command-anywhere"});
  EXPECT_EQ(on_stderr.err, plain.err) << "the error twice on stderr";
}

// A FIFO (with or without a reader) or a symlink as --log: one line, exit 125, and the
// command never ran.
TEST_F(Log, AFifoOrASymlinkIsRefusedBeforeAnythingRuns) {
  ScratchDir ws, dir;
  ASSERT_EQ(chown(ws.path().c_str(), 1234, 1234), 0);
  std::string fifo = dir.path() + "/fifo", link = dir.path() + "/link";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string target = dir.Write("target", "");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  auto run = [&](const std::string& log) {
    return RunBrig({"--debug", "--log", log, "run", "--profile", RwProfile(), "--workspace",
                    ws.path(), "--", "touch", "/workspace/ran"});
  };
  auto no_reader = run(fifo);
  EXPECT_EQ(no_reader.exit_code, 125);
  EXPECT_EQ(no_reader.err, "brig: --log '" + fifo + "': not a regular file\n");
  {
    // With a reader, open(2) would succeed: the type check refuses it.
    sys::UniqueFd reader(open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    ASSERT_TRUE(reader);
    auto with_reader = run(fifo);
    EXPECT_EQ(with_reader.exit_code, 125);
    EXPECT_EQ(with_reader.err, "brig: --log '" + fifo + "': not a regular file\n");
  }
  auto linked = run(link);
  EXPECT_EQ(linked.exit_code, 125);
  EXPECT_EQ(linked.err, "brig: --log '" + link + "': a symlink\n");
  EXPECT_EQ(ReadFileOrEmpty(target), "") << "nothing written through the link";
  EXPECT_NE(access((ws.path() + "/ran").c_str(), F_OK), 0) << "the command ran";
  // The same command with a regular log file does run: the refusals above were the log's.
  auto ran = run(dir.path() + "/ok.log");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(access((ws.path() + "/ran").c_str(), F_OK), 0);
}

TEST_F(Log, TextLinesAndStderrByDefault) {
  auto r = RunBrig({"--debug", "run", "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" level=debug msg=\"init: pivot_root"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("time=\"", 0), 0u) << r.err;
}

}  // namespace
}  // namespace brig::testing
