// A test world for the network tests (issue 5, "Tests"): network namespaces the test
// makes itself, with no path to the machine's real interfaces. brig's bridge lives in the
// world; a fake internet host lives in a second namespace joined to the world by a veth;
// both run small servers that write down everything that reaches them, so "gets
// nowhere" is asserted at the server and not only by a client's error.
//
//   sandboxes --veth-- brig0 10.213.0.1/16 [world] wi0 198.51.100.1/24
//                                                  |
//                                           eth0 198.51.100.10/24 [internet], default
//                                           route via 198.51.100.1
//
// The world forwards (ip_forward=1), as a real host with a bridge does, so brig's rules
// are the only thing between a sandbox and the fake internet.
//
// BuildServices (issue 6, "Tests") makes the internet host a small internet of its own, on
// further addresses of its eth0: an authoritative DNS server at 198.51.100.53 (UDP and TCP)
// answering from a zone the test sets, HTTPS servers at 198.51.100.20 and 198.51.100.21
// with certificates of a test CA made at run time, and plain HTTP at 198.51.100.20. Each
// writes down every query, connection, SNI and request that reaches it.
//
// The namespaces are held by file descriptors of the test process (made by unshare in a
// thread), not named with `ip netns add`: that would bind-mount them under /run/netns
// and change the mount table the host fixture compares. Commands enter them with
// `nsenter --net=/proc/<test pid>/fd/<fd>` (not `ip netns exec`, which remounts /sys and
// hides /sys/fs/cgroup from brig). Nothing is ever addressed outside 198.51.100.0/24 and
// brig's own subnet, but for the host addresses a test gives the world itself (11.0.0.1,
// host_address_test.cc), and the world has no route anywhere else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testlib/testlib.h"

namespace brig::testing {

inline constexpr char kWorldAddr[] = "198.51.100.1";      // the world's end of the link
inline constexpr char kInternetHost[] = "198.51.100.10";  // the fake internet host
inline constexpr char kGateway[] = "10.213.0.1";          // brig's default bridge address
inline constexpr char kDnsHost[] = "198.51.100.53";       // the authoritative DNS server
inline constexpr char kWebHost[] = "198.51.100.20";       // HTTPS (443) and HTTP (80)
inline constexpr char kWrongHost[] = "198.51.100.21";     // HTTPS that should get nothing

// A TCP or UDP server bound to 0.0.0.0:port in one of the world's namespaces. It accepts
// (and closes) every connection and reads every datagram, and notes each as
// "tcp 10.213.4.5:40000 -> 198.51.100.10:8080". With a `reply`, a TCP server reads a
// request head first and answers it with those bytes.
class CountingServer {
 public:
  CountingServer(int fd, bool tcp, std::string label, std::string reply = "");
  ~CountingServer();
  CountingServer(const CountingServer&) = delete;
  CountingServer& operator=(const CountingServer&) = delete;

  std::vector<std::string> Hits() const;
  void Clear();
  const std::string& label() const { return label_; }

 private:
  void Loop();
  int fd_;
  bool tcp_;
  std::string label_, reply_;
  int stop_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::vector<std::string> hits_;
  std::thread thread_;
};

// An authoritative DNS server on UDP and TCP port 53 of one address, answering from a zone
// the test sets: A records and CNAMEs, names matched without regard to case or a trailing
// dot. A known name gets its records (CNAMEs followed inside the zone, A records for type
// A), NOERROR with no answer for other types; an unknown name NXDOMAIN. It notes every
// question as "udp A allowed.test" (transport, type, the name as it was asked).
class ZoneServer {
 public:
  ZoneServer(int udp_fd, int tcp_fd);
  ~ZoneServer();
  ZoneServer(const ZoneServer&) = delete;
  ZoneServer& operator=(const ZoneServer&) = delete;

  void SetA(const std::string& name, const std::vector<std::string>& addresses);
  void SetCname(const std::string& name, const std::string& target);
  // Over UDP, answers for `name` come truncated (TC set, no records), as a server does
  // when an answer does not fit: the asker must ask again over TCP.
  void SetTruncatedOverUdp(const std::string& name);
  std::vector<std::string> Queries() const;
  void Clear();

 private:
  void Loop();
  // The reply to one query ("" to send none), noting the question.
  std::string Answer(const std::string& query, const char* transport);
  int udp_, tcp_;
  int stop_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::map<std::string, std::vector<uint32_t>> a_;  // network byte order
  std::map<std::string, std::string> cname_;
  std::set<std::string> truncated_;
  std::vector<std::string> queries_;
  std::thread thread_;
};

// A TCP server on one address of the internet host that writes down every byte that
// reaches it: each connection is read to its end (the client's FIN), noted whole, answered
// "HTTP/1.1 200 OK" with the body "recorded\n", and closed. "Reaches the upstream" is
// then asserted on what the upstream received, not on what a client saw.
class RecordingServer {
 public:
  explicit RecordingServer(int fd);
  ~RecordingServer();
  RecordingServer(const RecordingServer&) = delete;
  RecordingServer& operator=(const RecordingServer&) = delete;

