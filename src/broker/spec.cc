// Broker specs: parsing and checking (pure), then reading header values and resolving
// targets on the host (Resolve), all before any process of the sandbox exists.
#include "broker/spec.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "http/framing.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::broker {
namespace {

constexpr size_t kMaxName = 32;
constexpr size_t kMaxHeaderValue = 8192;
constexpr size_t kMaxHeaders = 32;
constexpr size_t kMaxList = 32;  // methods, paths

Error Bad(std::string_view what, std::string why) {
  return BadInput(what.empty() ? "spec" : std::string(what), "", std::move(why));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<uint16_t> ParsePort(std::string_view s) {
  uint32_t v = 0;
  if (s.empty() || s.size() > 5) return Bad("port", "'" + std::string(s) + "' is not 1-65535");
  for (char c : s) {
    if (c < '0' || c > '9') return Bad("port", "'" + std::string(s) + "' is not 1-65535");
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v == 0 || v > 65535) return Bad("port", "'" + std::string(s) + "' is not 1-65535");
  return static_cast<uint16_t>(v);
}

// An absolute path without empty, "." or ".." components, which a unix socket can name.
Status CheckPath(std::string_view p, std::string_view what) {
  if (p.empty() || p[0] != '/') return Bad(what, "'" + std::string(p) + "' is not absolute");
  if (p.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Bad(what, "longer than a unix socket address holds (107 bytes)");
  }
  for (std::string_view part : util::Split(p.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return Bad(what, "'" + std::string(p) + "' is not a normalised path");
    }
  }
  for (char c : p) {
    if (c == '\0' || c == '\n') return Bad(what, "holds a NUL or newline");
  }
  return {};
}

bool IsHostName(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.')) {
      return false;
    }
  }
  return h.front() != '-' && h.front() != '.';
}

// HOST[:PORT] with a bracketed IPv6 literal allowed; the port may be missing only when
// `default_port` is not 0.
Status ParseHostPort(std::string_view s, uint16_t default_port, Target& t) {
  std::string_view host = s, port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos)
      return Bad("to", "unclosed '[' in '" + std::string(s) + "'");
    host = s.substr(0, close + 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty() && rest[0] != ':')
      return Bad("to", "'" + std::string(s) + "': junk after ']'");
    if (!rest.empty()) port = rest.substr(1);
    in6_addr a6;
    std::string inner(host.substr(1, host.size() - 2));
    if (inet_pton(AF_INET6, inner.c_str(), &a6) != 1) {
      return Bad("to", "'" + inner + "' is not an IPv6 address");
    }
  } else {
    size_t colon = s.rfind(':');
    if (colon != std::string_view::npos) {
      host = s.substr(0, colon);
      port = s.substr(colon + 1);
    }
    if (!IsHostName(host)) return Bad("to", "'" + std::string(host) + "' is not a host name");
  }
  if (port.empty() && (default_port == 0 || s.back() == ':')) {
    return Bad("to", "'" + std::string(s) + "' names no port");
  }
  t.host = Lower(host);
  t.port = port.empty() ? default_port : BRIG_TRY_CTX(ParsePort(port), "to");
  return {};
}

Result<Target> ParseTarget(std::string_view to) {
  Target t;
  auto starts = [&](std::string_view p) { return to.substr(0, p.size()) == p; };
  if (to.empty()) return Bad("to", "missing: where the broker forwards to");
  if (starts("unix:")) {
    t.kind = Target::kUnix;
    t.path = std::string(to.substr(5));
    BRIG_TRY_CTX(CheckPath(t.path, "unix path"), "to");
    return t;
  }
  if (starts("tcp:")) {
    t.kind = Target::kTcp;
    BRIG_TRY(ParseHostPort(to.substr(4), 0, t));
    return t;
  }
  bool https = starts("https://");
  if (!https && !starts("http://")) {
    return Bad("to", "'" + std::string(to) +
                         "' is none of unix:/PATH, tcp:HOST:PORT, http://HOST[:PORT], "
                         "https://HOST[:PORT]");
  }
  t.kind = https ? Target::kHttps : Target::kHttp;
  std::string_view rest = to.substr(https ? 8 : 7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return Bad("to", "'" + std::string(to) + "': only a scheme, a host and a port, no path");
  }
  BRIG_TRY(ParseHostPort(rest, https ? 443 : 80, t));
  return t;
}

