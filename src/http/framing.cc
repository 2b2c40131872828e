// Request and response framing on http-parser. The parser is paused at the end of each head
// and of each message, so one Feed never runs past a boundary: the caller learns where each
// request's bytes end, and a head is checked and rewritten before any of its body goes on.
// Where http-parser is lenient (a bare LF, obs-fold, whitespace after a chunk size), brig
// reads the same bytes again, strictly, and refuses what a strict reader would.
#include "http/framing.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace brig::http {
namespace {

constexpr size_t kMaxChunkLine = 4096;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool Paused(const http_parser& p) { return HTTP_PARSER_ERRNO(&p) == HPE_PAUSED; }


bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

// `s` with every well-formed %XX decoded, once.
std::string PercentDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && IsHex(s[i + 1]) && IsHex(s[i + 2])) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// "host[:port]" as brig compares authorities: lower case, the port only when it is not
// `default_port`.
std::string Authority(std::string_view host, std::string_view port, uint16_t default_port) {
  std::string out = Lower(host);
  if (out.find(':') != std::string::npos && out.front() != '[') out = "[" + out + "]";
  if (!port.empty() && port != std::to_string(default_port)) out += ":" + std::string(port);
  return out;
}

// A Host header's value as Authority writes it.
std::string HostAuthority(std::string_view host, uint16_t default_port) {
  size_t colon = host.rfind(':');
  if (colon == std::string_view::npos || host.find(']', colon) != std::string_view::npos) {
    return Authority(host, "", default_port);
  }
  return Authority(host.substr(0, colon), host.substr(colon + 1), default_port);
}

// Why a head's bytes (from the request line to its empty line) are not what RFC 9112
// allows and a strict reader reads alike: every line ends in CRLF, and no header line
// starts with whitespace (obs-fold). Empty lines before the request line are allowed
// (RFC 9112 2.2), as http-parser skips them.
std::string HeadBytesProblem(std::string_view raw) {
  while (raw.substr(0, 2) == "\r\n") raw.remove_prefix(2);
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r' && (i + 1 >= raw.size() || raw[i + 1] != '\n')) return "a bare CR";
    if (raw[i] != '\n') continue;
    if (i == 0 || raw[i - 1] != '\r') return "a bare LF";
    if (i + 1 < raw.size() && (raw[i + 1] == ' ' || raw[i + 1] == '\t')) {
      return "obs-fold (a header line starting with whitespace)";
    }
  }
  return {};
}

// RFC 9110 5.5: visible bytes, obs-text, SP and HTAB; no other control byte (http-parser
// takes some).
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u >= 0x20 && u != 0x7f) || u == '\t';
  });
}

}  // namespace

