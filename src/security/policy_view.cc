// Seccomp policies as text for people: rationale extraction from `#` comments, explain
// rows, the OCI/Docker JSON form and a syscall-by-syscall diff. Pure; never compiles a
// filter (seccomp.cc does), only asks libseccomp's syscall table which names are x86_64.
#include "security/policy_view.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "security/seccomp.h"
#include "util/parse.h"

namespace brig::security {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> SplitLines(const std::string& text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text.data() + start, end - start);
    start = end + 1;
  }
  return lines;
}

// The comment lines directly above line `line` (0-based), '#' removed, as one line.
std::string RationaleAbove(const std::vector<std::string_view>& lines, int line) {
  int first = line;
  while (first > 0) {
    std::string_view l = Trim(lines[first - 1]);
    if (l.empty() || l[0] != '#') break;
    --first;
  }
  std::string out;
  for (int i = first; i < line; ++i) {
    out += Trim(lines[i]).substr(1);
    out += ' ';
  }
  return util::OneLine(out);
}

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// Numbers as a reader expects them: masks in hex, small values in decimal.
std::string Num(uint64_t v, bool hex) {
  if (v < 10 || (!hex && v < 4096)) return std::to_string(v);
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ErrnoName(uint32_t e) {
  const char* n = e < 4096 ? strerrorname_np(static_cast<int>(e)) : nullptr;
  return n ? n : std::to_string(e);
}

std::string DefaultActionText(const v1::SeccompPolicy& p) {
  return ActionText(p.default_action(), p.has_default_errno_ret(), p.default_errno_ret());
}

std::string RuleActionText(const v1::SeccompRule& r) {
  return ActionText(r.action(), r.has_errno_ret(), r.errno_ret());
}

bool IndexesRepeat(const v1::SeccompRule& rule) {
  std::set<uint32_t> seen;
  for (const auto& a : rule.args()) {
    if (!seen.insert(a.index()).second) return true;
  }
  return false;
}

// ---- Docker/OCI JSON ---------------------------------------------------------------

bool NamesX86_64(const Value& arches) {
  for (const auto& v : arches.list_value().values()) {
    const std::string& a = v.string_value();
    if (a == "amd64" || a == "x86_64" || a == "SCMP_ARCH_X86_64") return true;
  }
  return false;
}

bool NonEmptyList(const Value& v) {
  return v.kind_case() == Value::kListValue && v.list_value().values_size() > 0;
}

// Whether a Docker profile rule's includes/excludes let it apply to a brig sandbox (see
// the header for the reading).
Result<bool> Applies(const Struct& rule, const std::string& name, int i) {
  bool applies = true;
  for (const char* key : {"includes", "excludes"}) {
    auto it = rule.fields().find(key);
    if (it == rule.fields().end() || it->second.kind_case() == Value::kNullValue) continue;
    const bool include = key[0] == 'i';
    for (const auto& [k, v] : it->second.struct_value().fields()) {
      if (k == "caps") {
        if (include && NonEmptyList(v)) applies = false;
      } else if (k == "arches") {
        if (NonEmptyList(v) && NamesX86_64(v) != include) applies = false;
      } else if (k != "minKernel") {
        return BadInput(name, "syscalls[" + std::to_string(i) + "]." + key + "." + k,
                        "unknown condition (brig understands arches, caps and minKernel)");
      }
    }
  }
  return applies;
}

// Protobuf's JSON mapping writes 64-bit integers as strings ("value": "16"), while OCI and
// Docker want numbers, and escapes <, >, & and ' as \u003c ... for HTML, which makes
// rationales hard to read. Unquotes the values of "value" and "valueTwo" (only SeccompArg
// has such keys), unescapes those four characters, and indents by two spaces instead of
// one. Walks string tokens, so bytes inside a comment are never mistaken for syntax.
std::string OciStyle(const std::string& json) {
  static const std::map<std::string, char> kUnescape = {
      {"\\u003c", '<'}, {"\\u003e", '>'}, {"\\u0026", '&'}, {"\\u0027", '\''}};
  std::string out;
  size_t i = 0;
  bool line_start = true;
  while (i < json.size()) {
    char c = json[i];
    if (c != '"') {
      if (line_start && c == ' ') out += ' ';  // every leading space twice
      line_start = c == '\n' || (line_start && c == ' ');
      out += c;
      ++i;
      continue;
    }
    line_start = false;
    std::string token = "\"";
    size_t end = i + 1;
    while (end < json.size() && json[end] != '"') {
      if (json[end] == '\\') {
        auto u = kUnescape.find(json.substr(end, 6));
        if (u != kUnescape.end()) {
          token += u->second;
          end += 6;
        } else {
          token += json.substr(end, 2);
          end += 2;
        }
      } else {
        token += json[end++];
      }
    }
    token += '"';
    out += token;
    i = end + 1;
    if (token != "\"value\"" && token != "\"valueTwo\"") continue;
    size_t j = i;
    while (j < json.size() && (json[j] == ' ' || json[j] == ':')) ++j;
    size_t k = j + 1;
    while (k < json.size() && json[k] >= '0' && json[k] <= '9') ++k;
    if (j < json.size() && json[j] == '"' && k > j + 1 && k < json.size() && json[k] == '"') {
      out += json.substr(i, j - i) + json.substr(j + 1, k - j - 1);
      i = k + 1;
    }
  }
  return out;
}

// ---- diff ------------------------------------------------------------------------

using Cmp = std::tuple<uint32_t, int, uint64_t, uint64_t>;  // index, op, value, value_two
using Alternative = std::vector<Cmp>;                       // ANDed

// What a policy's rules do with one syscall, as libseccomp 2.5 compiles them: the first
// unconditional rule wins over every later rule and every conditional one, whatever their
// order (seccomp.cc refuses such a policy of brig's own; Docker's profiles contain them).
struct Treatment {
  std::string always;                                        // empty: no unconditional rule
  std::map<std::string, std::set<Alternative>> conditional;  // action -> ORed alternatives
};

v1::SeccompArg ArgOf(const Cmp& c) {
  v1::SeccompArg a;
  a.set_index(std::get<0>(c));
  a.set_op(static_cast<v1::SeccompOp>(std::get<1>(c)));
  a.set_value(std::get<2>(c));
  a.set_value_two(std::get<3>(c));
  return a;
}

Cmp CmpOf(const v1::SeccompArg& a) { return {a.index(), a.op(), a.value(), a.value_two()}; }

// Every x86_64 syscall a rule with a non-default action names, and what those rules say.
std::map<std::string, Treatment> Treatments(const v1::SeccompPolicy& p) {
  std::map<std::string, Treatment> out;
  const std::string def = DefaultActionText(p);
  for (const auto& rule : p.syscalls()) {
    std::string action = RuleActionText(rule);
    if (action == def) continue;  // a no-op, as the compiler treats it
    // Distinct indexes are ANDed in one alternative; a repeated index makes one
    // alternative per comparison (seccomp.cc, AddRule).
    std::vector<Alternative> alts;
    if (!rule.args().empty() && !IndexesRepeat(rule)) {
      Alternative all;
      for (const auto& a : rule.args()) all.push_back(CmpOf(a));
      std::sort(all.begin(), all.end());
      alts.push_back(all);
    } else {
      for (const auto& a : rule.args()) alts.push_back({CmpOf(a)});
    }
    for (const auto& name : rule.names()) {
      if (!ResolveSyscallX86_64(name)) continue;
      Treatment& t = out[name];
      if (alts.empty()) {
        if (t.always.empty()) t.always = action;
      } else {
        t.conditional[action].insert(alts.begin(), alts.end());
      }
    }
  }
  return out;
}

std::string AlternativeText(const Alternative& alt, bool parens) {
  std::string s;
  for (const auto& c : alt) s += (s.empty() ? "" : " && ") + ConditionText(ArgOf(c));
  return parens && alt.size() > 1 ? "(" + s + ")" : s;
}

// One line's worth of a treatment; `brief` summarises long lists of conditions.
std::string TreatmentText(const Treatment& t, const std::string& def, bool brief) {
  constexpr size_t kMaxListed = 8;
  if (!t.always.empty()) return t.always;
  if (t.conditional.empty()) return def;
  std::string s;
  for (const auto& [action, alts] : t.conditional) {
    s += action + " if ";
    if (brief && alts.size() > kMaxListed) {
      std::set<uint32_t> idx;
      for (const auto& alt : alts) {
        for (const auto& c : alt) idx.insert(std::get<0>(c));
      }
      std::string args;
      for (uint32_t i : idx) args += (args.empty() ? "arg" : ", arg") + std::to_string(i);
      s += "any of " + std::to_string(alts.size()) + " conditions on " + args;
    } else {
      std::string conds;
      for (const auto& alt : alts) {
        conds += (conds.empty() ? "" : " || ") + AlternativeText(alt, alts.size() > 1);
      }
      s += conds;
    }
    s += "; ";
  }
  return s + "else " + def;
}

std::string FlagsText(const v1::SeccompPolicy& p) {
  std::set<std::string> flags(p.flags().begin(), p.flags().end());
  std::string s;
  for (const auto& f : flags) s += (s.empty() ? "" : " ") + f;
  return s.empty() ? "none" : s;
}

std::string DiffLine(const std::string& what, const std::string& a, const std::string& b) {
  return "- " + what + ": " + a + " (A)  vs  " + b + " (B)";
}

// The 0-based line and column of each rule's `syscalls` (empty if the text does not
// parse). A second parse, with positions: proto::ParseTextProto gives none.
std::vector<std::pair<int, int>> RulePositions(const std::string& text) {
  google::protobuf::TextFormat::Parser parser;
  google::protobuf::TextFormat::ParseInfoTree tree;
  SilentErrors silent;
  parser.RecordErrorsTo(&silent);
  parser.WriteLocationsTo(&tree);
  v1::SeccompPolicy policy;
  std::vector<std::pair<int, int>> out;
  if (!parser.ParseFromString(text, &policy)) return out;
  const auto* field = v1::SeccompPolicy::descriptor()->FindFieldByName("syscalls");
  for (int i = 0; i < policy.syscalls_size(); ++i) {
    auto loc = tree.GetLocation(field, i);
    out.emplace_back(loc.line, loc.column);
  }
  return out;
}

}  // namespace

