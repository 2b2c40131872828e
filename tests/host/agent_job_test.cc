// tools/agent-job against the test world (issue 16, "Done when"): a real four-phase job,
// npm and all, whose registry and model API are stand-ins on the fake internet, so no
// real registry is ever asked. The stand-in (python3, in the internet's namespace) serves
// the npm registry protocol's minimum on port 80 of its own address, a packument and the
// tarball it names, both made at run time, and a model API on port 8080 that writes down
// the key header it got.
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "host/host_fixture.h"
#include "host/test_world.h"

namespace brig::testing {
namespace {

constexpr char kStandinAddr[] = "198.51.100.30";
constexpr char kRegistryName[] = "registry.test";
constexpr char kDependency[] = "standin-dep";
constexpr uid_t kOwner = 1234;

// The stand-in: every request is one line of LOG, "GET host=H path=P status=S", and each
// model call one more, "KEY VALUE" (VALUE "-" when the header is absent). READY is made
// once both ports listen.
constexpr char kStandin[] = R"py(import base64, hashlib, http.server, io, json, socket
import socketserver, sys, tarfile, threading
log_path, ready, addr, name, base = sys.argv[1:6]
lock = threading.Lock()
def note(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")
def tgz():
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as t:
        for path, text in (("package/package.json", json.dumps(
                {"name": name, "version": "1.0.0", "main": "index.js"})),
                ("package/index.js", 'module.exports = {standin: "from the registry stand-in"};\n')):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            t.addfile(info, io.BytesIO(data))
    return raw.getvalue()
tarball = tgz()
tar_path = "/%s/-/%s-1.0.0.tgz" % (name, name)
packument = json.dumps({"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
    "name": name, "version": "1.0.0", "main": "index.js", "dist": {
        "tarball": base + tar_path,
        "shasum": hashlib.sha1(tarball).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}}}})
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, status, body, kind):
        note("%s host=%s path=%s status=%d" % (self.command, self.headers.get("Host"),
                                               self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/" + name:
            self.reply(200, packument.encode(), "application/json")
        elif self.path == tar_path:
            self.reply(200, tarball, "application/octet-stream")
        else:
            self.reply(404, b"{}", "application/json")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        note("KEY " + self.headers.get("x-api-key", "-"))
        self.reply(200, b'{"completion": "hello from the model stand-in"}\n', "application/json")
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        socketserver.TCPServer.server_bind(self)
for port in (80, 8080):
    threading.Thread(target=Server((addr, port), H).serve_forever, daemon=True).start()
open(ready, "w").close()
threading.Event().wait()
)py";

bool Contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

std::string RandomKey() {
  unsigned char b[12];
  if (getrandom(b, sizeof b, 0) != sizeof b) abort();
  std::string key = "model-key-";
  for (unsigned char c : b) key += "0123456789abcdef"[c & 15];
  return key;
}

class AgentJob : public HostTest {
 protected:
  void SetUp() override {
    HostTest::SetUp();
    if (IsSkipped()) return;
    if (!NeedRoot().empty()) GTEST_SKIP() << NeedRoot();
    if (auto why = TestWorld::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"npm", "node", "git", "curl", "python3", "setpriv"}) {
      if (system(("command -v " + std::string(tool) + " >/dev/null").c_str()) != 0) GTEST_SKIP() << "no " << tool << " on this host (tools/deps.txt)";
    }
    ASSERT_EQ(world_.Build(), "");
    ASSERT_EQ(world_.BuildServices({kRegistryName}), "");
    world_.Dns().SetA(kRegistryName, {kStandinAddr});
    ASSERT_EQ(world_.Run(TestWorld::kInternet,
                         {"ip", "addr", "add", std::string(kStandinAddr) + "/32", "dev", "eth0"})
                  .exit_code,
              0);
    StartStandin();
  }
  void TearDown() override {
    if (standin_ > 0) {
      kill(standin_, SIGKILL);
      waitpid(standin_, nullptr, 0);
    }
    if (!IsSkipped()) {
      EXPECT_EQ(world_.TearDown(), "") << "the test left these in its world";
    }
    HostTest::TearDown();
  }

  void StartStandin() {
    std::string script = dir_.Write("standin.py", kStandin);
    std::vector<std::string> argv = {"nsenter", "--net=" + world_.NsPath(TestWorld::kInternet),
                                     "python3", script, Log(), dir_.path() + "/ready",
                                     kStandinAddr, kDependency,
                                     std::string("http://") + kRegistryName};
    std::string err = dir_.path() + "/standin.err";
    standin_ = SpawnQuiet(argv, err);
    ASSERT_GT(standin_, 0);
    bool died = false;
    Eventually([&] {
      died = waitpid(standin_, nullptr, WNOHANG) == standin_;
      return died || access((dir_.path() + "/ready").c_str(), F_OK) == 0;
    });
    if (died) standin_ = -1;
    ASSERT_EQ(access((dir_.path() + "/ready").c_str(), F_OK), 0)
        << "the stand-in did not start: " << ReadFileOrEmpty(err);
  }

  std::string Log() const { return dir_.path() + "/standin.log"; }

  TestWorld world_;
  ScratchDir dir_;
  pid_t standin_ = -1;
};