std::string Printable(std::string_view s) {
  std::string out(s.substr(0, 256));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

std::string NotCanonical(std::string_view p) {
  if (p.empty() || p[0] != '/') return "the path does not start with /";
  if (p.find("//") != std::string_view::npos) return "the path has an empty segment (//)";
  if (p.find('\\') != std::string_view::npos) return "the path has a backslash";
  for (size_t at = p.find('%'); at != std::string_view::npos; at = p.find('%', at + 1)) {
    if (at + 2 >= p.size() || !IsHex(p[at + 1]) || !IsHex(p[at + 2])) {
      return "the path has a malformed percent-encoding";
    }
    std::string code = Lower(p.substr(at + 1, 2));
    if (code == "2e" || code == "2f" || code == "5c" || code == "25" || code == "00") {
      return "the path percent-encodes a dot, slash, backslash, percent or NUL";
    }
  }
  for (size_t start = 1; start <= p.size();) {
    size_t end = std::min(p.find('/', start), p.size());
    std::string_view segment = p.substr(start, end - start);
    segment = segment.substr(0, segment.find(';'));
    if (segment == "." || segment == "..") return "the path has a . or .. segment";
    start = end + 1;
  }
  return {};
}

std::string AnotherHost(std::string_view path) {
  std::string p(path);
  for (int round = 0;; ++round) {
    std::string decoded = PercentDecoded(p);
    if (decoded == p) break;
    if (round == kDecodeRounds) {
      return "the path is percent-encoded more than " + std::to_string(kDecodeRounds) +
             " times over, which a target decoding it again can read as another host";
    }
    p = std::move(decoded);
  }
  std::replace(p.begin(), p.end(), '\\', '/');
  p.erase(std::remove_if(p.begin(), p.end(),
                         [](char c) { return c == '\t' || c == '\r' || c == '\n'; }),
          p.end());
  for (size_t start = 1; start <= p.size();) {
    size_t end = std::min(p.find('/', start), p.size());
    std::string_view segment = std::string_view(p).substr(start, end - start);
    segment = segment.substr(0, segment.find(';'));
    if (segment.empty() && end < p.size()) {
      return "the path has an empty segment (//, also as a backslash, percent-encoded or "
             "before a ;), which a target can read as another host, at the start or once it "
             "strips a prefix";
    }
    if (segment == "." || segment == "..") {
      return "the path has a . or .. segment (also percent-encoded), whose removal can make "
             "it start with //, which a target can read as another host";
    }
    start = end + 1;
  }
  return {};
}

bool PathAllowed(std::string_view path, const std::vector<std::string>& prefixes) {
  if (!NotCanonical(path).empty()) return false;
  for (const std::string& p : prefixes) {
    if (path.substr(0, p.size()) != p) continue;
    if (path.size() == p.size() || p.back() == '/' || path[p.size()] == '/') return true;
  }
  return false;
}

std::string Refusal(int status, std::string_view body) {
  const char* text = "Bad Gateway";
  switch (status) {
    case 400: text = "Bad Request"; break;
    case 403: text = "Forbidden"; break;
    case 405: text = "Method Not Allowed"; break;
    case 431: text = "Request Header Fields Too Large"; break;
    case 501: text = "Not Implemented"; break;
  }
  std::string b = std::string(body) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(b.size()) +
         "\r\nConnection: close\r\n\r\n" + b;
}

// ---- requests ---------------------------------------------------------------------------

RequestFramer::RequestFramer(const Rules* rules) : rules_(rules) {
  // The parser counts a head's bytes across calls, so the bound holds however they came.
  http_parser_set_max_header_size(kMaxHead);
  http_parser_init(&parser_, HTTP_REQUEST);
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = OnBegin;
  settings_.on_url = OnUrl;
  settings_.on_header_field = OnField;
  settings_.on_header_value = OnValue;
  settings_.on_headers_complete = OnHeadersDone;
  settings_.on_message_complete = OnDone;
}

int RequestFramer::OnBegin(http_parser* p) {
  auto* f = static_cast<RequestFramer*>(p->data);
  f->url_.clear();
  f->fields_.clear();
  f->head_ = RequestHead{};
  f->last_was_value_ = false;
  return 0;
}

int RequestFramer::OnUrl(http_parser* p, const char* at, size_t n) {
  static_cast<RequestFramer*>(p->data)->url_.append(at, n);
  return 0;
}

int RequestFramer::OnField(http_parser* p, const char* at, size_t n) {
  auto* f = static_cast<RequestFramer*>(p->data);
  if (f->fields_.empty() || f->last_was_value_) f->fields_.emplace_back();
  f->fields_.back().first.append(at, n);
  f->last_was_value_ = false;
  return 0;
}

int RequestFramer::OnValue(http_parser* p, const char* at, size_t n) {
  auto* f = static_cast<RequestFramer*>(p->data);
  if (f->fields_.empty()) f->fields_.emplace_back();
  f->fields_.back().second.append(at, n);
  f->last_was_value_ = true;
  return 0;
}

int RequestFramer::OnHeadersDone(http_parser* p) {
  static_cast<RequestFramer*>(p->data)->headers_done_ = true;
  http_parser_pause(p, 1);
  return 0;
}

int RequestFramer::OnDone(http_parser* p) {
  static_cast<RequestFramer*>(p->data)->message_done_ = true;
  http_parser_pause(p, 1);
  return 0;
}

void RequestFramer::Refuse(int status, std::string why) {
  refusal_ = status;
  why_ = std::move(why);
}

bool RequestFramer::ParserFailed(std::string_view in, size_t n) {
  http_errno e = HTTP_PARSER_ERRNO(&parser_);
  if (e == HPE_OK || e == HPE_PAUSED) return false;
  std::string seen = raw_ + std::string(in.substr(n, 1));
  seen.erase(0, seen.find_first_not_of("\r\n"));
  if (e == HPE_HEADER_OVERFLOW) {
    Refuse(431, "the request head is larger than " + std::to_string(kMaxHead) + " bytes");
  } else if (e == HPE_INVALID_METHOD && rules_->no_trace && seen.substr(0, 5) == "TRACK") {
    // http-parser knows no TRACK; it is refused as TRACE is, not as a malformed request.
    Refuse(405, "TRACK is never brokered");
  } else if (e == HPE_UNEXPECTED_CONTENT_LENGTH) {
    Refuse(400, "ambiguous request framing: Content-Length with Transfer-Encoding, or twice");
  } else {
    Refuse(400, std::string("malformed request: ") + http_errno_description(e));
  }
  return true;
}

bool RequestFramer::CheckHead() {
  head_.method = http_method_str(static_cast<http_method>(parser_.method));
  head_.path = url_.substr(0, url_.find('?'));
  const std::string* host = nullptr;
  int hosts = 0, lengths = 0, encodings = 0;
  bool upgrade = false;
  std::string encoding;
  for (auto& [name, value] : fields_) {
    // http-parser drops the whitespace before a value, not after it.
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    std::string n = Lower(name);
    if (n == "host") {
      ++hosts;
      host = &value;
    }
    lengths += n == "content-length";
    if (n == "transfer-encoding") {
      ++encodings;
      encoding = Lower(value);
    }
    upgrade |= n == "upgrade";
    if (!IsFieldValue(value)) {
      Refuse(400, "malformed request: a header value holds a control byte");
      return false;
    }
  }
  head_.host = rules_->host.empty() && host ? *host : rules_->host;
  std::string why = HeadBytesProblem(raw_);
  if (!why.empty()) {
    Refuse(400, "malformed request: " + why);
    return false;
  }
  if (parser_.http_major != 1) why = "not HTTP/1.x";
  if (hosts != 1) why = hosts ? "more than one Host" : "no Host";
  if (lengths > 1 || encodings > 1 || (lengths && encodings)) {
    why = "Content-Length and Transfer-Encoding more than once between them";
  }
  if (encodings && (encoding != "chunked" || parser_.http_minor == 0)) {
    why = "a Transfer-Encoding other than chunked, or in HTTP/1.0";
  }
  if (parser_.method == HTTP_CONNECT) why = "an authority-form target (CONNECT)";
  if (!why.empty()) {
    Refuse(400, "ambiguous or malformed request: " + why);
    return false;
  }
  if (upgrade) {
    Refuse(501, "Upgrade is not relayed");
    return false;
  }
  if (rules_->no_trace && parser_.method == HTTP_TRACE) {
    Refuse(405, "TRACE is never brokered");
    return false;
  }
  if (!rules_->methods.empty() &&
      std::find(rules_->methods.begin(), rules_->methods.end(), head_.method) ==
          rules_->methods.end()) {
    Refuse(403, head_.method + " is not among the methods this broker allows");
    return false;
  }
  return true;
}

bool RequestFramer::CheckTarget() {
  if (url_.find('#') != std::string::npos) {
    Refuse(400, "malformed request: a fragment in the request target");
    return false;
  }
  if (!std::all_of(url_.begin(), url_.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      })) {
    Refuse(400, "malformed request: the request target is not visible ASCII");
    return false;
  }
  if (url_[0] != '/') {
    http_parser_url u;
    http_parser_url_init(&u);
    if (url_ == "*" || http_parser_parse_url(url_.data(), url_.size(), 0, &u) != 0 ||
        !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)) ||
        (u.field_set & (1 << UF_USERINFO))) {
      Refuse(400, "the request target is neither origin-form nor absolute-form");
      return false;
    }
    auto part = [&](int f) {
      return u.field_set & (1 << f)
                 ? std::string_view(url_).substr(u.field_data[f].off, u.field_data[f].len)
                 : std::string_view();
    };
    std::string scheme = Lower(part(UF_SCHEMA));
    uint16_t default_port = scheme == "https" ? 443 : 80;
    std::string named = Authority(part(UF_HOST), part(UF_PORT), default_port);
    std::string own = rules_->host.empty() ? HostAuthority(head_.host, default_port)
                                           : HostAuthority(rules_->host, default_port);
    if ((scheme != "http" && scheme != "https") || named != own) {
      Refuse(400, "the request target names " + Printable(scheme + "://" + named) + ", not " +
                      Printable(own));
      return false;
    }
    // RFC 9112 3.2.2: the target's authority wins over Host; they agree, so origin-form
    // says the same to every reader.
    std::string origin = part(UF_PATH).empty() ? "/" : std::string(part(UF_PATH));
    if (u.field_set & (1 << UF_QUERY)) origin += "?" + std::string(part(UF_QUERY));
    url_ = std::move(origin);
    head_.path = url_.substr(0, url_.find('?'));
  }
  if (rules_->own_host) {
    std::string why = AnotherHost(head_.path);
    if (!why.empty()) {
      Refuse(403, why);
      return false;
    }
  }
  if (!rules_->paths.empty() && !PathAllowed(head_.path, rules_->paths)) {
    std::string why = NotCanonical(head_.path);
    Refuse(403, why.empty() ? "the path is under none of the prefixes this broker allows" : why);
    return false;
  }
  return true;
}