Result<v1::SeccompPolicy> ParsePolicyWithRationale(const std::string& text,
                                                   const std::string& name) {
  v1::SeccompPolicy policy = BRIG_TRY(ParseSeccompPolicy(text, name));
  std::vector<std::pair<int, int>> where = RulePositions(text);
  std::vector<std::string_view> lines = SplitLines(text);
  for (int i = 0; i < policy.syscalls_size() && i < static_cast<int>(where.size()); ++i) {
    int line = where[i].first;
    v1::SeccompRule* rule = policy.mutable_syscalls(i);
    if (line < 0 || line >= static_cast<int>(lines.size()) || !rule->comment().empty()) continue;
    rule->set_comment(RationaleAbove(lines, line));
  }
  return policy;
}

std::string RuleLocation(const std::string& text, const std::string& name,
                         const std::string& syscall) {
  if (syscall.empty()) return "";
  auto policy = ParseSeccompPolicy(text, name);
  if (!policy) return "";
  std::vector<std::pair<int, int>> where = RulePositions(text);
  for (int i = 0; i < policy->syscalls_size() && i < static_cast<int>(where.size()); ++i) {
    for (const auto& n : policy->syscalls(i).names()) {
      if (n != syscall || where[i].first < 0) continue;
      return name + ":" + std::to_string(where[i].first + 1) + ":" +
             std::to_string(where[i].second + 1);
    }
  }
  return "";
}