Status CheckSource(std::string_view from) {
  if (from.substr(0, 4) == "env:") {
    if (!util::IsEnvName(from.substr(4))) {
      return Bad("header", "'" + std::string(from.substr(4)) + "' is not a variable name");
    }
    return {};
  }
  if (from.substr(0, 5) == "file:") return CheckPath(from.substr(5), "header file");
  return Bad("header",
             "the value's source '" + std::string(from) + "' is neither env:VAR nor file:/PATH");
}

// Inside paths a broker's socket may not take: where the kernel's or the workspace's
// files are (a socket in a bound workspace would be a file made in the host's source).
bool ReservedInside(const std::string& p) {
  for (const char* r : {"/proc", "/sys", "/dev", "/workspace"}) {
    std::string_view rv(r);
    if (p == rv ||
        (p.size() > rv.size() && p.compare(0, rv.size(), rv) == 0 && p[rv.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// methods=: distinct method tokens, never TRACE, TRACK or CONNECT (the broker refuses them
// whatever the list says).
Result<std::vector<std::string>> CheckMethods(
    const google::protobuf::RepeatedPtrField<std::string>& methods) {
  std::vector<std::string> out;
  if (methods.size() > static_cast<int>(kMaxList)) {
    return Bad("methods", "more than " + std::to_string(kMaxList));
  }
  for (const std::string& m : methods) {
    if (!IsHeaderName(m)) return Bad("methods", "'" + m + "' is not a method name");
    if (m == "TRACE" || m == "TRACK" || m == "CONNECT") {
      return Bad("methods", m + " is never brokered");
    }
    if (std::find(out.begin(), out.end(), m) != out.end()) {
      return Bad("methods", "'" + m + "' given twice");
    }
    out.push_back(m);
  }
  return out;
}

// paths=: distinct prefixes, each a path a request could have that no server reads as
// another (http::NotCanonical) or as another host (http::AnotherHost, which the framing
// refuses whatever the prefixes), with no query.
Result<std::vector<std::string>> CheckPaths(
    const google::protobuf::RepeatedPtrField<std::string>& paths) {
  std::vector<std::string> out;
  if (paths.size() > static_cast<int>(kMaxList)) {
    return Bad("paths", "more than " + std::to_string(kMaxList));
  }
  for (const std::string& p : paths) {
    bool visible = std::all_of(p.begin(), p.end(), [](char c) {
      return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
    std::string why = http::NotCanonical(p);
    if (why.empty()) why = http::AnotherHost(p);
    if (!visible || p.find_first_of("?#") != std::string::npos) {
      why = "holds a space, a control byte, '?' or '#'";
    }
    if (!why.empty()) return Bad("paths", "'" + p + "': " + why);
    if (std::find(out.begin(), out.end(), p) != out.end()) {
      return Bad("paths", "'" + p + "' given twice");
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

bool IsHeaderName(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool IsHeaderValue(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

std::string Target::Authority() const {
  bool default_port = (kind == kHttp && port == 80) || (kind == kHttps && port == 443);
  return default_port ? host : host + ":" + std::to_string(port);
}

std::string Target::Str() const {
  switch (kind) {
    case kUnix:
      return "unix:" + path;
    case kTcp:
      return "tcp:" + host + ":" + std::to_string(port);
    case kHttp:
      return "http://" + Authority();
    case kHttps:
      return "https://" + Authority();
  }
  return {};
}

Result<v1::Broker> ParseSpec(std::string_view s) {
  size_t eq = s.find('=');
  if (eq == std::string_view::npos) return Bad("", "expected NAME=SPEC");
  v1::Broker b;
  b.set_name(std::string(s.substr(0, eq)));
  std::string_view list;  // "methods" or "paths" while items without '=' go on with it
  for (std::string_view item : util::Split(s.substr(eq + 1), ',')) {
    size_t ieq = item.find('=');
    if (!item.empty() && ieq == std::string_view::npos && !list.empty()) {
      (list == "methods" ? b.add_methods() : b.add_paths())->assign(item);
      continue;
    }
    list = {};
    if (item.empty() || ieq == std::string_view::npos) {
      return Bad("", "'" + std::string(item) + "' is not KEY=VALUE");
    }
    std::string_view key = item.substr(0, ieq), value = item.substr(ieq + 1);
    auto once = [&](bool set) -> Status {
      if (set) return Bad("", "'" + std::string(key) + "' given twice");
      return {};
    };
    if (key == "port") {
      BRIG_TRY(once(b.port() != 0));
      b.set_port(BRIG_TRY(ParsePort(value)));
    } else if (key == "unix") {
      BRIG_TRY(once(!b.unix_path().empty()));
      if (value.empty()) return Bad("unix", "empty path");
      b.set_unix_path(std::string(value));
    } else if (key == "to") {
      BRIG_TRY(once(!b.to().empty()));
      b.set_to(std::string(value));
    } else if (key == "header") {
      size_t colon = value.find(':');
      if (colon == std::string_view::npos)
        return Bad("header", "expected NAME:env:VAR or NAME:file:/PATH");
      v1::BrokerHeader* h = b.add_headers();
      h->set_name(std::string(value.substr(0, colon)));
      h->set_from(std::string(value.substr(colon + 1)));
    } else if (key == "attribution") {
      BRIG_TRY(once(!b.attribution_header().empty()));
      if (value.empty()) return Bad("attribution", "empty header name");
      b.set_attribution_header(std::string(value));
    } else if (key == "mode") {
      BRIG_TRY(once(b.mode() != v1::BROKER_MODE_UNSPECIFIED));
      if (value == "http") {
        b.set_mode(v1::BROKER_HTTP);
      } else if (value == "tcp") {
        b.set_mode(v1::BROKER_TCP);
      } else {
        return Bad("mode", "'" + std::string(value) + "' is neither http nor tcp");
      }
    } else if (key == "methods" || key == "paths") {
      BRIG_TRY(once(key == "methods" ? b.methods_size() > 0 : b.paths_size() > 0));
      if (value.empty()) return Bad(key, "empty");
      (key == "methods" ? b.add_methods() : b.add_paths())->assign(value);
      list = key;
    } else {
      return Bad("", "unknown key '" + std::string(key) +
                         "' (port, unix, to, header, attribution, mode, methods, paths)");
    }
  }
  return b;
}

Result<Config> Check(const v1::Broker& b) {
  Config c;
  c.name = b.name();
  if (c.name.empty() || c.name.size() > kMaxName ||
      !std::all_of(c.name.begin(), c.name.end(), IsNameChar)) {
    return Bad("name", "'" + c.name + "' is not 1-32 characters of [A-Za-z0-9_-]");
  }
  if (b.port() > 65535) return Bad("port", std::to_string(b.port()) + " is not 1-65535");
  c.port = static_cast<uint16_t>(b.port());
  if (!b.unix_path().empty()) {
    BRIG_TRY(CheckPath(b.unix_path(), "unix"));
    if (ReservedInside(b.unix_path())) {
      return Bad("unix", "'" + b.unix_path() + "' is under /proc, /sys, /dev or /workspace");
    }
    c.unix_path = b.unix_path();
  }
  if (c.port == 0 && c.unix_path.empty()) {
    return Bad("", "no listener inside: give port=PORT, unix=/PATH or both");
  }
  c.to = BRIG_TRY(ParseTarget(b.to()));
  bool http_target = c.to.kind == Target::kHttp || c.to.kind == Target::kHttps;
  bool http_keys = b.headers_size() > 0 || !b.attribution_header().empty() ||
                   b.methods_size() > 0 || b.paths_size() > 0;
  if (b.mode() == v1::BROKER_TCP && (http_target || http_keys)) {
    return Bad("mode", std::string("tcp, but ") +
                           (http_target ? "the target is an http(s) URL"
                                        : "headers, attribution, methods and paths are HTTP's"));
  }
  c.methods = BRIG_TRY(CheckMethods(b.methods()));
  c.paths = BRIG_TRY(CheckPaths(b.paths()));
  c.http = b.mode() == v1::BROKER_HTTP || http_target || http_keys;
  if (b.headers_size() > static_cast<int>(kMaxHeaders)) {
    return Bad("header", "more than " + std::to_string(kMaxHeaders));
  }
  c.attribution = b.attribution_header().empty() ? kDefaultAttribution : b.attribution_header();
  if (!IsHeaderName(c.attribution)) {
    return Bad("attribution", "'" + c.attribution + "' is not an HTTP header name");
  }
  std::set<std::string> names = {Lower(c.attribution)};
  for (const auto& h : b.headers()) {
    if (!IsHeaderName(h.name())) {
      return Bad("header", "'" + h.name() + "' is not an HTTP header name");
    }
    std::string lower = Lower(h.name());
    if (lower == "host" || lower == "content-length" || lower == "transfer-encoding" ||
        lower == "connection" || lower == "upgrade") {
      return Bad("header", "'" + h.name() + "' frames the request; brig does not set it");
    }
    if (!names.insert(lower).second) {
      return Bad("header", "'" + h.name() + "' given twice (or it is the attribution header)");
    }
    BRIG_TRY(CheckSource(h.from()));
    c.headers.push_back(Header{h.name(), h.from(), {}});
  }
  return c;
}

Status CheckAll(const std::vector<Config>& brokers) {
  std::set<std::string> names, paths;
  std::set<uint16_t> ports;
  for (const Config& c : brokers) {
    if (!names.insert(c.name).second) return Bad("name", "'" + c.name + "' is used twice");
    if (c.port && !ports.insert(c.port).second) {
      return Bad("port", std::to_string(c.port) + " is taken by another broker");
    }
    if (!c.unix_path.empty() && !paths.insert(c.unix_path).second) {
      return Bad("unix", "'" + c.unix_path + "' is taken by another broker");
    }
  }
  for (const std::string& p : paths) {
    // A socket cannot be a directory another one is made in.
    for (const std::string& q : paths) {
      if (q.size() > p.size() && q.compare(0, p.size(), p) == 0 && q[p.size()] == '/') {
        return Bad("unix", "'" + q + "' is inside another broker's socket '" + p + "'");
      }
    }
  }
  return {};
}

namespace {

Status ReadValue(Header& h, char** environ) {
  std::string_view from = h.from;
  std::string value;
  if (from.substr(0, 4) == "env:") {
    std::string_view var = from.substr(4);
    auto found = util::EnvLookup(environ, var);
    if (!found) return Bad("header " + h.name, "$" + std::string(var) + " is not set");
    value = std::string(*found);
  } else {
    std::string path(from.substr(5));
    auto text = util::ReadUserFile(path, util::kMaxUserFile, util::FinalLink::kFollow);
    if (!text) return std::move(text).error().Wrap("header " + h.name);
    value = std::move(*text);
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
  }
  if (value.empty()) return Bad("header " + h.name, "the value from " + h.from + " is empty");
  if (value.size() > kMaxHeaderValue) {
    return Bad("header " + h.name, "the value from " + h.from + " is longer than 8 KiB");
  }
  if (!IsHeaderValue(value)) {
    return Bad("header " + h.name, "the value from " + h.from + " holds a CR, LF or NUL");
  }
  h.value = std::move(value);
  return {};
}

Status Lookup(Config& c) {
  if (c.to.kind == Target::kUnix) {
    Address a;
    auto* un = reinterpret_cast<sockaddr_un*>(&a.sa);
    un->sun_family = AF_UNIX;
    c.to.path.copy(un->sun_path, sizeof un->sun_path - 1);
    a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + c.to.path.size() + 1);
    c.addresses = {a};
    return {};
  }
  std::string host = c.to.host;
  if (!host.empty() && host[0] == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  std::string port = std::to_string(c.to.port);
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Fail("resolve", c.to.host, gai_strerror(rc), ErrorKind::kBadInput);
  }
  c.addresses.clear();
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Address a;
    memcpy(&a.sa, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    c.addresses.push_back(a);
  }
  freeaddrinfo(res);
  return {};
}

}  // namespace

Status Resolve(Config& c, char** environ, bool dry_run) {
  for (Header& h : c.headers) {
    Status read = ReadValue(h, environ);
    if (!dry_run) {
      BRIG_TRY(std::move(read));
      continue;
    }
    if (!read) c.unread.push_back(read.error().Render());
    h.value.clear();
  }
  return Lookup(c);
}

}  // namespace brig::broker
