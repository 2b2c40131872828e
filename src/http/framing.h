// HTTP/1.1 framing shared by http brokers (broker/service.cc) and the egress proxy on port
// 80 (egress/http_relay.cc), on Debian's http-parser (libhttp-parser): where each request
// and response begins and ends on a keep-alive connection, so that brig checks and
// rewrites every request head, and frames every request as a strict server would. Bodies
// (chunked or not) and responses pass as the bytes that came, as soon as they came: a
// stream of server-sent events is never held back.
//
// One reading for both, strict where two readers could disagree (RFC 9112 2.2, 3.2, 5,
// 6.1, 7.1): every line ends in CRLF, no obs-fold, exactly one Host, never both
// Content-Length and Transfer-Encoding, at most one of either, Transfer-Encoding only
// "chunked" and only in HTTP/1.1, chunk-size lines of hex digits and an optional extension.
// Only origin-form goes on: an absolute-form target must name the connection's authority
// and is sent on in origin-form. Pure: no sockets; unit-tested and fuzzed.
#pragma once

#include <http_parser.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brig::http {

// The largest request head brig reads (its rewriting needs it whole).
inline constexpr size_t kMaxHead = 64 * 1024;

// What brig does to, and asks of, every request head of a connection.
struct Rules {
  // Set on every request; any copy the client sent (any case) is dropped.
  std::vector<std::pair<std::string, std::string>> set;
  // Not empty: the Host sent on, in place of the client's, and the authority an
  // absolute-form target must name (a broker's target). Empty: the client's Host goes on,
  // and an absolute-form target must name the same authority.
  std::string host;
  // TRACE and TRACK get 405: an echoing server would reflect what brig set.
  bool no_trace = false;
  // Not empty: only these methods go on; others get 403.
  std::vector<std::string> methods;
  // Not empty: only paths under these prefixes go on (PathAllowed); others get 403.
  std::vector<std::string> paths;
  // A path a target could read as naming another host (AnotherHost) gets 403, whatever
  // `paths` says: a broker's target must not be led to send the credential elsewhere.
  bool own_host = false;
};

// One request as the audit names it.
struct RequestHead {
  std::string method;
  std::string host;  // as sent on (for the proxy: the client's, as it wrote it)
  std::string path;  // the origin-form target up to any '?'
};

// What a client wrote, for a refusal's or the audit's one line: at most 256 bytes, any but
// visible ASCII as '?'.
std::string Printable(std::string_view s);

// Why `path` (an origin-form path, no query) could be read as another path by a server
// that normalises it: "//", a "." or ".." segment (also before a ';' parameter), a
// backslash, or a percent-encoded dot, slash, backslash, percent or NUL. Empty if none.
std::string NotCanonical(std::string_view path);
// Why a target could read `path` (an origin-form path, no query) as a network-path
// reference ("//host/...", RFC 3986 4.2) when it builds a URL from it, or from what follows
// a prefix it strips: read as leniently as a target might (percent-decoded until nothing
// is left to decode, a backslash as a slash, tab, CR and LF dropped as a WHATWG URL parser
// drops them), a segment other than the last is empty up to any ';', or one is "." or
// "..", whose removal can bring that about; or it is percent-encoded more than
// kDecodeRounds times over. Empty if none.
constexpr int kDecodeRounds = 8;
std::string AnotherHost(std::string_view path);
// Whether `path` is canonical and under one of `prefixes`: equal to one, or starting with
// it where it ends in '/' or is followed by '/' (so "/v1" allows "/v1/x", never "/v1x").
bool PathAllowed(std::string_view path, const std::vector<std::string>& prefixes);

// The client's side of a connection: requests in, what goes on out.
class RequestFramer {
 public:
  explicit RequestFramer(const Rules* rules);
  RequestFramer(const RequestFramer&) = delete;
  RequestFramer& operator=(const RequestFramer&) = delete;

