// Brokers against a real upstream (issue 8, "Tests"): a small HTTP server of the test's own
// (python3, on the host's loopback and on a unix socket in a scratch directory) writes
// down every request that reaches it, headers and all, and what happens to its streams.
// The clients are real programs inside the sandbox (curl, python3), under the default
// profile: posture none, no interface at all.
#include <fcntl.h>
#include <signal.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "host/host_fixture.h"
#include "proto/brig.pb.h"

namespace brig::testing {
namespace {

using namespace std::chrono_literals;

// The upstream: every request is one line "REQ METHOD PATH" and one "HDR name: value" a
// header; every connection its TCP server accepts is one line "ACCEPT" in a file apart,
// written before the connection is served. /bad-gateway answers 502 with no body. TRACE
// echoes the request's head, as RFC 9110 9.3.8 has a server do. /events sends event 1, then
// waits for a request to /second before it sends event 2 (a broker that held the stream back
// would never let the client ask); /hang sends one event and notes "EOF /hang" when its
// client goes away.
constexpr char kUpstream[] = R"py(import http.server, os, socket, socketserver, sys, threading, time
port_file, sock_path, log_path = sys.argv[1:4]
log_lock = threading.Lock()
second = threading.Event()
def note(line):
    with log_lock, open(log_path, "a") as f:
        f.write(line + "\n")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        note("REQ %s %s" % (self.command, self.path))
        for k, v in self.headers.items():
            note("HDR %s: %s" % (k.lower(), v))
        if self.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            def chunk(b):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.flush()
            chunk(b"data: 1\n\n")
            if second.wait(15):
                chunk(b"data: 2\n\n")
            else:
                note("TIMEOUT waiting for /second")
            chunk(b"")
        elif self.path == "/second":
            second.set()
            self.reply(b"second\n")
        elif self.path == "/hang":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"data: 1\n\n")
            self.wfile.flush()
            self.connection.settimeout(30)
            try:
                self.connection.recv(1)
            except OSError:
                pass
            note("EOF /hang %.3f" % time.time())
        elif self.path == "/bad-gateway":
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.reply(b"hello from upstream\n")
    def do_POST(self):
        # The whole body first, as a real target reads it: an answer before it would race
        # a broker that cuts the body off (the egress budget).
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.do_GET()
    def do_TRACE(self):
        note("REQ TRACE " + self.path)
        head = ("%s %s %s\r\n%s" % (self.command, self.path, self.request_version,
                                       self.headers)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "message/http")
        self.send_header("Content-Length", str(len(head)))
        self.end_headers()
        self.wfile.write(head)
class Tcp(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    def verify_request(self, request, client_address):
        with log_lock, open(log_path + ".accepts", "a") as f:
            f.write("ACCEPT\n")
        return True
class Unix(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
tcp = Tcp(("127.0.0.1", 0), H)
unix = Unix(sock_path, H)
threading.Thread(target=unix.serve_forever, daemon=True).start()
with open(port_file + ".tmp", "w") as f:
    f.write(str(tcp.server_address[1]))
os.rename(port_file + ".tmp", port_file)
tcp.serve_forever()
)py";

std::string Lines(const std::string& path) { return ReadFileOrEmpty(path); }

bool Contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// The upstream server, in a scratch directory; killed when it goes out of scope.
class Upstream {
 public:
  Upstream() {
    script_ = dir_.Write("upstream.py", kUpstream);
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      execlp("python3", "python3", script_.c_str(), (dir_.path() + "/port").c_str(), sock().c_str(),
             log().c_str(), nullptr);
      _exit(99);
    }
    Eventually([&] {
      std::string p = ReadFileOrEmpty(dir_.path() + "/port");
      if (!p.empty()) port_ = std::atoi(p.c_str());
      return port_ != 0;
    });
  }
  ~Upstream() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string sock() const { return dir_.path() + "/upstream.sock"; }
  std::string log() const { return dir_.path() + "/requests.log"; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // How many connections the TCP server accepted from others than this method. It asks
  // the server for /sentinel itself first (a "REQ GET /sentinel" in the log): the server
  // accepts one connection at a time, in the order they came, and writes ACCEPT before it
  // serves one, so once the sentinel is answered every connection made before it is
  // counted, however late the server came to it.
  int Accepted() {
    sys::UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    timeval limit = {10, 0};
    if (!s || setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit) < 0 ||
        connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
      return -1;
    }
    const std::string req = "GET /sentinel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (send(s.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
      return -1;
    }
    char buf[4096];
    ssize_t n;
    while ((n = recv(s.get(), buf, sizeof buf, 0)) > 0) {
    }
    if (n < 0) return -1;
    ++sentinels_;
    std::string accepts = ReadFileOrEmpty(log() + ".accepts");
    return static_cast<int>(std::count(accepts.begin(), accepts.end(), '\n')) - sentinels_;
  }

