// The Host header's name and port, for the proxy on port 80.
#include "egress/http.h"

#include <algorithm>

#include "egress/allowlist.h"

namespace brig::egress {

HostParse ParseHost(std::string_view s) {
  HostParse r;
  r.status = PeekStatus::kMalformed;
  std::string_view name = s;
  if (!name.empty() && name.front() != '[') name = name.substr(0, name.rfind(':'));
  r.address = IsAddressLiteral(name);
  if (s.empty()) {
    r.why = "Host: empty host";
  } else if (s[0] == '[') {
    r.why = "Host: an IP literal, not a host name";
  } else if (s.find('@') != std::string_view::npos) {
    r.why = "Host: userinfo before the host";
  }
  if (!r.why.empty()) return r;
  size_t colon = s.find(':');
  if (colon != std::string_view::npos) {
    std::string_view digits = s.substr(colon + 1);
    uint32_t v = 0;
    bool number = !digits.empty() && digits.size() <= 5 &&
                  std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    for (char c : digits) v = number ? v * 10 + static_cast<uint32_t>(c - '0') : 0;
    if (!number || v == 0 || v > 65535) {
      r.why = "Host: port is not a number from 1 to 65535";
      return r;
    }
    r.value.port = static_cast<uint16_t>(v);
    s = s.substr(0, colon);
  }
  Result<std::string> checked = CheckName(s);
  if (!checked) {
    r.why = "Host: " + checked.error().detail;
    return r;
  }
  r.value.name = std::move(checked).value();
  r.status = PeekStatus::kOk;
  r.address = false;
  return r;
}

}  // namespace brig::egress
