// The caller's descriptors stay the caller's (issue 14, item 10): the workload writes to
// pipes brig relays, and gets a terminal of its own when the caller's stdin is one; what
// it does to them never reaches the caller's files or terminal, and what it writes to a
// terminal never makes the terminal answer (issue 27, item 6).
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "host/host_fixture.h"

namespace brig::testing {
namespace {

class Stdio : public HostTest {};

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

// Starts brig with the given descriptors as its 0, 1 and 2, and `lc_all` as its LC_ALL,
// whose codeset says how the caller's terminal decodes (whatever the tests' own locale).
// With `terminal`, brig leads a session whose controlling terminal that is, as in an
// interactive shell.
pid_t Start(std::vector<std::string> args, int in, int out, int err, int terminal = -1,
            const std::string& lc_all = "C.UTF-8") {
  args.insert(args.begin(), BrigBinary());
  auto argv = Argv(args);
  std::vector<std::string> env = {"LC_ALL=" + lc_all};
  for (char** e = environ; *e; ++e) {
    if (strncmp(*e, "LC_ALL=", 7) != 0) env.push_back(*e);
  }
  auto envp = Argv(env);
  pid_t pid = fork();
  if (pid == 0) {
    if (terminal >= 0) {
      setsid();
      ioctl(terminal, TIOCSCTTY, 0);
    }
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(99);
  }
  NoteSpawned(pid);
  return pid;
}

// Reads the terminal's master side until `want` has appeared, or it is closed.
bool ReadUntil(int master, std::string& seen, const std::string& want) {
  while (seen.find(want) == std::string::npos) {
    struct pollfd p = {master, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) return false;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) return false;
    seen.append(buf, static_cast<size_t>(n));
  }
  return true;
}

TEST_F(Stdio, TheCallersStdoutFileKeepsItsEarlierContent) {
  ScratchDir d;
  std::string path = d.Write("harness.log", "EARLIER\n");
  int file = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  ASSERT_EQ(lseek(file, 0, SEEK_END), 8);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  pid_t pid = Start({"run", "--workspace", ProbeDir(), "--", "/workspace/brig-probe",
                     "clobber-stdout"},
                    null, file, null);
  int code = WaitExit(pid);
  close(file);
  close(null);
  std::string log = ReadFileOrEmpty(path);
  EXPECT_EQ(code, 0) << log;
  EXPECT_EQ(log.rfind("EARLIER\n", 0), 0u) << "the workload erased the caller's file: " << log;
  EXPECT_NE(log.find("denied "), std::string::npos) << log;
}

// A harness, `script` (a sh script), run as an interactive shell runs a job: leading a
// session whose controlling terminal is `terminal`, the terminal's foreground. Its
// children, brig among them, share its process group, as they do under any harness.
pid_t StartHarness(const std::string& script, int terminal) {
  std::vector<std::string> args = {"/bin/sh", "-c", script};
  auto argv = Argv(args);
  std::string brig = "BRIG=" + BrigBinary();
  std::vector<std::string> env = {brig, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8"};
  auto envp = Argv(env);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    ioctl(terminal, TIOCSCTTY, 0);
    for (int fd = 0; fd < 3; ++fd) dup2(terminal, fd);
    execve(argv[0], argv.data(), envp.data());
    _exit(99);
  }
  NoteSpawned(pid);
  return pid;
}

// The harness author's case (issue 32, item 2): a harness run from a terminal, which
// traps ^C, runs a phase. ^C typed on the terminal reaches the harness, whose trap fires,
// and brig, which passes SIGINT on to the sandbox; the phase ends 130. brig took the
// terminal raw and sent ^C to the workload alone before, and the harness went on to exit 0.
TEST_F(Stdio, ACtrlCTypedAtAHarnessReachesTheHarnessAndThePhase) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  pid_t pid = StartHarness(
      "trap 'echo harness-trapped' INT; "
      "\"$BRIG\" run -- /bin/sh -c 'test -t 0 || echo no-terminal; echo ready; exec sleep 600'; "
      "echo \"brig=$?\"",
      slave);
  std::string seen;
  ASSERT_TRUE(ReadUntil(master, seen, "ready")) << seen;
  EXPECT_NE(seen.find("no-terminal"), std::string::npos) << seen;
  ASSERT_EQ(write(master, "\x03", 1), 1);
  EXPECT_TRUE(ReadUntil(master, seen, "brig=130")) << seen;
  EXPECT_NE(seen.find("harness-trapped"), std::string::npos) << seen;
  EXPECT_EQ(WaitExit(pid), 0) << seen;
  close(slave);
  close(master);
}

