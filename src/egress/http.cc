// HTTP/1.x request head parsing for the Host peek. Lines are taken whole, by CRLF, and a
// line that has not ended yet is held to the checks that do not need its end.
#include "egress/http.h"

#include <algorithm>
#include <optional>

#include "egress/allowlist.h"

namespace brig::egress {
namespace {

HttpParse Malformed(std::string why) {
  HttpParse r;
  r.status = HttpParse::Status::kMalformed;
  r.why = std::move(why);
  return r;
}

// RFC 9110 5.6.2.
bool IsTchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}
bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTchar(c); });
}
bool IsOws(char c) { return c == ' ' || c == '\t'; }
bool IsCtl(unsigned char c) { return c < 0x20 || c == 0x7f; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

// The checks a line's bytes must pass before it has ended: no bare CR, no NUL or other
// control byte but HTAB; the request line starts with a method token, a header line not
// with whitespace (obs-fold). Each is also made of the whole line, and the first failing
// byte is the one reported, so a line cut anywhere is refused for the same reason as whole.
std::string PartialLineProblem(std::string_view part, bool request_line) {
  if (!part.empty() && part.back() == '\r') part.remove_suffix(1);  // maybe CRLF's CR
  bool in_method = request_line;
  for (size_t i = 0; i < part.size(); ++i) {
    auto c = static_cast<unsigned char>(part[i]);
    if (c == '\r') return "bare CR";
    if (c == 0) return "NUL byte";
    if (IsCtl(c) && c != '\t') return "control byte";
    if (i == 0 && !request_line && IsOws(static_cast<char>(c))) {
      return "obs-fold (a header line starting with whitespace)";
    }
    if (in_method && c == ' ' && i > 0) {
      in_method = false;
    } else if (in_method && !IsTchar(c)) {
      return "request line does not start with a method";
    }
  }
  return {};
}

// "host[:port]", from a Host header or an absolute-form target. Returns why it is not one.
std::string ParseAuthority(std::string_view s, std::string& host, uint16_t& port) {
  if (s.empty()) return "empty host";
  if (s[0] == '[') return "an IP literal, not a host name";
  if (s.find('@') != std::string_view::npos) return "userinfo before the host";
  size_t colon = s.find(':');
  port = 0;
  if (colon != std::string_view::npos) {
    std::string_view digits = s.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return "port is not a number from 1 to 65535";
    }
    uint32_t v = 0;
    for (char c : digits) v = v * 10 + static_cast<uint32_t>(c - '0');
    if (v == 0 || v > 65535) return "port out of range 1-65535";
    port = static_cast<uint16_t>(v);
    s = s.substr(0, colon);
  }
  Result<std::string> name = CheckName(s);
  if (!name) return name.error().detail;
  host = std::move(name).value();
  return {};
}

struct RequestLine {
  std::string method;
  int minor_version = 1;
  bool absolute = false;  // the target was absolute-form: then these are its authority's
  std::string host;
  uint16_t port = 0;
};

std::string ParseRequestLine(std::string_view line, RequestLine& rl) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return "request line is not METHOD SP TARGET SP VERSION";
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return "method is not a token";
  if (method == "CONNECT") return "CONNECT: the proxy is transparent, not a forward proxy";
  if (version == "HTTP/1.1") {
    rl.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    rl.minor_version = 0;
  } else {
    return "version is not HTTP/1.0 or HTTP/1.1";
  }
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      })) {
    return "request target is not visible ASCII";
  }
  rl.method = method;
  if (target[0] == '/') return {};
  if (target == "*") return method == "OPTIONS" ? "" : "target * with a method other than OPTIONS";
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || !EqualsNoCase(target.substr(0, kScheme.size()), kScheme)) {
    return "request target neither origin-form nor http:// absolute-form";
  }
  std::string_view rest = target.substr(kScheme.size());
  std::string why = ParseAuthority(rest.substr(0, rest.find_first_of("/?#")), rl.host, rl.port);
  if (!why.empty()) return "request target: " + why;
  rl.absolute = true;
  return {};
}

}  // namespace

HttpParse ParseHttpHost(std::string_view b) {
  std::string_view window = b.substr(0, kMaxHttpHead);
  RequestLine rl;
  std::optional<std::string_view> host_value;
  size_t pos = 0;
  for (bool first = true;; first = false) {
    size_t lf = window.find('\n', pos);
    std::string_view part = window.substr(pos, lf == std::string_view::npos ? lf : lf - pos);
    std::string why = PartialLineProblem(part, first);
    if (!why.empty()) return Malformed(std::move(why));
    if (lf == std::string_view::npos) {
      if (b.size() >= kMaxHttpHead) return Malformed("request head longer than 16384 bytes");
      return {};
    }
    if (part.empty() || part.back() != '\r') return Malformed("bare LF");
    std::string_view line = part.substr(0, part.size() - 1);
    pos = lf + 1;
    if (first) {
      why = ParseRequestLine(line, rl);
      if (!why.empty()) return Malformed(std::move(why));
      continue;
    }
    if (line.empty()) break;  // the end of the head
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Malformed("header line without a colon");
    // RFC 9112 5.1: no whitespace between the name and the colon; IsToken refuses it.
    if (!IsToken(line.substr(0, colon))) return Malformed("header name is not a token");
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && IsOws(value.front())) value.remove_prefix(1);
    while (!value.empty() && IsOws(value.back())) value.remove_suffix(1);
    if (EqualsNoCase(line.substr(0, colon), "host")) {
      if (host_value) return Malformed("two Host headers");
      host_value = value;
    }
  }

  HttpParse r;
  HttpRequestHead& h = r.value;
  h.method = std::move(rl.method);
  h.minor_version = rl.minor_version;
  h.end = pos;
  if (host_value) {
    std::string why = ParseAuthority(*host_value, h.host, h.port);
    if (!why.empty()) {
      HttpParse bad = Malformed("Host: " + why);
      std::string_view host = *host_value;
      if (host.empty() || host.front() != '[') host = host.substr(0, host.rfind(':'));
      bad.address = IsAddressLiteral(host);
      return bad;
    }
    // An absolute-form target and Host that disagree are read differently by different
    // servers (RFC 9112 3.2.2 has the target win): refuse rather than pick one.
    if (rl.absolute && (rl.host != h.host || (rl.port ? rl.port : 80) != (h.port ? h.port : 80))) {
      return Malformed("request target and Host name different hosts");
    }
  } else if (rl.minor_version == 1) {
    return Malformed("HTTP/1.1 request without Host");
  } else if (rl.absolute) {
    h.host = std::move(rl.host);
    h.port = rl.port;
  }
  r.status = HttpParse::Status::kOk;
  return r;
}

std::string HttpRefusal(int status, std::string_view why) {
  std::string body = "brig: " + std::string(why) + "\n";
  const char* text = status == 400 ? "Bad Request" : status == 502 ? "Bad Gateway" : "Forbidden";
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace brig::egress