 private:
  ScratchDir dir_;
  std::string script_;
  pid_t pid_ = -1;
  int port_ = 0;
  int sentinels_ = 0;
};

// A client inside the sandbox that writes raw requests to a broker on 127.0.0.1 and prints,
// a line a connection, the status of every response it read ("-" if none). Each argument is
// one connection ("--port=N" picks the broker's port for those after it); its literal "\r\n"
// are CRLF, and "||" splits what is sent at once from what is sent after the response
// before it is read whole. What follows "close:" is sent and the connection closed unread.
constexpr char kRawClient[] = R"py(import re, socket, sys
port = 8080
for conn in sys.argv[1:]:
    if conn.startswith("--port="):
        port = int(conn[7:])
        continue
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    if conn.startswith("close:"):
        s.sendall(conn[6:].replace("\\r\\n", "\r\n").encode("latin1"))
        s.close()
        print("-")
        continue
    parts = conn.replace("\\r\\n", "\r\n").split("||")
    codes = []
    for i, part in enumerate(parts):
        s.sendall(part.encode("latin1"))
        got = b""
        while True:
            end = got.find(b"\r\n\r\n")
            if i + 1 < len(parts) and end >= 0:
                n = re.search(rb"(?i)\r\ncontent-length: *(\d+)", got[:end + 2])
                if n and len(got) >= end + 4 + int(n.group(1)):
                    break
            b = s.recv(65536)
            if not b:
                break
            got += b
        codes += [c.decode() for c in re.findall(rb"HTTP/1\.1 (\d{3}) ", got)]
    s.close()
    print(" ".join(codes) or "-")
)py";

// A request for kRawClient: `line` is its method and target.
std::string Request(const std::string& line, const std::string& headers = "") {
  return line + " HTTP/1.1\\r\\nHost: x\\r\\n" + headers + "\\r\\n";
}

// A GET of `target` on a connection of its own, which the target closes after it.
std::string Get(const std::string& target) {
  return Request("GET " + target, "Connection: close\\r\\n");
}

// A value only brig's environment holds, for as long as it lives.
class HostSecret {
 public:
  HostSecret() {
    unsigned char b[12];
    if (getrandom(b, sizeof b, 0) != sizeof b) abort();
    value_ = "brig-test-secret-";
    for (unsigned char c : b) value_ += "0123456789abcdef"[c & 15];
    setenv("BRIG_TEST_BROKER_KEY", value_.c_str(), 1);
  }
  ~HostSecret() { unsetenv("BRIG_TEST_BROKER_KEY"); }
  const std::string& value() const { return value_; }

 private:
  std::string value_;
};

class BrokerTest : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (!NeedRoot().empty()) GTEST_SKIP() << NeedRoot();
    if (system("command -v python3 >/dev/null && command -v curl >/dev/null") != 0) {
      GTEST_SKIP() << "needs python3 and curl on the host (tools/deps.txt)";
    }
  }
};