// One line of a chunked body's framing (its CRLF taken off), read in state `c`: why it is
// not what RFC 9112 7.1 allows, or "" (and `c` moves on).
std::string RequestFramer::ChunkLine(std::string_view line) {
  Chunks& c = chunks_;
  switch (c.state) {
    case Chunks::kSize: {
      size_t digits = 0;
      while (digits < line.size() && IsHex(line[digits])) ++digits;
      if (digits == 0 || digits > 15 || (digits < line.size() && line[digits] != ';')) {
        return "a chunk size that is not hex digits and an optional extension";
      }
      c.left = std::stoull(std::string(line.substr(0, digits)), nullptr, 16);
      c.state = c.left ? Chunks::kData : Chunks::kTrailer;
      return {};
    }
    case Chunks::kDataEnd:
      c.state = Chunks::kSize;
      return line.empty() ? "" : "chunk data longer than its size";
    case Chunks::kTrailer:
      if (line.empty()) c.state = Chunks::kEnd;
      if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) return "obs-fold in a trailer";
      return {};
    default:
      return "bytes after the last chunk";
  }
}

size_t RequestFramer::CheckChunks(std::string_view body) {
  Chunks& c = chunks_;
  for (size_t i = 0; i < body.size(); ++i) {
    if (c.state == Chunks::kData) {
      uint64_t take = std::min<uint64_t>(c.left, body.size() - i);
      c.left -= take;
      i += take - 1;
      if (c.left == 0) c.state = Chunks::kDataEnd;
      continue;
    }
    std::string why;
    c.line += body[i];
    if (c.line.size() > kMaxChunkLine) why = "a chunk-size or trailer line too long";
    size_t size = c.line.size();
    if (body[i] != '\n' && size >= 2 && c.line[size - 2] == '\r') why = "a bare CR";
    if (why.empty() && body[i] == '\n') {
      why = size < 2 || c.line[size - 2] != '\r'
                ? "a bare LF"
                : ChunkLine(std::string_view(c.line).substr(0, size - 2));
      c.line.clear();
    }
    if (!why.empty()) {
      Refuse(400, "malformed chunked body: " + why);
      return i;
    }
  }
  return body.size();
}

