// What a broker is (design.md, Broker; issue 8): the `--broker NAME=SPEC` syntax and the
// profile's Broker message, checked into one Config (pure, unit-tested and fuzzed), and
// then resolved on the host: header values read from brig's environment or a file, the
// target's name looked up. Nothing here opens a socket.
//
// SPEC is KEY=VALUE pairs joined by commas:
//   port=PORT            a TCP listener on 127.0.0.1:PORT inside the sandbox
//   unix=/PATH           a unix socket at /PATH inside the sandbox
//   to=TARGET            unix:/PATH, tcp:HOST:PORT, http://HOST[:PORT], https://HOST[:PORT]
//   header=NAME:SOURCE   set header NAME from env:VAR or file:/PATH (repeatable)
//   attribution=NAME     the attribution header's name (default x-brig-attribution)
//   mode=http|tcp        default: http with an http(s) target, a header or attribution=
//   methods=M[,M...]     only these methods reach the target (http); others get 403
//   paths=/P[,/P...]     only paths under these prefixes reach the target (http)
// A methods= or paths= list goes on over the items after it that have no '='.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brig/result.h"
#include "proto/brig.pb.h"

namespace brig::broker {

inline constexpr char kDefaultAttribution[] = "x-brig-attribution";

struct Target {
  enum Kind { kUnix, kTcp, kHttp, kHttps } kind = kTcp;
  std::string path;  // kUnix
  std::string host;  // the others: a name, an IPv4 address or a bracketed IPv6 one
  uint16_t port = 0;
  // host[:port] as an HTTP Host header names it (the port only when not the scheme's).
  std::string Authority() const;
  std::string Str() const;  // as the spec wrote it, normalised
};

struct Header {
  std::string name;
  std::string from;   // "env:VAR" or "file:/PATH"
  std::string value;  // read on the host by Resolve; never logged
};

struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
};

struct Config {
  std::string name;
  uint16_t port = 0;      // 0: no TCP listener
  std::string unix_path;  // empty: no unix socket
  Target to;
  bool http = false;
  std::vector<Header> headers;  // distinct names
  std::string attribution;      // the header's name (http only)
  std::vector<std::string> methods, paths;  // empty: any (http only)
  // Filled in by Resolve: where the target is.
  std::vector<Address> addresses;
  // A dry run's: the headers whose value could not be read now, each "header NAME: why"
  // (a run would refuse them). A dry run keeps no value.
  std::vector<std::string> unread;
};

// `NAME=SPEC`, as --broker takes it, into the profile's message. Errors name the value
// and say what is wrong with it; the caller adds which flag it was.
Result<v1::Broker> ParseSpec(std::string_view name_and_spec);
// One broker, checked: a name, at least one listener, a target, a consistent mode, header
// names that are HTTP tokens. Pure. Errors say what is wrong; the caller adds where.
Result<Config> Check(const v1::Broker& b);
// All of a run's brokers together: names, ports and unix paths distinct.
Status CheckAll(const std::vector<Config>& brokers);
// Reads every header's value (from `environ`, or a file on the host) and resolves the
// target's host name. Errors name the header or the target. A `dry_run` holds no secret:
// it reads each value only to check it, keeps none, and notes a header it cannot read in
// `unread` instead of failing.
Status Resolve(Config& broker, char** environ, bool dry_run = false);

// A header name as RFC 9110 allows it (a token); a value without CR, LF or NUL.
bool IsHeaderName(std::string_view s);
bool IsHeaderValue(std::string_view s);

}  // namespace brig::broker