// brig run --tty in a harness: the caller's terminal relayed (raw: ^C goes to the
// workload, which ends 130), as Docker's -it; the harness's trap does not fire.
TEST_F(Stdio, TtyInAHarnessGivesTheWorkloadTheTerminalAndItsCtrlC) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  pid_t pid = StartHarness(
      "trap 'echo harness-trapped' INT; "
      "\"$BRIG\" run -t -- /bin/sh -c 'test -t 0 && echo own-terminal; echo ready; exec sleep "
      "600'; echo \"brig=$?\"",
      slave);
  std::string seen;
  ASSERT_TRUE(ReadUntil(master, seen, "ready")) << seen;
  EXPECT_NE(seen.find("own-terminal"), std::string::npos) << seen;
  ASSERT_EQ(write(master, "\x03", 1), 1);
  EXPECT_TRUE(ReadUntil(master, seen, "brig=130")) << seen;
  EXPECT_EQ(seen.find("harness-trapped"), std::string::npos) << seen;
  EXPECT_EQ(WaitExit(pid), 0) << seen;
  close(slave);
  close(master);
}

// --no-tty as a job of an interactive shell (brig leads the foreground group): pipes, no
// terminal inside; ^C reaches brig, which passes SIGINT on.
TEST_F(Stdio, NoTtyGivesPipesEvenToAJobOfAnInteractiveShell) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  pid_t pid = Start({"run", "-T", "--", "/bin/sh", "-c",
                     "test -t 0 || test -t 1 || test -t 2 || echo no-terminal; echo ready; "
                     "exec sleep 600"},
                    slave, slave, slave, slave);
  std::string seen;
  ASSERT_TRUE(ReadUntil(master, seen, "ready")) << seen;
  EXPECT_NE(seen.find("no-terminal"), std::string::npos) << seen;
  ASSERT_EQ(write(master, "\x03", 1), 1);
  EXPECT_EQ(WaitExit(pid), 130) << seen;
  close(slave);
  close(master);
}