// The injected header, the replaced copy and the attribution arrive upstream; the secret
// reaches nothing inside the sandbox: no process's environment or command line, no file,
// not the workload's output, not the audit log. Every file is searched but the host's
// /usr (/bin, /sbin and /lib lead there): a read-only bind of the host's own, which brig
// never writes, and which takes minutes to walk under the vm tier's emulation.
TEST_F(BrokerTest, SetsHeadersTheSandboxCannotSee) {
  Upstream up;
  ASSERT_GT(up.port(), 0) << "the upstream did not start";
  HostSecret secret;
  ScratchDir out;
  std::string audit = out.path() + "/audit.jsonl", result = out.path() + "/result.json";
  std::string script =
      "curl -sS -H 'x-api-key: forged-by-sandbox' -H 'X-Brig-Attribution: forged/9' "
      "http://127.0.0.1:8080/v1/models?key=q http://127.0.0.1:8080/again || exit 3; "
      "echo '== environ and cmdline'; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do "
      "cat $f 2>/dev/null | tr '\\0' '\\n'; done; "
      "echo '== files'; grep -rlsF brig-test-secret- / --exclude-dir=proc --exclude-dir=sys "
      "--exclude-dir=usr; "
      "echo '== end'";
  RunOutput r =
      Sh(script, {"--broker",
                  "model=port=8080,to=" + up.url() + ",header=x-api-key:env:BRIG_TEST_BROKER_KEY",
                  "--attempt", "3", "--audit-log", audit, "--result", result});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "hello from upstream")) << r.out;
  // Each grep hit would be a line between these two.
  EXPECT_TRUE(Contains(r.out, "== files\n== end")) << r.out;
  EXPECT_FALSE(Contains(r.out, secret.value()));
  EXPECT_FALSE(Contains(r.err, secret.value()));
  std::string audit_text = ReadFileOrEmpty(audit);
  EXPECT_FALSE(Contains(audit_text, secret.value()));
  EXPECT_TRUE(Contains(audit_text, R"("broker_request":{"broker":"model","method":"GET",)"
                                   R"("host":"127.0.0.1:)" +
                                       std::to_string(up.port()) +
                                       R"(","path":"/v1/models","status":200)"))
      << audit_text;
  std::string res = ReadFileOrEmpty(result);
  size_t at = res.find("\"sandbox_id\":\"");
  ASSERT_NE(at, std::string::npos) << res;
  std::string id = res.substr(at + 14, res.find('"', at + 14) - at - 14);
  EXPECT_TRUE(Contains(res, R"("brokers":[{"name":"model","connections":1,"requests":2,)")) << res;

  std::string log = Lines(up.log());
  EXPECT_TRUE(Contains(log, "REQ GET /v1/models?key=q\n")) << log;
  EXPECT_TRUE(Contains(log, "HDR x-api-key: " + secret.value() + "\n")) << log;
  EXPECT_FALSE(Contains(log, "forged")) << log;
  EXPECT_TRUE(Contains(log, "HDR x-brig-attribution: " + id + "/3\n")) << log;
  // One copy each per request, of two requests.
  size_t keys = 0;
  for (size_t p = log.find("HDR x-api-key:"); p != std::string::npos;
       p = log.find("HDR x-api-key:", p + 1)) {
    ++keys;
  }
  EXPECT_EQ(keys, 2u) << log;
}

// Event 2 is sent only after the client, having read event 1, asks for /second: a broker
// that buffered the response would leave the client waiting until its timeout.
TEST_F(BrokerTest, ServerSentEventsArriveAsTheyCome) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  std::string client = R"py(
import socket, sys
s = socket.create_connection(("127.0.0.1", 8080), timeout=8)
s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
got = b""
while b"data: 1" not in got:
    b = s.recv(4096)
    if not b: sys.exit("closed before event 1")
    got += b
print("event 1")
t = socket.create_connection(("127.0.0.1", 8080), timeout=8)
t.sendall(b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
print(t.recv(4096).split(b"\r\n")[0].decode())
while b"0\r\n\r\n" not in got:
    b = s.recv(4096)
    if not b: break
    got += b
print("event 2" if b"data: 2" in got else "no event 2")
)py";
  RunOutput r = RunBrig({"run", "--broker", "events=port=8080,to=" + up.url() + ",mode=http", "--",
                         "python3", "-c", client});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "event 1\nHTTP/1.1 200 OK\nevent 2\n") << r.err;
  EXPECT_FALSE(Contains(Lines(up.log()), "TIMEOUT")) << Lines(up.log());
}

// Posture none: no interface, yet the broker's unix socket reaches the host's.
TEST_F(BrokerTest, UnixSocketBrokerUnderPostureNone) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  RunOutput r =
      Sh("ip -o link 2>/dev/null | grep -v ': lo:' ; test -S /run/brig/api.sock || exit 4; "
         "curl -sS --unix-socket /run/brig/api.sock http://anything/unix",
         {"--broker", "api=unix=/run/brig/api.sock,to=unix:" + up.sock() + ",mode=http"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "hello from upstream\n") << r.err;
  std::string log = Lines(up.log());
  EXPECT_TRUE(Contains(log, "REQ GET /unix\n")) << log;
  EXPECT_TRUE(Contains(log, "HDR x-brig-attribution: brig-")) << log;
}