// The four phases pass: install fetches the packument and the tarball through the
// allowlist, test loads what install put in node_modules, the edit comes back as a commit
// of the workspace's owner, and the model key reaches the stand-in but not the sandbox.
// The job leaves nothing behind but the workspace it was asked to make.
TEST_F(AgentJob, FourPhasesRunAgainstALocalRegistry) {
  std::string key = RandomKey();
  std::string key_file = dir_.Write("model.key", key + "\n");
  ScratchDir tmp;
  std::string ws = dir_.path() + "/ws", owner = std::to_string(kOwner);
  const std::string cache = "brig-test-agent-job-" + std::to_string(getpid());
  struct RemoveCache {
    std::string path;
    ~RemoveCache() {
      RunCommand({"rm", "-rf", path});
      rmdir("/var/cache/brig");  // if the job's cache was its last
    }
  } remove_cache{"/var/cache/brig/" + cache};
  RunOutput r = world_.InWorld(
      {"env", "TMPDIR=" + tmp.path(), "python3", SourceRoot() + "/tools/agent-job",
       "--brig", BrigBinary(), "--verbose", "--timeout", "3m",
       "--registry", std::string("http://") + kRegistryName, "--dependency", kDependency,
       "--registry-address", std::string(kStandinAddr) + "/32", "--dns-upstream", kDnsHost,
       "--cache", cache,
       "--model-url", std::string("http://") + kStandinAddr + ":8080", "--model-key-file",
       key_file, "--workspace", ws, "--owner", owner + ":" + owner});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* phase : {"install", "test", "edit", "broker"}) {
    EXPECT_TRUE(Contains(r.out, std::string("phase ") + phase + ": exit 0 in ")) << r.out;
  }
  std::string log = ReadFileOrEmpty(Log());
  EXPECT_TRUE(Contains(log, std::string("GET host=registry.test path=/") + kDependency +
                                " status=200"))
      << log;
  EXPECT_TRUE(Contains(log, std::string("path=/") + kDependency + "/-/")) << log;
  // The test phase loaded the dependency from install's node_modules.
  EXPECT_TRUE(Contains(r.out, std::string("dependency ") + kDependency +
                                  ": {\"standin\":\"from the registry stand-in\"}"))
      << r.out;
  // npm kept what it fetched in the profile's cache, on the host, for the next install.
  EXPECT_NE(RunCommand({"ls", "-A", remove_cache.path + "/_cacache"}).out, "")
      << "npm's cache mount stayed empty";
  struct stat st = {};
  ASSERT_EQ(stat((ws + "/node_modules/" + kDependency + "/index.js").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOwner);
  // The edit is the workspace's last commit, made and written by its owner.
  EXPECT_TRUE(Contains(ReadFileOrEmpty(ws + "/index.js"), "\"hello there, \"")) << r.out;
  ASSERT_EQ(stat((ws + "/index.js").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOwner);
  auto head = RunCommand({"git", "-c", "safe.directory=*", "-C", ws, "log", "-1",
                          "--format=%s", "--name-only"});
  EXPECT_EQ(head.out, "agent-job: edit phase\n\nindex.js\ntest.js\n") << head.err;
  // The broker's key reached the model API, and nothing the sandbox printed.
  EXPECT_TRUE(Contains(log, "KEY " + key + "\n")) << log;
  EXPECT_TRUE(Contains(r.out, "hello from the model stand-in")) << r.out;
  EXPECT_FALSE(Contains(r.out + r.err, key));
  EXPECT_EQ(RunCommand({"ls", "-A", tmp.path()}).out, "") << "the job left these behind";
}

}  // namespace
}  // namespace brig::testing