// --tty with no terminal anywhere: the workload's stdout and stderr are a terminal (for
// colour and line buffering), merged on brig's stdout; its stdin is still brig's, and the
// terminal is not its controlling one, so nothing waits on it for input.
TEST_F(Stdio, TtyWithoutATerminalGivesOneForOutputOnly) {
  auto r = RunCommand({"/bin/sh", "-c",
                       "echo data | " + BrigBinary() +
                           " run --tty -- /bin/sh -c 'test -t 1 && echo out-terminal; "
                           "test -t 2 && echo err-terminal >&2; test -t 0 || echo in-pipe; "
                           "read x; echo \"read=$x\"; (: </dev/tty) 2>/dev/null || echo "
                           "no-controlling-terminal'"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "out-terminal\r\nerr-terminal\r\nin-pipe\r\nread=data\r\nno-controlling-terminal\r\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(Stdio, SttyInsideLeavesTheCallersTerminalAsItWas) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  struct termios before = {};
  ASSERT_EQ(tcgetattr(slave, &before), 0);
  pid_t pid = Start({"run", "--", "/bin/sh", "-c", "stty -echo -icanon raw; echo changed"}, slave,
                    slave, slave, slave);
  std::string seen;
  EXPECT_TRUE(ReadUntil(master, seen, "changed")) << seen;
  EXPECT_EQ(WaitExit(pid), 0) << seen;
  struct termios after = {};
  ASSERT_EQ(tcgetattr(slave, &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag) << "local modes changed (echo, icanon)";
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
  EXPECT_EQ(after.c_cflag, before.c_cflag);
  EXPECT_EQ(memcmp(after.c_cc, before.c_cc, sizeof after.c_cc), 0);
  close(slave);
  close(master);
}

TEST_F(Stdio, TheWorkloadsOwnTerminalGetsInputAndWindowSize) {
  struct winsize ws = {};
  ws.ws_row = 33;
  ws.ws_col = 77;
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  std::string script =
      "test -t 0 && test -t 1 && echo own-tty; stty size; read line; echo \"got $line\"; "
      "while [ \"$(stty size)\" != \"40 100\" ]; do :; done; echo resized";
  pid_t pid = Start({"run", "--", "/bin/sh", "-c", script}, slave, slave, slave, slave);
  std::string seen;
  EXPECT_TRUE(ReadUntil(master, seen, "33 77")) << seen;
  EXPECT_NE(seen.find("own-tty"), std::string::npos) << seen;
  ASSERT_EQ(write(master, "hello\r", 6), 6);
  EXPECT_TRUE(ReadUntil(master, seen, "got hello")) << seen;
  // The resize reaches brig as the kernel's SIGWINCH to the terminal's foreground group.
  ws.ws_row = 40;
  ws.ws_col = 100;
  ASSERT_EQ(ioctl(master, TIOCSWINSZ, &ws), 0);
  EXPECT_TRUE(ReadUntil(master, seen, "resized")) << seen;
  EXPECT_EQ(WaitExit(pid), 0) << seen;
  close(slave);
  close(master);
}

// An end of file typed before brig took the terminal (as script(1) types one when its own
// stdin is not a terminal) reaches the workload as an end of file: raw mode used to turn
// it into a NUL byte, which the workload read and its terminal echoed as ^@.
TEST_F(Stdio, AnEndOfFileTypedBeforeTheStartIsOneInsideNotANul) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  ASSERT_EQ(write(master, "\x04x\r", 3), 3);
  pid_t pid = Start({"run", "--", "/bin/sh", "-c",
                     "read -r a; echo \"first=$? [$a]\"; read -r b; echo \"second=$? [$b] end\""},
                    slave, slave, slave, slave);
  std::string seen;
  bool ended = ReadUntil(master, seen, " end");
  if (!ended) kill(pid, SIGTERM);
  EXPECT_TRUE(ended) << seen;
  EXPECT_EQ(WaitExit(pid), 0) << seen;
  EXPECT_NE(seen.find("first=1 []"), std::string::npos) << seen;
  EXPECT_NE(seen.find("second=0 [x] end"), std::string::npos) << seen;
  EXPECT_EQ(seen.find('\0'), std::string::npos) << seen;
  EXPECT_EQ(seen.find("^@"), std::string::npos) << seen;
  close(slave);
  close(master);
}

TEST_F(Stdio, UnderScriptWithNoTerminalOnItsStdinTheOutputIsTheWorkloadsAlone) {
  // script(1) (bsdutils, essential in Debian) gives brig a terminal; its own stdin is
  // /dev/null here, so it types an end of file on that terminal at once.
  auto r = RunCommand({"script", "-qec", BrigBinary() + " run -- /bin/echo hi", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hi\r\n");
}

// What colour, cursor and screen handling ordinary tools write; no newline, which the
// workload's terminal would turn into CR LF.
const std::string kOrdinaryOutput =
    "\x1b[1;31mred\x1b[0m \x1b[38;5;208m256\x1b[39m \x1b[38;2;1;2;3;48;2;4;5;6mrgb\x1b[m"
    "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J\x1b[3;20r\x1b[10;5H\x1b[2K\x1b[1G\x1b[0K\x1b[2A"
    "\x1b(0lqk\x1b(B\x1b[2 q\x1b[?2004h\x1b[?2004l\x1b[?25h\x1b[?1049l\r\t\x07"
    " caf\xc3\xa9 \xe2\x9c\x93 \xe2\x95\x90 \xf0\x9f\x99\x82";

// Sequences a terminal answers on its input, or that set its title or clipboard.
const std::vector<std::string> kQueries = {
    // answered on the terminal's input
    "\x1b[6n", "\x1b[5n", "\x1b[c", "\x1b[>c", "\x1b[=c", "\x1bZ", "\x05", "\x1b[21t", "\x1b[14t",
    "\x1b[18t", "\x1b[?2004$p", "\x1b[>q", "\x1b]52;c;?\x07", "\x1b]10;?\x07", "\x1b]11;?\x1b\\",
    "\x1b]12;?\x07", "\x1b]4;1;?\x07", "\x1bP$qm\x1b\\", "\x1bP+q544e\x1b\\",
    // the same as C1 controls
    "\2336n", "\302\2336n",
    // the clipboard and the title set
    "\x1b]52;c;aGk=\x07", "\x1b]0;title\x07"};

// The workload's argument that writes `bytes` with sh's printf, every byte but letters and
// digits as an octal escape.
std::string PrintfOf(const std::string& bytes) {
  std::string fmt;
  for (unsigned char c : bytes) {
    char esc[8];
    snprintf(esc, sizeof esc, "\\%03o", c);
    fmt += isalnum(c) ? std::string(1, static_cast<char>(c)) : esc;
  }
  return "printf '" + fmt + "'";
}

// <<, the ordinary output, each query followed by a digit, >>; and what of it may arrive.
std::string Payload() {
  std::string p = "<<" + kOrdinaryOutput;
  for (size_t i = 0; i < kQueries.size(); ++i) p += kQueries[i] + std::to_string(i % 10);
  return p + ">>";
}
std::string FilteredPayload() {
  std::string p = "<<" + kOrdinaryOutput;
  for (size_t i = 0; i < kQueries.size(); ++i) p += std::to_string(i % 10);
  return p + ">>";
}

TEST_F(Stdio, TheCallersTerminalGetsOrdinaryOutputByteForByteAndNoQuery) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  pid_t pid =
      Start({"run", "--", "/bin/sh", "-c", PrintfOf(Payload())}, slave, slave, slave, slave);
  std::string seen;
  bool ended = ReadUntil(master, seen, ">>");
  if (!ended) kill(pid, SIGTERM);
  EXPECT_TRUE(ended) << ::testing::PrintToString(seen);
  EXPECT_EQ(WaitExit(pid), 0);
  EXPECT_EQ(seen, FilteredPayload());
  close(slave);
  close(master);
}

// Whether `s` holds a byte 0x80 to 0x9F, a C1 control to a terminal outside UTF-8.
bool HasC1Byte(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char b) { return (b & 0xE0) == 0x80; });
}

// A terminal outside UTF-8 (xterm in a Latin-1 locale) takes the bytes 0x80 to 0x9F for C1
// controls, UTF-8's continuation bytes among them: to it U+01DB (C7 9B) is 'Ç' and CSI, so
// C7 9B '6' 'n' asks where the cursor is, and the answer comes on the terminal's input.
// brig reads the terminal's codeset from its own locale, as every program that writes to
// that terminal does: outside UTF-8 no byte 0x80 to 0x9F reaches it, text's bytes included;
// in UTF-8 the character is text and passes.
TEST_F(Stdio, OutsideAUtf8LocaleNoByteTheTerminalTakesForAC1ControlReachesIt) {
  // U+01DB and "6n"; a C1 OSC (the title) as a byte; 'é' in Latin-1, no UTF-8.
  const std::string payload = "<<\xc7\2336n|\2350;title\x07|\xe9>>";
  const struct {
    const char* lc_all;
    std::string want;
  } cases[] = {
      {"en_US.ISO-8859-1", "<<\xc7||\xe9>>"},  // 'Ç', the CSI dropped with its "6n"
      {"C", "<<?6n||?>>"},                     // either codeset: a '?' for each
      {"C.UTF-8", "<<\xc7\2336n||?>>"},        // U+01DB is text
  };
  for (const auto& c : cases) {
    int master = -1, slave = -1;
    ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
    pid_t pid = Start({"run", "--", "/bin/sh", "-c", PrintfOf(payload)}, slave, slave, slave, slave,
                      c.lc_all);
    std::string seen;
    bool ended = ReadUntil(master, seen, ">>");
    if (!ended) kill(pid, SIGTERM);
    EXPECT_TRUE(ended) << c.lc_all << ": " << ::testing::PrintToString(seen);
    EXPECT_EQ(WaitExit(pid), 0) << c.lc_all;
    EXPECT_EQ(seen, c.want) << c.lc_all;
    if (std::string(c.lc_all) != "C.UTF-8") {
      EXPECT_FALSE(HasC1Byte(seen)) << c.lc_all;
    }
    close(slave);
    close(master);
  }
}

// Without a terminal on stdin the workload writes to pipes; where brig's stdout and stderr
// are a terminal, what reaches it is filtered all the same.
TEST_F(Stdio, PipesToATerminalAreFilteredToo) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (const char* redirect : {"", " >&2"}) {
    pid_t pid =
        Start({"run", "--", "/bin/sh", "-c", PrintfOf(Payload()) + redirect}, null, slave, slave);
    std::string seen;
    bool ended = ReadUntil(master, seen, ">>");
    if (!ended) kill(pid, SIGTERM);
    EXPECT_TRUE(ended) << ::testing::PrintToString(seen);
    EXPECT_EQ(WaitExit(pid), 0);
    EXPECT_EQ(seen, FilteredPayload()) << "to fd" << redirect;
  }
  close(null);
  close(slave);
  close(master);
}

