// HTTP/1.1 framing for http brokers, on Debian's http-parser (libhttp-parser): where each
// request and response begins and ends on a keep-alive connection, so that brig rewrites
// request heads and nothing else. Bodies (chunked or not) and responses pass as the bytes
// that came, as soon as they came: a stream of server-sent events is never held back.
// Pure: no sockets; fed by broker/service.cc, unit-tested and fuzzed.
#pragma once

#include <http_parser.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brig::broker {

// The largest request head brig reads (its rewriting needs it whole).
inline constexpr size_t kMaxHead = 64 * 1024;

// What brig does to every request head.
struct Rewrite {
  // Set on every request; any copy the client sent (any case) is dropped.
  std::vector<std::pair<std::string, std::string>> set;
  // Not empty: the Host sent upstream, in place of the client's.
  std::string host;
};

// One request as the audit names it.
struct RequestHead {
  std::string method;
  std::string host;  // as sent upstream
  std::string path;  // the request target up to any '?' or '#'
};

// The client's side of a connection: requests in, what goes upstream out.
class RequestFramer {
 public:
  explicit RequestFramer(const Rewrite* rewrite);
  RequestFramer(const RequestFramer&) = delete;
  RequestFramer& operator=(const RequestFramer&) = delete;

  struct Step {
    size_t consumed = 0;  // bytes of the input used
    bool head = false;    // a request head was parsed (and its rewrite appended)
    bool done = false;    // a request ended
  };
  // Parses from `in` up to the end of the next head or request, whichever comes first;
  // appends what goes upstream to `out`. Call again with the rest (a step may end a head
  // or a request having consumed nothing).
  Step Feed(std::string_view in, std::string& out);
  // The latest request's head (after a Step with `head`).
  const RequestHead& head() const { return head_; }
  // Nonzero once the stream cannot go on: the status brig answers with (400 malformed,
  // 431 head too large, 501 Upgrade or CONNECT), and why, in words for the audit.
  int refusal() const { return refusal_; }
  const std::string& why() const { return why_; }
  // Between requests: nothing of a next one read yet.
  bool idle() const { return !in_message_; }

 private:
  static int OnBegin(http_parser* p);
  static int OnUrl(http_parser* p, const char* at, size_t n);
  static int OnField(http_parser* p, const char* at, size_t n);
  static int OnValue(http_parser* p, const char* at, size_t n);
  static int OnHeadersDone(http_parser* p);
  static int OnDone(http_parser* p);
  void Refuse(int status, std::string why);
  void ReadHead();
  void EmitHead(std::string& out);

  const Rewrite* rewrite_;
  http_parser parser_;
  http_parser_settings settings_;
  bool in_message_ = false, in_body_ = false, headers_done_ = false, message_done_ = false;
  bool last_was_value_ = false;
  std::string url_;
  std::vector<std::pair<std::string, std::string>> fields_;
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
  const std::string& why() const { return why_; }

 private:
  static int OnHeadersDone(http_parser* p);
  static int OnDone(http_parser* p);
  Step Finish(size_t consumed);

  http_parser parser_;
  http_parser_settings settings_;
  std::deque<bool> expected_;
  bool message_done_ = false, malformed_ = false;
  std::string why_;
};

}  // namespace brig::broker