// A profile's broker (tests/host/profiles/broker-only.textproto), with posture broker-only;
// a run adds one more with --broker, and a port another broker of the profile has is
// refused.
TEST_F(BrokerTest, ProfileBrokersUnderPostureBrokerOnly) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  const std::string link = "/tmp/brig-broker-test.sock";
  unlink(link.c_str());
  ASSERT_EQ(symlink(up.sock().c_str(), link.c_str()), 0);
  std::string profile = SourceRoot() + "/tests/host/profiles/broker-only.textproto";
  RunOutput r =
      Sh("curl -sS http://127.0.0.1:8080/from-profile && "
         "curl -sS http://127.0.0.1:8081/from-flag",
         {"--profile", profile, "--broker", "extra=port=8081,to=" + up.url()});
  RunOutput clash = Sh("true", {"--profile", profile, "--broker", "c=port=8080,to=" + up.url()});
  unlink(link.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello from upstream\nhello from upstream\n");
  std::string log = Lines(up.log());
  EXPECT_TRUE(Contains(log, "REQ GET /from-profile\n")) << log;
  EXPECT_TRUE(Contains(log, "HDR x-api-key: " + secret.value() + "\n")) << log;
  EXPECT_TRUE(Contains(log, "HDR x-run: brig-")) << log;
  EXPECT_TRUE(Contains(log, "REQ GET /from-flag\n")) << log;
  EXPECT_EQ(clash.exit_code, 125);
  EXPECT_TRUE(Contains(clash.err, "8080 is taken by another broker")) << clash.err;
}

// A timeout ends the sandbox mid-stream: the upstream's side closes at once with it.
TEST_F(BrokerTest, EndingTheSandboxClosesItsConnections) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  auto start = std::chrono::system_clock::now();
  RunOutput r = RunBrig({"run", "--timeout", "2s", "--broker", "s=port=8080,to=" + up.url(), "--",
                         "curl", "-sSN", "http://127.0.0.1:8080/hang"});
  double ended =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(Contains(r.out, "data: 1")) << r.out;
  std::string log;
  Eventually([&] { return Contains(log = Lines(up.log()), "EOF /hang"); });
  size_t at = log.find("EOF /hang ");
  ASSERT_NE(at, std::string::npos) << "the upstream never saw its client go\n" << log;
  double eof = std::atof(log.c_str() + at + 10);
  EXPECT_LT(eof, ended + 0.5) << "the upstream's connection outlived brig";
  EXPECT_LT(eof - std::chrono::duration<double>(start.time_since_epoch()).count(), 4.0);
}

// Upgrade and CONNECT are refused at once, and so is a head that is no HTTP.
TEST_F(BrokerTest, RefusesUpgradeAndMalformedRequests) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  RunOutput r = Sh(
      "curl -s -o /dev/null -w '%{http_code}\\n' -H 'Connection: Upgrade' -H 'Upgrade: websocket' "
      "http://127.0.0.1:8080/ws; "
      "printf 'NOT HTTP AT ALL\\r\\n\\r\\n' | curl -s telnet://127.0.0.1:8080 | head -n 1",
      {"--broker", "m=port=8080,to=" + up.url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "501\nHTTP/1.1 400 Bad Request")) << r.out;
  EXPECT_FALSE(Contains(Lines(up.log()), "/ws")) << Lines(up.log());
}

// Only origin-form reaches the target (issue 14, item 2): an absolute-form request for
// another authority would have a target that routes by request-target (a CDN edge, a
// shared reverse proxy) hand the credential to that origin. It gets a 400; absolute-form
// for the target's own authority goes on in origin-form; asterisk-form gets a 400.
TEST_F(BrokerTest, SpeaksOnlyOriginFormToItsTarget) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  const std::string code = "curl -s -o /dev/null -w '%{http_code}\\n' ";
  RunOutput r = Sh(code + "--request-target http://x.attacker.test/steal http://127.0.0.1:8080/; " +
                       "curl -sS --request-target http://127.0.0.1:" + std::to_string(up.port()) +
                       "/own http://127.0.0.1:8080/; " + code +
                       "-X OPTIONS --request-target '*' http://127.0.0.1:8080/",
                   {"--broker", "m=port=8080,to=" + up.url() +
                                    ",header=x-api-key:env:BRIG_TEST_BROKER_KEY"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "400\nhello from upstream\n400\n");
  std::string log = Lines(up.log());
  EXPECT_FALSE(Contains(log, "attacker")) << log;
  EXPECT_EQ(log.substr(0, log.find('\n')), "REQ GET /own") << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), 'Q'), 1) << log;  // one REQ line
}

// TRACE (and TRACK) would have an echoing target reflect the credential into the sandbox
// (issue 14, item 2): 405, and nothing reaches the target.
TEST_F(BrokerTest, TraceAndTrackGet405) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  RunOutput r = Sh("curl -s -X TRACE -w '\\n%{http_code}\\n' http://127.0.0.1:8080/t; "
                   "curl -s -o /dev/null -X TRACK -w '%{http_code}\\n' http://127.0.0.1:8080/t",
                   {"--broker", "m=port=8080,to=" + up.url() +
                                    ",header=x-api-key:env:BRIG_TEST_BROKER_KEY"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Contains(r.out, secret.value())) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n405\n405\n")) << r.out;
  EXPECT_EQ(Lines(up.log()), "");
}