Result<v1::SeccompPolicy> ParseOciSeccompJson(const std::string& json, const std::string& name) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  v1::SeccompPolicy raw;
  if (auto st = google::protobuf::util::JsonStringToMessage(json, &raw, opts); !st.ok()) {
    return BadInput(name, "", "not OCI seccomp JSON: " + st.ToString());
  }
  // The typed parse drops what the schema lacks; includes/excludes and "name" are read
  // from a generic parse of the same text, rule by rule.
  Struct doc;
  if (auto st = google::protobuf::util::JsonStringToMessage(json, &doc); !st.ok()) {
    return BadInput(name, "", "not OCI seccomp JSON: " + st.ToString());
  }
  const Value* rules = nullptr;
  if (auto it = doc.fields().find("syscalls"); it != doc.fields().end()) rules = &it->second;
  int n = rules && rules->kind_case() == Value::kListValue ? rules->list_value().values_size() : 0;
  if (n != raw.syscalls_size()) {
    return Fail(name, "syscalls", "the two JSON parses disagree", ErrorKind::kInternal);
  }
  v1::SeccompPolicy out = raw;
  out.clear_syscalls();
  for (int i = 0; i < n; ++i) {
    const Struct& r = rules->list_value().values(i).struct_value();
    if (!BRIG_TRY(Applies(r, name, i))) continue;
    v1::SeccompRule rule = raw.syscalls(i);
    std::vector<std::string> names(rule.names().begin(), rule.names().end());
    if (auto it = r.fields().find("name"); names.empty() && it != r.fields().end()) {
      names.push_back(it->second.string_value());
    }
    rule.clear_names();
    for (const auto& s : names) {
      if (ResolveSyscallX86_64(s)) rule.add_names(s);
    }
    if (!rule.names().empty()) *out.add_syscalls() = std::move(rule);
  }
  return out;
}