void RequestFramer::EmitHead(std::string& out) {
  std::vector<std::string> drop;
  for (const auto& [name, value] : rules_->set) drop.push_back(Lower(name));
  if (!rules_->host.empty()) drop.push_back("host");
  out += head_.method;
  out += ' ';
  out += url_;
  out += parser_.http_minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n";
  for (const auto& [name, value] : fields_) {
    if (std::find(drop.begin(), drop.end(), Lower(name)) != drop.end()) continue;
    out += name + ": " + value + "\r\n";
  }
  if (!rules_->host.empty()) out += "Host: " + rules_->host + "\r\n";
  for (const auto& [name, value] : rules_->set) out += name + ": " + value + "\r\n";
  out += "\r\n";
}

RequestFramer::Step RequestFramer::Feed(std::string_view in, std::string& out) {
  Step step;
  if (refusal_ || in.empty()) return step;
  parser_.data = this;
  in_message_ = true;
  size_t n = http_parser_execute(&parser_, &settings_, in.data(), in.size());
  step.consumed = n;
  if (!in_body_) {
    raw_.append(in.data(), n);
  } else {
    // Up to a refused byte of the chunked framing, the body went on (however it was split).
    size_t ok = chunked_ ? CheckChunks(in.substr(0, n)) : n;
    out.append(in.data(), ok);
    if (ok < n) return step;
  }
  if (ParserFailed(in, n)) return step;
  if (headers_done_) {
    headers_done_ = false;
    http_parser_pause(&parser_, 0);
    // The parser stops on the head's last byte, still unread; it belongs to the head, which
    // is rebuilt rather than passed on. The parser takes any byte after the last CR there;
    // brig wants the LF, so that what it frames is what a strict target would.
    if (n >= in.size() || in[n] != '\n') {
      Refuse(400, "malformed request: the head does not end in CRLF CRLF");
      return step;
    }
    step.consumed += http_parser_execute(&parser_, &settings_, in.data() + n, 1);
    raw_ += '\n';
    if (ParserFailed(in, n + 1)) return step;
    if (!CheckHead() || !CheckTarget()) return step;
    EmitHead(out);
    step.head = true;
    in_body_ = true;
    // Taken now: http-parser clears its flags when the message ends, within the same call.
    chunked_ = parser_.flags & F_CHUNKED;
    chunks_ = Chunks{};
  }
  if (message_done_) {
    message_done_ = false;
    http_parser_pause(&parser_, 0);
    in_body_ = false;
    in_message_ = false;
    raw_.clear();
    step.done = true;
  }
  return step;
}