// methods= and paths= bind a broker's secrets to what the phase needs (issue 14, item 2):
// anything else gets a 403 and never reaches the target, and so does a path that a
// normalising target could read as another one.
TEST_F(BrokerTest, MethodsAndPathsBindTheCredential) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  std::string script;
  for (const char* req : {"/v1/models", "-X POST /v1/models", "/admin", "/v1/../admin",
                          "/v1/%2e%2e/admin", "/v1/%2E%2E%2Fadmin", "/v1//models", "/v1/..;/admin",
                          "/v1/./models", "//v1/models", "/v2/models", "/v2/modelsX",
                          "/v2/models/x", "/v1"}) {
    std::string method, path = req;
    if (path[0] == '-') {
      method = path.substr(0, path.rfind(' '));
      path = path.substr(path.rfind(' ') + 1);
    }
    script += "curl -s -o /dev/null --path-as-is " + method +
              " -w '%{http_code} ' 'http://127.0.0.1:8080" + path + "'; ";
  }
  RunOutput r = Sh(script, {"--broker", "m=port=8080,to=" + up.url() +
                                            ",header=x-api-key:env:BRIG_TEST_BROKER_KEY," +
                                            "methods=GET,HEAD,paths=/v1/,/v2/models"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 403 403 403 403 403 403 403 403 403 200 403 200 403 ") << r.err;
  EXPECT_EQ(Lines(up.log()).find("REQ "), 0u);
  std::string reqs;
  std::istringstream in(Lines(up.log()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("REQ ", 0) == 0) reqs += line + "\n";
  }
  EXPECT_EQ(reqs, "REQ GET /v1/models\nREQ GET /v2/models\nREQ GET /v2/models/x\n");
}

// A target that builds a URL from the request's path (a redirect, a URL join, a call of its
// own) reads "//x.attacker.test/" as another host, to which the credential would go (issue
// 27, item 5), and so does one that strips a prefix first ("/svc//x.attacker.test/").
// Whatever the broker's spec says, a path with an empty segment anywhere but at its end
// (two slashes; a backslash, a percent-encoded slash or backslash, decoded however many
// times over, or a tab read as what a lenient reader makes of it; an empty segment before a
// ';'), or that has a "." or ".." segment whose removal could bring that about, gets the 403 a path
// outside paths= gets, with the reason in the audit, and never reaches the target; a target
// in any other form than origin-form or absolute-form for the broker's own target gets a 400.
TEST_F(BrokerTest, APathThatCouldNameAnotherHostNeverReachesTheTarget) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  ScratchDir out;
  std::string audit = out.path() + "/audit.jsonl";
  std::string key = ",header=x-api-key:env:BRIG_TEST_BROKER_KEY";
  std::vector<std::string> args = {"run",
                                   "--audit-log",
                                   audit,
                                   "--broker",
                                   "m=port=8080,to=" + up.url() + key,
                                   "--broker",
                                   "p=port=8081,to=" + up.url() + key + ",paths=/v1/",
                                   "--",
                                   "python3",
                                   "-c",
                                   kRawClient};
  std::vector<std::string> other_host = {
      "//x.attacker.test/",        "/\\x.attacker.test/",          "/%2Fx.attacker.test/",
      "/%5cx.attacker.test/",      "/%252Fx.attacker.test/",       "/%09/x.attacker.test/",
      "/;a/x.attacker.test/",      "/.//x.attacker.test/",         "/v1/..//x.attacker.test/",
      "/%2e%2e//x.attacker.test/", up.url() + "//x.attacker.test/", "/svc//x.attacker.test/",
      "/v1//models",               "/%2525252Fx.attacker.test/"};
  for (const std::string& t : other_host) args.push_back(Get(t));
  for (const char* t : {"http://x.attacker.test/", "x.attacker.test:80", "*", "x.attacker.test/"}) {
    args.push_back(Get(t));
  }
  for (const char* t : {"/v1/models", "/v1/a%2Fb"}) args.push_back(Get(t));
  args.insert(args.end(), {"--port=8081", Get("//x.attacker.test/v1/"), Get("/v1/x")});
  RunOutput r = RunBrig(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string want;
  for (size_t i = 0; i < other_host.size(); ++i) want += "403\n";
  want += "400\n400\n400\n400\n200\n200\n403\n200\n";
  EXPECT_EQ(r.out, want) << r.err;
  std::string log = Lines(up.log());
  EXPECT_FALSE(Contains(log, "attacker")) << log;
  std::string reqs;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("REQ ", 0) == 0) reqs += line + "\n";
  }
  EXPECT_EQ(reqs, "REQ GET /v1/models\nREQ GET /v1/a%2Fb\nREQ GET /v1/x\n");
  int audited = 0;
  for (const v1::AuditEvent& e : ReadAuditEvents(audit)) {
    if (!e.has_broker_request() || e.broker_request().status() != 403) continue;
    ++audited;
    EXPECT_TRUE(Contains(e.broker_request().detail(), "another host")) << e.ShortDebugString();
  }
  EXPECT_EQ(audited, static_cast<int>(other_host.size()) + 1);
}

