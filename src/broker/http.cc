// Request and response framing on http-parser. The parser is paused at the end of each head
// and of each message, so one Feed never runs past a boundary: the caller learns where each
// request's bytes end, and a head is rewritten before any of its body goes on.
#include "broker/http.h"

#include <algorithm>
#include <cstring>

#include "broker/spec.h"

namespace brig::broker {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool Paused(const http_parser& p) { return HTTP_PARSER_ERRNO(&p) == HPE_PAUSED; }

}  // namespace

// ---- requests ---------------------------------------------------------------------------

RequestFramer::RequestFramer(const Rewrite* rewrite) : rewrite_(rewrite) {
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

void RequestFramer::ReadHead() {
  head_.method = http_method_str(static_cast<http_method>(parser_.method));
  head_.path = url_.substr(0, url_.find_first_of("?#"));
  head_.host = rewrite_->host;
  for (const auto& [name, value] : fields_) {
    if (head_.host.empty() && Lower(name) == "host") head_.host = value;
  }
}

void RequestFramer::EmitHead(std::string& out) {
  std::vector<std::string> drop;
  for (const auto& [name, value] : rewrite_->set) drop.push_back(Lower(name));
  if (!rewrite_->host.empty()) drop.push_back("host");
  out += head_.method;
  out += ' ';
  out += url_;
  out += parser_.http_minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n";
  for (const auto& [name, value] : fields_) {
    if (std::find(drop.begin(), drop.end(), Lower(name)) != drop.end()) continue;
    out += name + ": " + value + "\r\n";
  }
  if (!rewrite_->host.empty()) out += "Host: " + rewrite_->host + "\r\n";
  for (const auto& [name, value] : rewrite_->set) out += name + ": " + value + "\r\n";
  out += "\r\n";
}

RequestFramer::Step RequestFramer::Feed(std::string_view in, std::string& out) {
  Step step;
  if (refusal_ || in.empty()) return step;
  parser_.data = this;
  in_message_ = true;
  size_t n = http_parser_execute(&parser_, &settings_, in.data(), in.size());
  if (in_body_) out.append(in.data(), n);
  step.consumed = n;
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_HEADER_OVERFLOW) {
    Refuse(431, "the request head is larger than " + std::to_string(kMaxHead) + " bytes");
    return step;
  }
  if (!Paused(parser_) && HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    Refuse(400, std::string("malformed request: ") +
                    http_errno_description(HTTP_PARSER_ERRNO(&parser_)));
    return step;
  }
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
    if (!Paused(parser_) && HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
      Refuse(400, std::string("malformed request: ") +
                      http_errno_description(HTTP_PARSER_ERRNO(&parser_)));
      return step;
    }
    ReadHead();
    bool upgrade = false;
    for (const auto& [name, value] : fields_) {
      upgrade |= Lower(name) == "upgrade";
      if (!IsHeaderValue(value)) {
        Refuse(400, "malformed request: a header value holds a CR, LF or NUL");
        return step;
      }
    }
    if (parser_.method == HTTP_CONNECT || upgrade) {
      Refuse(501, parser_.method == HTTP_CONNECT ? "CONNECT is not brokered"
                                                 : "Upgrade is not brokered");
      return step;
    }
    if (parser_.http_major != 1) {
      Refuse(400, "malformed request: not HTTP/1.x");
      return step;
    }
    EmitHead(out);
    step.head = true;
    in_body_ = true;
  }
  if (message_done_) {
    message_done_ = false;
    http_parser_pause(&parser_, 0);
    in_body_ = false;
    in_message_ = false;
    step.done = true;
  }
  return step;
}

// ---- responses --------------------------------------------------------------------------

ResponseFramer::ResponseFramer() {
  http_parser_init(&parser_, HTTP_RESPONSE);
  http_parser_settings_init(&settings_);
  settings_.on_headers_complete = OnHeadersDone;
  settings_.on_message_complete = OnDone;
}

int ResponseFramer::OnHeadersDone(http_parser* p) {
  auto* f = static_cast<ResponseFramer*>(p->data);
  // 1: the message has no body, whatever its head says (RFC 9110: a HEAD's response).
  return !f->expected_.empty() && f->expected_.front() ? 1 : 0;
}

int ResponseFramer::OnDone(http_parser* p) {
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

}  // namespace brig::broker