std::string ActionText(v1::SeccompAction action, bool has_errno, uint32_t errno_ret) {
  uint32_t e = has_errno ? errno_ret : EPERM;  // EPERM when absent, as the compiler does
  switch (action) {
    case v1::SCMP_ACT_KILL:
    case v1::SCMP_ACT_KILL_THREAD:
      return "KILL_THREAD";
    case v1::SCMP_ACT_KILL_PROCESS:
      return "KILL_PROCESS";
    case v1::SCMP_ACT_TRAP:
      return "TRAP";
    case v1::SCMP_ACT_ERRNO:
      return "ERRNO(" + ErrnoName(e) + ")";
    case v1::SCMP_ACT_TRACE:
      return "TRACE(" + std::to_string(e) + ")";
    case v1::SCMP_ACT_ALLOW:
      return "ALLOW";
    case v1::SCMP_ACT_LOG:
      return "LOG";
    case v1::SCMP_ACT_NOTIFY:
      return "NOTIFY";
    default:
      return "UNSPECIFIED";
  }
}

std::string ConditionText(const v1::SeccompArg& arg) {
  std::string lhs = "arg" + std::to_string(arg.index());
  const char* op = "?";
  switch (arg.op()) {
    case v1::SCMP_CMP_NE:
      op = "!=";
      break;
    case v1::SCMP_CMP_LT:
      op = "<";
      break;
    case v1::SCMP_CMP_LE:
      op = "<=";
      break;
    case v1::SCMP_CMP_EQ:
      op = "==";
      break;
    case v1::SCMP_CMP_GE:
      op = ">=";
      break;
    case v1::SCMP_CMP_GT:
      op = ">";
      break;
    case v1::SCMP_CMP_MASKED_EQ:
      return lhs + " & " + Num(arg.value(), true) + " == " + Num(arg.value_two(), true);
    default:
      break;
  }
  return lhs + " " + op + " " + Num(arg.value(), false);
}

std::string ConditionsText(const v1::SeccompRule& rule) {
  const char* join = IndexesRepeat(rule) ? " || " : " && ";
  std::string s;
  for (const auto& a : rule.args()) s += (s.empty() ? "" : join) + ConditionText(a);
  return s;
}

std::vector<ExplainRow> ExplainRows(const v1::SeccompPolicy& policy) {
  std::vector<ExplainRow> rows;
  for (const auto& rule : policy.syscalls()) {
    std::string action = RuleActionText(rule), conditions = ConditionsText(rule);
    for (const auto& name : rule.names()) {
      rows.push_back({name, action, conditions, util::OneLine(rule.comment())});
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ExplainRow& a, const ExplainRow& b) { return a.syscall < b.syscall; });
  return rows;
}