// A refused request reaches the target in no form, not even as a connection (issue 27, item
// 5): the broker dials its target only once a connection's first request is read and
// allowed. A connection closed before it asked anything dials nothing either. On a
// keep-alive connection, a refused request after an allowed one is never sent, pipelined
// or not. The upstream counts the connections it accepted.
TEST_F(BrokerTest, ARefusedRequestNeverReachesTheTargetNotEvenAsAConnection) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  HostSecret secret;
  std::string spec = "m=port=8080,to=" + up.url() +
                     ",header=x-api-key:env:BRIG_TEST_BROKER_KEY,methods=GET,paths=/v1/";
  // The connections closed unasked come first: the broker accepts in order, so by the time
  // a later one is answered they were taken.
  RunOutput refused =
      RunBrig({"run", "--broker", spec, "--", "python3", "-c", kRawClient,
               "close:", "close:" + Request("GET /v1/x").substr(0, 18), Request("TRACE /v1/x"),
               Request("DELETE /v1/x"), Get("/admin"), Get("http://x.attacker.test/v1/"),
               Get("//x.attacker.test/v1/"),
               Request("GET /v1/ws", "Connection: Upgrade\\r\\nUpgrade: websocket\\r\\n"),
               "NOT HTTP AT ALL\\r\\n\\r\\n"});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_EQ(refused.out, "-\n-\n405\n403\n403\n400\n403\n501\n400\n") << refused.err;
  EXPECT_EQ(up.Accepted(), 0);

  RunOutput kept = RunBrig({"run", "--broker", spec, "--", "python3", "-c", kRawClient,
                            Request("GET /v1/first") + "||" + Request("GET //x.attacker.test/v1/"),
                            Request("GET /v1/second") + Request("GET /admin")});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(kept.out, "200 403\n200 403\n") << kept.err;
  EXPECT_EQ(up.Accepted(), 2);
  std::string reqs;
  std::istringstream in(Lines(up.log()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("REQ ", 0) == 0) reqs += line + "\n";
  }
  EXPECT_EQ(reqs, "REQ GET /sentinel\nREQ GET /v1/first\nREQ GET /v1/second\nREQ GET /sentinel\n");
}