// Output to a pipe or a file is the harness's record: it passes as written.
TEST_F(Stdio, OutputToAPipePassesAsWritten) {
  auto r = Sh(PrintfOf(Payload()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Payload());
}

// The limit counts what the filter holds: it is never passed, and a sequence it cuts never
// reaches the terminal in part, where the next writer's bytes could complete it.
TEST_F(Stdio, TheLimitNeverSendsATerminalPartOfASequence) {
  ScratchDir d;
  std::string result = d.path() + "/result.json";
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  pid_t pid = Start({"run", "--output-limit", "10", "--result", result, "--", "/bin/sh", "-c",
                     PrintfOf("abcdefgh\x1b[6nZZZZ")},
                    slave, slave, slave, slave);
  EXPECT_EQ(WaitExit(pid), 0);
  // With no slave left open, the master reads what is queued, then EIO.
  close(slave);
  std::string seen;
  char buf[256];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) {
    seen.append(buf, static_cast<size_t>(n));
  }
  close(master);
  EXPECT_EQ(seen, "abcdefgh");
  std::string json = ReadFileOrEmpty(result);
  EXPECT_NE(json.find("\"stdout_truncated\":true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"stdout_bytes\":8,"), std::string::npos) << json;
}

// A real terminal emulator: tmux answers device attributes, status and cursor reports,
// XTVERSION and colour queries itself, on the pane's input. The workload writes queries,
// reads a line, and writes them again as it exits; brig then ends, and the pane's shell
// reads a line. The pane's shell runs brig as a script's child, so --tty asks for the
// terminal. The test types each line once it has seen, through tmux's pipe-pane, the
// output before it: tmux has parsed that output by then and queued any answer ahead of
// the keys, so an answer would show in the line, inside the sandbox or after brig.
class StdioTmux : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (access("/usr/bin/tmux", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/tmux (tools/deps.txt)";
  }
  void TearDown() override {
    if (!socket_.empty()) RunCommand({"tmux", "-S", socket_, "kill-server"});
    if (out_ >= 0) close(out_);
    HostTest::TearDown();
  }
  RunOutput Tmux(std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-S", socket_});
    return RunCommand(args);
  }
  // Reads what the pane wrote until `want` has appeared.
  bool PaneUntil(const std::string& want) { return ReadUntil(out_, seen_, want); }

  ScratchDir d_;  // outlives TearDown, which needs the server's socket in it
  std::string socket_;
  int out_ = -1;
  std::string seen_;
};

