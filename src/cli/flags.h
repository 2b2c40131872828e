// The table-driven option parsing shared by brig's verbs. Each verb keeps its own table
// of flags (any struct with `name`, `metavar` — nullptr when it takes no value — and
// `apply(Req&, value)`); this holds the loop they all need and the usage layout.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "brig/result.h"

namespace brig::cli {

// Applies the option at args[i] (which starts with '-'): "--name=value", "--name value"
// (i then advances past the value) or a flag without a value; "-h" means "--help", and a
// table whose flags have an `alias` ("-t") takes that too.
// Returns the table entry applied. Errors are bad input naming the option.
// An unknown option's `hint` (empty: none), such as the verb's way for another tool's flag,
// follows "unknown option" in the error.
template <typename FlagT, typename Req>
Result<const FlagT*> ApplyFlag(const std::vector<FlagT>& flags,
                               const std::vector<std::string>& args, size_t& i, Req& req,
                               const std::string& verb,
                               std::string (*hint)(const std::string&) = nullptr) {
  const std::string& a = args[i];
  std::string name = a == "-h" ? "--help" : a, value;
  bool inline_value = false;
  if (size_t eq = a.find('='); a.compare(0, 2, "--") == 0 && eq != std::string::npos) {
    name = a.substr(0, eq);
    value = a.substr(eq + 1);
    inline_value = true;
  }
  const FlagT* flag = nullptr;
  for (const auto& f : flags) {
    if (name == f.name) flag = &f;
    if constexpr (requires { f.alias; }) {
      if (f.alias && name == f.alias) flag = &f;
    }
  }
  if (!flag) {
    std::string why = hint ? hint(name) : "";
    return BadInput(
        verb, a, "unknown option" + (why.empty() ? "" : "; " + why) + " (see " + verb + " --help)");
  }
  if (flag->metavar && !inline_value) {
    if (i + 1 >= args.size()) return BadInput(flag->name, "", "needs a value");
    value = args[++i];
  } else if (!flag->metavar && inline_value) {
    return BadInput(flag->name, value, "takes no value");
  }
  BRIG_TRY(flag->apply(req, value));
  return flag;
}

// One usage line: `left` padded to column 28 (or on a line of its own), then `help`.
inline void UsageRow(std::ostringstream& out, const std::string& left, const char* help) {
  out << left;
  if (left.size() < 28) {
    out << std::string(28 - left.size(), ' ');
  } else {
    out << "\n" << std::string(28, ' ');
  }
  out << help << "\n";
}

}  // namespace brig::cli