namespace {

// `rows` under a header, aligned.
std::string FormatRows(std::vector<ExplainRow> rows) {
  // Conditions longer than this are not padded: one ioctl rule would push every rationale
  // far to the right.
  constexpr size_t kMaxPaddedConditions = 40;
  rows.insert(rows.begin(), {"SYSCALL", "ACTION", "CONDITIONS", "RATIONALE"});
  size_t w_name = 0, w_action = 0, w_cond = 0;
  for (auto& r : rows) {
    if (r.conditions.empty()) r.conditions = "-";
    w_name = std::max(w_name, r.syscall.size());
    w_action = std::max(w_action, r.action.size());
    if (r.conditions.size() <= kMaxPaddedConditions) w_cond = std::max(w_cond, r.conditions.size());
  }
  auto pad = [](const std::string& s, size_t w) {
    return s.size() < w ? s + std::string(w - s.size(), ' ') : s;
  };
  std::string out;
  for (const auto& r : rows) {
    std::string line = pad(r.syscall, w_name) + "  " + pad(r.action, w_action) + "  " +
                       pad(r.conditions, w_cond) + "  " + r.rationale;
    out += std::string(Trim(line)) + "\n";
  }
  return out;
}

}  // namespace

std::string FormatExplain(const v1::SeccompPolicy& policy) {
  return FormatRows(ExplainRows(policy)) + "(default) " + DefaultActionText(policy) +
         " for every syscall not listed\n";
}

Result<std::string> FormatExplainOne(const v1::SeccompPolicy& policy, const std::string& syscall) {
  if (!ResolveSyscallX86_64(syscall)) {
    return BadInput("syscall", syscall, "not a system call name libseccomp knows on x86_64");
  }
  std::vector<ExplainRow> rows;
  for (ExplainRow& r : ExplainRows(policy)) {
    if (r.syscall == syscall) rows.push_back(std::move(r));
  }
  if (rows.empty()) {
    return "(default) " + DefaultActionText(policy) + " for " + syscall +
           ": no rule of the policy names it\n";
  }
  // Rules with conditions decide only where their arguments match; the default the rest.
  bool conditional = std::all_of(rows.begin(), rows.end(),
                                 [](const ExplainRow& r) { return !r.conditions.empty(); });
  std::string out = FormatRows(std::move(rows));
  if (conditional) {
    out += "(default) " + DefaultActionText(policy) + " for " + syscall +
           " where no condition above matches\n";
  }
  return out;
}

Result<std::string> ExportOciJson(const v1::SeccompPolicy& policy) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;  // "index": 0 and "valueTwo": 0 are spelled out
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(policy, &json, opts).ok()) {
    return Fail("export", "oci-json", "protobuf JSON encoding failed", ErrorKind::kInternal);
  }
  json = OciStyle(json);
  if (json.empty() || json.back() != '\n') json += '\n';
  return json;
}

std::vector<std::string> DiffPolicies(const v1::SeccompPolicy& a, const v1::SeccompPolicy& b) {
  const std::string def_a = DefaultActionText(a), def_b = DefaultActionText(b);
  std::map<std::string, Treatment> ta = Treatments(a), tb = Treatments(b);
  std::set<std::string> names;
  for (const auto& [n, t] : ta) names.insert(n);
  for (const auto& [n, t] : tb) names.insert(n);
  std::vector<std::string> lines;
  static const Treatment kNone;
  for (const auto& n : names) {
    const Treatment& x = ta.count(n) ? ta.at(n) : kNone;
    const Treatment& y = tb.count(n) ? tb.at(n) : kNone;
    std::string full_a = TreatmentText(x, def_a, false), full_b = TreatmentText(y, def_b, false);
    if (full_a == full_b) continue;
    std::string brief_a = TreatmentText(x, def_a, true), brief_b = TreatmentText(y, def_b, true);
    if (brief_a == brief_b) {
      brief_a = full_a;
      brief_b = full_b;
    }
    lines.push_back(DiffLine(n, brief_a, brief_b));
  }
  if (def_a != def_b) lines.push_back(DiffLine("(default)", def_a, def_b));
  if (FlagsText(a) != FlagsText(b))
    lines.push_back(DiffLine("(flags)", FlagsText(a), FlagsText(b)));
  return lines;
}

}  // namespace brig::security