// The hex digits of a line as the shell read it: printable whatever the terminal sent.
constexpr char kHexLine[] = "IFS= read -r line; printf '%s' \"$line\" | od -An -tx1 | tr -d ' \\n'";

TEST_F(StdioTmux, NoAnswerReachesTheSandboxOrTheCallersPromptAfterBrigExits) {
  const ScratchDir& d = d_;
  socket_ = d.path() + "/tmux.sock";
  std::string fifo = d.path() + "/pane.out";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(mkdir((d.path() + "/ws").c_str(), 0755), 0);
  std::string queries = "\x1b[c\x1b[>c\x1b[5n\x1b[6n\x1b[>q\x1b]10;?\x07\x1b]11;?\x07\x1b[14t";
  d.Write("ws/workload.sh", PrintfOf(queries) + "; echo ready; printf 'during=%s|\\n' \"$(" +
                                kHexLine + ")\"; " + PrintfOf(queries) + "\n");
  d.Write("pane.sh", "tmux -S " + socket_ + " wait-for go\n" + BrigBinary() +
                         " run --tty --workspace " + d.path() +
                         "/ws -- /bin/sh /workspace/workload.sh\necho brig-exited\n" +
                         "printf 'after=%s|end\\n' \"$(" + kHexLine + ")\"\n");
  auto r = Tmux({"-f", "/dev/null", "new-session", "-d", "-s", "brig", "-x", "80", "-y", "24",
                 "/bin/sh " + d.path() + "/pane.sh"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  out_ = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(out_, 0);
  r = Tmux({"pipe-pane", "-t", "brig", "exec cat >" + fifo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Tmux({"wait-for", "-S", "go"}).exit_code, 0);

  ASSERT_TRUE(PaneUntil("ready")) << ::testing::PrintToString(seen_);
  ASSERT_EQ(Tmux({"send-keys", "-t", "brig", "-l", "END"}).exit_code, 0);
  ASSERT_EQ(Tmux({"send-keys", "-t", "brig", "Enter"}).exit_code, 0);
  ASSERT_TRUE(PaneUntil("brig-exited")) << ::testing::PrintToString(seen_);
  ASSERT_EQ(Tmux({"send-keys", "-t", "brig", "-l", "END2"}).exit_code, 0);
  ASSERT_EQ(Tmux({"send-keys", "-t", "brig", "Enter"}).exit_code, 0);
  ASSERT_TRUE(PaneUntil("|end")) << ::testing::PrintToString(seen_);

  // "END" and "END2", and nothing before them.
  EXPECT_NE(seen_.find("during=454e44|"), std::string::npos) << ::testing::PrintToString(seen_);
  EXPECT_NE(seen_.find("after=454e4432|end"), std::string::npos) << ::testing::PrintToString(seen_);
  for (const char* q : {"\x1b[c", "\x1b[6n", "\x1b]"}) {
    EXPECT_EQ(seen_.find(q), std::string::npos) << ::testing::PrintToString(seen_);
  }
}

TEST_F(Stdio, OutputPastTheLimitIsCutAndTheResultSaysSo) {
  ScratchDir d;
  std::string result = d.path() + "/result.json";
  auto r = Sh("head -c 100000 /dev/zero | tr '\\0' a; echo status $? >&2",
              {"--output-limit", "1K", "--result", result});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(1024, 'a'));
  EXPECT_EQ(r.err, "status 0\n") << "the workload's writes past the limit failed";
  std::string json = ReadFileOrEmpty(result);
  EXPECT_NE(json.find("\"stdout_truncated\":true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"stdout_bytes\":1024,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"stderr_truncated\":false"), std::string::npos) << json;
}

TEST_F(Stdio, OutputWrittenJustBeforeExitIsAllRelayed) {
  auto r = Sh("head -c 3000000 /dev/zero | tr '\\0' b; echo last >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out.size(), 3000000u);
  EXPECT_EQ(r.out.find_first_not_of('b'), std::string::npos);
  EXPECT_EQ(r.err, "last\n");
}

// Processes that hold the output pipes open (a background one, the workload itself) end
// with the sandbox; brig then relays what they wrote and exits.
TEST_F(Stdio, AKilledSandboxsOutputIsRelayedAndNothingHoldsBrig) {
  int out[2], err[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(err, O_CLOEXEC), 0);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = Start({"run", "--grace", "1ms", "--", "/bin/sh", "-c",
                     "sleep 1000 & head -c 3000000 /dev/zero | tr '\\0' b; echo last >&2; "
                     "exec sleep 1000"},
                    null, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  close(null);
  std::string text[2];
  int fds[2] = {out[0], err[0]};
  bool signalled = false;
  for (int open_fds = 2; open_fds > 0;) {
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    ASSERT_GT(poll(p, 2, 60000), 0) << "brig is held: " << text[1];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = read(fds[i], buf, sizeof buf);
      if (n > 0) {
        text[i].append(buf, static_cast<size_t>(n));
        continue;
      }
      close(fds[i]);
      fds[i] = -1;
      --open_fds;
    }
    if (!signalled && text[1] == "last\n") {
      // With no grace period, the sandbox ends at once.
      kill(pid, SIGTERM);
      signalled = true;
    }
  }
  EXPECT_EQ(WaitExit(pid), 128 + SIGTERM) << text[1];
  EXPECT_EQ(text[0].size(), 3000000u);
  EXPECT_EQ(text[0].find_first_not_of('b'), std::string::npos);
}

}  // namespace
}  // namespace brig::testing