// ---- responses --------------------------------------------------------------------------

ResponseFramer::ResponseFramer() {
  http_parser_init(&parser_, HTTP_RESPONSE);
  http_parser_settings_init(&settings_);
  settings_.on_headers_complete = OnHeadersDone;
  settings_.on_body = OnBody;
  settings_.on_message_complete = OnDone;
}

int ResponseFramer::OnHeadersDone(http_parser* p) {
  auto* f = static_cast<ResponseFramer*>(p->data);
  // 1: the message has no body, whatever its head says (RFC 9110: a HEAD's response).
  bool no_body = !f->expected_.empty() && f->expected_.front();
  // A body of Content-Length bytes, as http-parser reads one (not chunked, no
  // Transfer-Encoding at all).
  bool sized = !(p->flags & F_CHUNKED) && !p->uses_transfer_encoding &&
               p->content_length != ULLONG_MAX;
  f->body_left_ = no_body || !sized ? 0 : p->content_length;
  return no_body ? 1 : 0;
}

int ResponseFramer::OnBody(http_parser* p, const char*, size_t n) {
  auto* f = static_cast<ResponseFramer*>(p->data);
  f->body_left_ -= std::min<uint64_t>(n, f->body_left_);
  return 0;
}

int ResponseFramer::OnDone(http_parser* p) {
  static_cast<ResponseFramer*>(p->data)->body_left_ = 0;
  static_cast<ResponseFramer*>(p->data)->message_done_ = true;
  http_parser_pause(p, 1);
  return 0;
}

ResponseFramer::Step ResponseFramer::Finish(size_t consumed) {
  Step step;
  step.consumed = consumed;
  if (Paused(parser_)) http_parser_pause(&parser_, 0);
  if (!message_done_) return step;
  message_done_ = false;
  step.status = parser_.status_code;
  // An interim response (100 Continue, 103 Early Hints) is followed by the final one.
  if (step.status >= 200 || step.status == 101) {
    step.done = true;
    if (!expected_.empty()) expected_.pop_front();
  }
  return step;
}

ResponseFramer::Step ResponseFramer::Feed(std::string_view in) {
  if (malformed_ || in.empty()) return {};
  if (expected_.empty()) {
    malformed_ = true;
    why_ = "the target sent bytes no request asked for";
    return {};
  }
  parser_.data = this;
  size_t n = http_parser_execute(&parser_, &settings_, in.data(), in.size());
  if (!Paused(parser_) && HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    malformed_ = true;
    why_ =
        std::string("malformed response: ") + http_errno_description(HTTP_PARSER_ERRNO(&parser_));
    return {};
  }
  return Finish(n);
}

ResponseFramer::Step ResponseFramer::Eof() {
  if (malformed_ || expected_.empty()) return {};
  parser_.data = this;
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  return Finish(0);
}


}  // namespace brig::http