  struct Step {
    size_t consumed = 0;  // bytes of the input used
    bool head = false;    // a request head was parsed (and its rewrite appended)
    bool done = false;    // a request ended
  };
  // Parses from `in` up to the end of the next head or request, whichever comes first;
  // appends what goes on to `out`. Call again with the rest (a step may end a head or a
  // request having consumed nothing).
  Step Feed(std::string_view in, std::string& out);
  // The latest request's head (after a Step with `head`, or a refusal after its head).
  const RequestHead& head() const { return head_; }
  // Nonzero once the stream cannot go on: the status brig answers with (400 malformed or
  // ambiguous, 403 a method or path the rules do not allow, 405 TRACE/TRACK, 431 head too
  // large, 501 Upgrade), and why, in words for the audit.
  int refusal() const { return refusal_; }
  const std::string& why() const { return why_; }
  // Between requests: nothing of a next one read yet.
  bool idle() const { return !in_message_; }

 private:
  // The chunked body's own framing, read byte by byte alongside http-parser's.
  struct Chunks {
    enum State { kSize, kData, kDataEnd, kTrailer, kEnd } state = kSize;
    uint64_t left = 0;
    std::string line;
  };
  static int OnBegin(http_parser* p);
  static int OnUrl(http_parser* p, const char* at, size_t n);
  static int OnField(http_parser* p, const char* at, size_t n);
  static int OnValue(http_parser* p, const char* at, size_t n);
  static int OnHeadersDone(http_parser* p);
  static int OnDone(http_parser* p);
  void Refuse(int status, std::string why);
  bool ParserFailed(std::string_view in, size_t n);
  bool CheckHead();
  bool CheckTarget();
  std::string ChunkLine(std::string_view line);
  // How many of `body`'s bytes are well framed (all, or up to a refusal).
  size_t CheckChunks(std::string_view body);
  void EmitHead(std::string& out);

  const Rules* rules_;
  http_parser parser_;
  http_parser_settings settings_;
  bool in_message_ = false, in_body_ = false, headers_done_ = false, message_done_ = false;
  bool last_was_value_ = false;
  bool chunked_ = false;  // the body under way
  std::string raw_;  // the head's bytes as they came
  std::string url_;
  std::vector<std::pair<std::string, std::string>> fields_;
  Chunks chunks_;
  RequestHead head_;
  int refusal_ = 0;
  std::string why_;
};

// The upstream's side: responses, passed on as they are, read for their status and end.
class ResponseFramer {
 public:
  ResponseFramer();
  ResponseFramer(const ResponseFramer&) = delete;
  ResponseFramer& operator=(const ResponseFramer&) = delete;

  // One more request went upstream (a HEAD's response has no body).
  void Expect(bool head_request) { expected_.push_back(head_request); }
  size_t outstanding() const { return expected_.size(); }

  struct Step {
    size_t consumed = 0;
    bool done = false;  // a final (not 1xx) response ended
    int status = 0;     // its status
  };
  // Parses from `in` up to the end of the next final response; all of `consumed` goes to
  // the client as it is. Call again with the rest, as for requests.
  Step Feed(std::string_view in);
  // The upstream closed: ends a response whose body runs to the close.
  Step Eof();
  // The upstream's bytes are no HTTP response (or came unasked): the connection ends.
  bool malformed() const { return malformed_; }
  // What is left of the body of the response under way when it has a Content-Length
  // (0 when none is under way, or its body is chunked or runs to the close). Whoever moves
  // the body's bytes itself (splice) feeds the framer as many placeholder bytes: in such a
  // body http-parser counts bytes and reads none.
  uint64_t body_left() const { return body_left_; }
  const std::string& why() const { return why_; }

 private:
  static int OnHeadersDone(http_parser* p);
  static int OnBody(http_parser* p, const char* at, size_t n);
  static int OnDone(http_parser* p);
  Step Finish(size_t consumed);

  http_parser parser_;
  http_parser_settings settings_;
  std::deque<bool> expected_;
  uint64_t body_left_ = 0;
  bool message_done_ = false, malformed_ = false;
  std::string why_;
};

// A response brig answers a refused request with: `status`, a plain-text body of `body`
// and a newline, and Connection: close.
std::string Refusal(int status, std::string_view body);

}  // namespace brig::http
