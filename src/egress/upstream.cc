#include "egress/upstream.h"

#include "util/parse.h"

namespace brig::egress {

std::vector<Address> ParseResolvConf(std::string_view text) {
  std::vector<Address> out;
  for (std::string_view line : util::Split(text, '\n')) {
    if (size_t c = line.find_first_of("#;"); c != std::string_view::npos) line = line.substr(0, c);
    auto blank = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; };
    size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    constexpr std::string_view kKey = "nameserver";
    if (line.substr(i, kKey.size()) != kKey) continue;
    i += kKey.size();
    if (i >= line.size() || !blank(line[i])) continue;
    while (i < line.size() && blank(line[i])) ++i;
    size_t end = i;
    while (end < line.size() && !blank(line[end])) ++end;
    // An IPv6 nameserver may carry a zone ("fe80::1%eth0"), which only the host can use;
    // such an entry is not one brig can reach from its own sockets reliably, so it is
    // passed over like any address that does not parse.
    if (auto a = ParseAddress(line.substr(i, end - i))) out.push_back(*a);
  }
  return out;
}

}  // namespace brig::egress