  // What each connection sent, in the order they ended.
  std::vector<std::string> Received() const;

 private:
  void Loop();
  int fd_;
  int stop_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::vector<std::string> received_;
  std::thread thread_;
};

// A new network namespace, held by the returned descriptor only (-1 on failure).
int NewNetns();

class TestWorld {
 public:
  enum Where { kWorld, kInternet };

  TestWorld() = default;
  ~TestWorld() { TearDown(); }
  TestWorld(const TestWorld&) = delete;
  TestWorld& operator=(const TestWorld&) = delete;

  // Why the world cannot be made here at all (no ip, nft, nsenter): for GTEST_SKIP.
  static std::string Unavailable();
  // Makes the namespaces, the link between them, and servers on the usual ports (TCP 53,
  // 80, 443, 8080 and UDP 53, 8080 in both), then checks that the world reaches the
  // internet host and back. Empty on success, otherwise what failed.
  std::string Build();
  // Kills what the test left running in the world (brig processes it spawned, anything in
  // the namespaces), stops the servers, removes brig's state directory of this world and
  // drops the namespaces. Returns what it had to clean up that the test should have ("" if
  // nothing). Idempotent.
  std::string TearDown();

  // The fake internet's services (after Build), the certificate of one name for every name
  // in `cert_names` (a SAN each). Empty on success, otherwise what failed.
  std::string BuildServices(const std::vector<std::string>& cert_names);
  // The DNS server (after BuildServices).
  ZoneServer& Dns() { return *dns_; }
  // The test CA's certificate (PEM), which a client needs to trust the web servers.
  std::string CaPem() const;
  // The web servers' notes, one line each: "accept https 198.51.100.20:443 from=ADDR",
  // "sni https 198.51.100.20:443 NAME", "request http 198.51.100.20:80 host=H path=P",
  // "tls_failed https 198.51.100.21:443 WHY".
  std::vector<std::string> WebLog() const;
  void ClearWebLog();

  // For nsenter --net=.
  std::string NsPath(Where w) const;
  // The world's inode number, which names brig's state in /run/brig/net.
  uint64_t WorldInode() const { return world_ino_; }
  // brig's per-namespace state directory for this world, and its address leases.
  std::string StateDir() const;
  std::vector<std::string> Leases() const;

  // Runs a command in a namespace of the world (nsenter --net).
  RunOutput Run(Where w, const std::vector<std::string>& command) const;
  RunOutput InWorld(const std::vector<std::string>& command) const { return Run(kWorld, command); }
  // brig in the world, in the foreground or in the background (output to `dir`/stdout and
  // `dir`/stderr); a spawned brig is killed at TearDown if the test has not waited for it.
  // `as`: what brig runs under, an ordinary user's OrdinaryUser::Prefix (host_fixture.h).
  RunOutput Brig(const std::vector<std::string>& args,
                 const std::vector<std::string>& as = {}) const;
  pid_t SpawnBrig(const std::vector<std::string>& args, const std::string& dir,
                  const std::vector<std::string>& as = {});
  int Wait(pid_t pid);

  // A further server (the usual ones exist after Build); null if it cannot listen.
  CountingServer* Serve(Where w, bool tcp, uint16_t port);
  // A RecordingServer on `addr`:`port` of the internet host (the address is added to its
  // eth0); null if it cannot listen.
  RecordingServer* Record(const std::string& addr, uint16_t port);
  // An HTTP server on addr:port of namespace `w` that answers every request "200 OK" with
  // `body` (a host's own web service, say); it takes that address's connections from the
  // catch-all server on the port. Null if it cannot listen.
  CountingServer* ServeHttp(Where w, const std::string& addr, uint16_t port,
                            const std::string& body);
  // Every hit on every server, each prefixed with the server's label; empty if nothing
  // reached any of them.
  std::vector<std::string> AllHits() const;
  void ClearHits();

  // Links of the world whose name starts with `prefix` (e.g. "bv").
  std::vector<std::string> Links(const std::string& prefix) const;
  // A TCP connection from inside namespace `from` to addr:port, made by the test
  // process itself: "ok" or the errno name.
  std::string Connect(Where from, const std::string& addr, uint16_t port) const;

 private:
  int Fd(Where w) const { return w == kWorld ? world_fd_ : internet_fd_; }
  int world_fd_ = -1, internet_fd_ = -1;
  uint64_t world_ino_ = 0, internet_ino_ = 0;
  std::string StopWebServers();
  std::vector<std::unique_ptr<CountingServer>> servers_;
  std::vector<std::unique_ptr<RecordingServer>> recorders_;
  std::set<pid_t> spawned_;
  std::unique_ptr<ZoneServer> dns_;
  std::unique_ptr<ScratchDir> services_dir_;
  pid_t web_pid_ = -1;
};

// Prefixes each of `lines` with "  " and joins them, for failure messages.
std::string Lines(const std::vector<std::string>& lines);

}  // namespace brig::testing