// An https target: brig speaks TLS itself, verifying the certificate against the CA store
// (here the test's own CA, named by SSL_CERT_FILE in brig's environment); without that CA
// the request gets a 502 and nothing reaches the server.
TEST_F(BrokerTest, OriginatesVerifiedTls) {
  ScratchDir dir;
  std::string d = dir.path();
  std::string make =
      "cd " + d +
      " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt "
      "-days 1 -subj '/CN=brig test CA' && openssl req -newkey rsa:2048 -nodes -keyout srv.key "
      "-out srv.csr -subj /CN=localhost && printf 'subjectAltName=DNS:localhost\n' > ext && "
      "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt "
      "-days 1 -extfile ext";
  if (system((make + " >/dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "openssl cannot make a CA";
  dir.Write("tls.py", R"py(import http.server, os, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        body = ("tls %s key=%s host=%s\n" % (self.path, self.headers.get("x-api-key"),
                                              self.headers.get("host"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1] + "/srv.crt", sys.argv[1] + "/srv.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[1] + "/port.tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
s.serve_forever()
)py");
  pid_t server = fork();
  if (server == 0) {
    execlp("python3", "python3", (d + "/tls.py").c_str(), d.c_str(), nullptr);
    _exit(99);
  }
  std::string port;
  Eventually([&] { return !(port = ReadFileOrEmpty(d + "/port")).empty(); });
  HostSecret secret;
  std::vector<std::string> args = {
      "run",
      "--broker",
      "m=port=8080,to=https://localhost:" + port + ",header=x-api-key:env:BRIG_TEST_BROKER_KEY",
      "--",
      "curl",
      "-sS",
      "http://127.0.0.1:8080/over-tls"};
  setenv("SSL_CERT_FILE", (d + "/ca.crt").c_str(), 1);
  RunOutput trusted = RunBrig(args);
  unsetenv("SSL_CERT_FILE");
  RunOutput untrusted = RunBrig(args);
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  ASSERT_FALSE(port.empty()) << "the https upstream did not start";
  EXPECT_EQ(trusted.exit_code, 0) << trusted.err;
  EXPECT_EQ(trusted.out, "tls /over-tls key=" + secret.value() + " host=localhost:" + port + "\n");
  EXPECT_TRUE(Contains(untrusted.out, "brig broker: TLS to https://localhost:" + port +
                                          ": certificate: unable to get local issuer"))
      << untrusted.out;
}

// OpenSSL is opened only when an https broker starts (broker/tls.h). A host where it
// cannot be (here libssl.so.3 is /dev/null, in a mount namespace of the test's own) refuses
// the run before the workload starts, naming the library, and leaves nothing behind.
TEST_F(BrokerTest, AnHttpsBrokerWithoutOpenSslIsRefusedBeforeTheWorkloadStarts) {
  RunOutput found =
      RunCommand({"sh", "-c", "ldconfig -p | awk '/libssl\\.so\\.3 /{print $NF; exit}'"});
  std::string lib = found.out.substr(0, found.out.find('\n'));
  if (lib.empty()) GTEST_SKIP() << "ldconfig knows no libssl.so.3";
  HostSecret secret;
  RunOutput r = RunCommand(
      {"unshare", "--mount", "--propagation", "private", "sh", "-c",
       "mount --bind /dev/null \"$0\" && exec \"$@\"", lib, BrigBinary(), "run", "--broker",
       "m=port=8080,to=https://localhost:1,header=x-api-key:env:BRIG_TEST_BROKER_KEY", "--", "echo",
       "started"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_EQ(r.out, "") << "the workload started";
  EXPECT_TRUE(Contains(r.err, "libssl.so.3")) << r.err;
}

// A target that refuses the connection (a port bound but not listening, held for the
// test): the request gets brig's 502, and the result says the broker failed, with the
// reason and count, as does a line on stderr at exit (issue 16, item 3).
TEST_F(BrokerTest, ATargetThatRefusesIsABrokerFailureInTheResult) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string target = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  ScratchDir dir;
  std::string result = dir.path() + "/result.json";
  RunOutput r = Sh("curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/v1/x",
                   {"--result", result, "--broker", "m=port=8080,to=" + target + ",mode=http"});
  close(s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "502");
  v1::RunResult res;
  std::string json = ReadFileOrEmpty(result);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
  ASSERT_EQ(res.network().brokers_size(), 1) << json;
  const v1::BrokerTraffic& b = res.network().brokers(0);
  EXPECT_EQ(b.requests(), 1u) << json;
  EXPECT_EQ(b.failed(), 1u) << json;
  ASSERT_EQ(b.failures_size(), 1) << json;
  EXPECT_EQ(b.failures(0).reason(), "unreachable");
  EXPECT_EQ(b.failures(0).count(), 1u);
  EXPECT_EQ(b.failures(0).detail(), "cannot connect to " + target);
  EXPECT_TRUE(Contains(r.err, "brig: broker m failed 1 of 1 requests: unreachable (cannot "
                              "connect to " + target + ")"))
      << r.err;
}

// A target that answers 502 itself: the sandbox gets that 502, and the result counts it as
// a failure of the broker (reason status), not silence.
TEST_F(BrokerTest, ATargetsOwn502IsABrokerFailureInTheResult) {
  Upstream up;
  ScratchDir dir;
  std::string result = dir.path() + "/result.json";
  RunOutput r = Sh("curl -sS -o /dev/null -w '%{http_code} ' http://127.0.0.1:8080/bad-gateway; "
                   "curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/ok",
                   {"--result", result, "--broker", "m=port=8080,to=" + up.url() + ",mode=http"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "502 200");
  v1::RunResult res;
  std::string json = ReadFileOrEmpty(result);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
  ASSERT_EQ(res.network().brokers_size(), 1) << json;
  const v1::BrokerTraffic& b = res.network().brokers(0);
  EXPECT_EQ(b.requests(), 2u) << json;
  EXPECT_EQ(b.failed(), 1u) << json;
  ASSERT_EQ(b.failures_size(), 1) << json;
  EXPECT_EQ(b.failures(0).reason(), "status");
  EXPECT_EQ(b.failures(0).detail(), "the target answered 502");
  EXPECT_TRUE(Contains(r.err, "brig: broker m failed 1 of 2 requests: status (the target "
                              "answered 502)"))
      << r.err;
}

// The egress budget covers the brokers too (issue 16, item 11): a request body past it is
// cut off at the budget, the connection closed; a later request gets brig's 502 with the
// reason, and never reaches the target.
TEST_F(BrokerTest, TheEgressBudgetCutsOffARequestAndRefusesTheNext) {
  Upstream up;
  ScratchDir dir;
  std::string result = dir.path() + "/result.json";
  RunOutput r = Sh("head -c 300000 /dev/zero > /tmp/big; "
                   "curl -sS -H 'Expect:' --data-binary @/tmp/big http://127.0.0.1:8080/up; "
                   "echo first=$?; "
                   "curl -sS -w '%{http_code}' http://127.0.0.1:8080/again",
                   {"--result", result, "--egress-budget", "1K", "--broker",
                    "m=port=8080,to=" + up.url() + ",mode=http"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Contains(r.out, "first=0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "brig broker: the phase's egress budget of 1024 bytes is spent"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "502")) << r.out;
  EXPECT_FALSE(Contains(Lines(up.log()), "/again")) << Lines(up.log());
  v1::RunResult res;
  std::string json = ReadFileOrEmpty(result);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &res).ok()) << json;
  EXPECT_TRUE(res.network().budget_exceeded()) << json;
  EXPECT_EQ(res.network().egress_bytes(), 1024u) << json;
  ASSERT_EQ(res.network().brokers_size(), 1) << json;
  const v1::BrokerTraffic& b = res.network().brokers(0);
  EXPECT_EQ(b.bytes_up(), 1024u) << json;
  ASSERT_EQ(b.failures_size(), 1) << json;
  EXPECT_EQ(b.failures(0).reason(), "budget");
  EXPECT_EQ(b.failures(0).count(), 2u) << json;
}

// Every malformed or conflicting spec: 125, one line naming --broker, its value and why,
// and nothing ran.
TEST_F(BrokerTest, MalformedSpecIsRefusedBeforeAnythingStarts) {
  ScratchDir dir;
  unsetenv("BRIG_TEST_UNSET_KEY");
  struct Case {
    std::vector<std::string> args;
    std::string why;
  } cases[] = {
      {{"--broker", "m=port=0,to=tcp:127.0.0.1:1"}, "'0' is not 1-65535"},
      {{"--broker", "m=port=1,to=tcp:127.0.0.1:1,flavour=x"}, "unknown key 'flavour'"},
      {{"--broker", "m=port=1,to=unix:rel.sock"}, "is not absolute"},
      {{"--broker", "m=port=1,to=http://127.0.0.1:1,header=x-k:env:BRIG_TEST_UNSET_KEY"},
       "$BRIG_TEST_UNSET_KEY is not set"},
      {{"--broker", "m=port=1,to=http://127.0.0.1:1,header=x-k:file:" + dir.path() + "/none"},
       "No such file"},
      {{"--broker", "m=port=1,to=http://127.0.0.1:1,header=x k:env:HOME"},
       "not an HTTP header name"},
      {{"--broker", "a=port=81,to=tcp:127.0.0.1:1", "--broker", "b=port=81,to=tcp:127.0.0.1:1"},
       "81 is taken by another broker"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", "echo started"});
    RunOutput r = RunBrig(args);
    EXPECT_EQ(r.exit_code, 125) << c.why;
    EXPECT_EQ(r.out, "") << c.why;
    EXPECT_TRUE(Contains(r.err, "--broker '" + c.args.back() + "'")) << r.err;
    EXPECT_TRUE(Contains(r.err, c.why)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// --name reaches the target in the attribution (the sandbox id holds it) and every
// broker_request event of the audit.
TEST_F(BrokerTest, TheRunsNameIsInTheAttributionAndTheAudit) {
  Upstream up;
  ASSERT_GT(up.port(), 0);
  ScratchDir out;
  std::string audit = out.path() + "/audit.jsonl";
  RunOutput r = Sh("curl -sS http://127.0.0.1:8080/named",
                   {"--broker", "api=port=8080,to=" + up.url(), "--name", "task-42",
                    "--audit-log", audit});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string log = Lines(up.log());
  EXPECT_TRUE(Contains(log, "HDR x-brig-attribution: brig-task-42-")) << log;
  std::string audit_text = ReadFileOrEmpty(audit);
  EXPECT_TRUE(Contains(audit_text, R"("name":"task-42","broker_request":{"broker":"api")"))
      << audit_text;
}

}  // namespace
}  // namespace brig::testing
