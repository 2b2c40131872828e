// `brig policy`: list, show, check, explain, export and diff the profiles and seccomp
// policies of a policy directory, and show the kernel paths every sandbox masks. Flags,
// file lookup and printing only: the views are pure functions in security/policy_view.h
// and fs/kernel_paths.h, compilation is security/seccomp.h.
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <sstream>

#include "cli/cli.h"
#include "cli/flags.h"
#include "proto/brig.pb.h"
#include "proto/textproto.h"
#include "config/profile.h"
#include "config/profile_diff.h"
#include "fs/kernel_paths.h"
#include "security/policy_view.h"
#include "security/seccomp.h"
#include "util/files.h"
#include "util/parse.h"

namespace brig::cli {
namespace {

struct PolicyRequest {
  std::string command;
  std::vector<std::string> operands;
  std::string policy_dir, kind, format = "oci-json";
  std::vector<std::string> flags_seen;
  bool help = false;
};

using Apply = std::function<Status(PolicyRequest&, const std::string&)>;

struct Flag {
  const char* name;
  const char* metavar;  // nullptr: takes no value
  const char* only;     // the one command it applies to, nullptr: every command
  const char* help;
  Apply apply;
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--policy-dir", "DIR", nullptr, "use DIR, not the installed policies",
       [](PolicyRequest& r, const std::string& v) -> Status {
         if (v.empty()) return BadInput("--policy-dir", v, "empty path");
         r.policy_dir = v;
         return {};
       }},
      {"--kind", "profile|seccomp", "check", "(check) how to read every FILE",
       [](PolicyRequest& r, const std::string& v) -> Status {
         if (v != "profile" && v != "seccomp") {
           return BadInput("--kind", v, "expected profile or seccomp");
         }
         r.kind = v;
         return {};
       }},
      {"--format", "oci-json|bpf|pfc", "export", "(export) JSON (default), BPF, PFC text",
       [](PolicyRequest& r, const std::string& v) -> Status {
         if (v != "oci-json" && v != "bpf" && v != "pfc") {
           return BadInput("--format", v, "expected oci-json, bpf or pfc");
         }
         r.format = v;
         return {};
       }},
      {"--help", nullptr, nullptr, "show this help",
       [](PolicyRequest& r, const std::string&) -> Status {
         r.help = true;
         return {};
       }},
  };
  return flags;
}

struct Command {
  const char* name;
  const char* operands;
  size_t min, max;  // operand count
  const char* help;
  int (*run)(const PolicyRequest&);
};

const std::vector<Command>& Commands();

void Out(const std::string& s) { fwrite(s.data(), 1, s.size(), stdout); }

int Refuse(const Error& e) {
  fflush(stdout);
  fprintf(stderr, "brig: %s\n", e.Render().c_str());
  return kExitRefused;
}

std::string PolicyDir(const PolicyRequest& r) { return config::ResolvePolicyDir(r.policy_dir); }

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t end = path.find_last_not_of('/');
  if (end == std::string::npos) return path;
  size_t slash = path.find_last_of('/', end);
  return path.substr(slash == std::string::npos ? 0 : slash + 1,
                     end - (slash == std::string::npos ? 0 : slash + 1) + 1);
}

// A file's kind from its directory (policies/profiles/x.textproto is a profile), else from
// what its text parses as; "" if neither tells.
std::string KindOf(const std::string& path, const std::string& text) {
  std::string parent = BaseName(DirName(path));
  if (parent == "profiles") return "profile";
  if (parent == "seccomp") return "seccomp";
  v1::Profile profile;
  if (proto::ParseTextProto(text, path, &profile)) return "profile";
  v1::SeccompPolicy policy;
  if (proto::ParseTextProto(text, path, &policy)) return "seccomp";
  return "";
}

bool LooksLikePath(const std::string& s) {
  auto ends = [&](const std::string& ext) {
    return s.size() > ext.size() && s.compare(s.size() - ext.size(), ext.size(), ext) == 0;
  };
  return s.find('/') != std::string::npos || ends(".json") || ends(".textproto");
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// ---- loading -----------------------------------------------------------------------

// Compiles as brig run does; an error names the file:line:column of the rule it is about.
Status CompileText(const std::string& path, const std::string& text, const v1::SeccompPolicy& p) {
  auto prog = security::CompileSeccomp(p);
  if (prog) return {};
  std::string where = security::RuleLocation(text, path, prog.error().subject);
  return std::move(prog).error().Wrap(where.empty() ? path : where);
}

// A brig seccomp policy (text format) with its rationale; it must compile, as in brig run.
Result<v1::SeccompPolicy> LoadTextPolicy(const std::string& path, const std::string& text) {
  v1::SeccompPolicy p = BRIG_TRY(security::ParsePolicyWithRationale(text, path));
  BRIG_TRY(CompileText(path, text, p));
  return p;
}

// The seccomp policy file of the profile at `path`, found as brig run --profile finds it.
Result<std::string> SeccompFileOf(const PolicyRequest& r, const std::string& path,
                                  const v1::Profile& profile) {
  const std::string& name = profile.security().seccomp_policy();
  std::string sp = BRIG_TRY_CTX(config::SeccompPolicyPath(PolicyDir(r), path, name), path);
  BRIG_TRY_CTX(config::CheckPolicyFile(sp, "seccomp", name), path);
  return sp;
}

Result<v1::SeccompPolicy> PolicyOfProfile(const PolicyRequest& r, const std::string& path) {
  std::string text = BRIG_TRY(util::ReadUserFile(path));
  v1::Profile profile = BRIG_TRY(config::ParseProfile(text, path));
  if (profile.isolation() == v1::ISOLATION_NONE) {
    return BadInput("profile", path, "ISOLATION_NONE: no sandbox, so no seccomp policy");
  }
  std::string sp = BRIG_TRY(SeccompFileOf(r, path, profile));
  return LoadTextPolicy(sp, BRIG_TRY(util::ReadUserFile(sp)));
}

// The profile file an operand names: a path whose kind is profile, or a NAME in
// DIR/profiles that is not also a seccomp policy's name (LoadPolicy's order).
std::optional<std::string> ProfileFile(const PolicyRequest& r, const std::string& operand) {
  if (LooksLikePath(operand)) {
    auto text = util::ReadUserFile(operand);
    if (!text || KindOf(operand, *text) != "profile") return std::nullopt;
    // A path, not a NAME, to config::LoadProfile.
    return operand.find('/') == std::string::npos ? "./" + operand : operand;
  }
  if (config::PolicyFilePath(PolicyDir(r), "seccomp", operand)) return std::nullopt;
  auto path = config::PolicyFilePath(PolicyDir(r), "profiles", operand);
  return path ? std::optional<std::string>(*path) : std::nullopt;
}

// POLICY: a seccomp policy name, a profile name (its seccomp policy), or a path to a
// text-format policy, a profile or OCI/Docker JSON.
Result<v1::SeccompPolicy> LoadPolicy(const PolicyRequest& r, const std::string& operand) {
  if (auto profile = ProfileFile(r, operand)) return PolicyOfProfile(r, *profile);
  if (LooksLikePath(operand)) {
    std::string text = BRIG_TRY(util::ReadUserFile(operand));
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
      return security::ParseOciSeccompJson(text, operand);
    }
    return LoadTextPolicy(operand, text);
  }
  std::string dir = PolicyDir(r);
  if (auto sp = config::PolicyFilePath(dir, "seccomp", operand)) {
    return LoadTextPolicy(*sp, BRIG_TRY(util::ReadUserFile(*sp)));
  }
  return BadInput("policy", operand,
                  "no seccomp policy or profile of that name in " + dir +
                      " (seccomp: " + Join(config::ListPolicyNames(dir, "seccomp")) +
                      "; profiles: " + Join(config::ListPolicyNames(dir, "profiles")) + ")");
}

// ---- commands ----------------------------------------------------------------------

int List(const PolicyRequest& r) {
  std::string dir = PolicyDir(r);
  std::vector<std::string> profiles = config::ListPolicyNames(dir, "profiles");
  size_t width = 0;
  for (const auto& n : profiles) width = std::max(width, n.size());
  for (const auto& n : profiles) {
    std::string desc = "(invalid: see brig policy check)";
    if (auto path = config::PolicyFilePath(dir, "profiles", n)) {
      if (auto text = util::ReadUserFile(*path)) {
        if (auto p = config::ParseProfile(*text, *path)) desc = util::OneLine(p->description());
      }
    }
    std::string line = "profile " + n;
    if (!desc.empty()) line += std::string(width - n.size() + 2, ' ') + desc;
    Out(line + "\n");
  }
  for (const auto& n : config::ListPolicyNames(dir, "seccomp")) Out("seccomp " + n + "\n");
  return 0;
}

int Show(const PolicyRequest& r) {
  auto profile = config::LoadProfile(PolicyDir(r), r.operands[0]);
  if (!profile) return Refuse(profile.error());
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(*profile, &text)) {
    return Refuse(Fail("show", r.operands[0], "text format encoding failed", ErrorKind::kInternal));
  }
  Out(text);
  return 0;
}

// Every error of a text-format seccomp policy: each name of each rule compiled alone, so
// that one bad rule does not hide the next, then the whole policy, for what only rules
// together can break (an unconditional rule against another action, the kernel's limit).
std::vector<Error> SeccompErrors(const std::string& file, const std::string& text) {
  auto policy = security::ParseSeccompPolicy(text, file);
  if (!policy) return {policy.error()};
  std::vector<Error> errors;
  auto add = [&](const Status& s) {
    if (s) return;
    for (const Error& e : errors) {
      if (e.Render() == s.error().Render()) return;
    }
    errors.push_back(s.error());
  };
  for (const v1::SeccompRule& rule : policy->syscalls()) {
    for (int i = 0; i < std::max(rule.names_size(), 1); ++i) {
      v1::SeccompPolicy one = *policy;
      one.clear_syscalls();
      v1::SeccompRule* alone = one.add_syscalls();
      *alone = rule;
      alone->clear_names();
      if (i < rule.names_size()) alone->add_names(rule.names(i));
      add(CompileText(file, text, one));
    }
  }
  if (errors.empty()) add(CompileText(file, text, *policy));
  return errors;
}

// Every error of a profile, then those of the seccomp policy it names, found as brig run
// finds it.
std::vector<Error> ProfileErrors(const PolicyRequest& r, const std::string& file,
                                 const std::string& text) {
  std::vector<Error> errors;
  auto profile = config::ParseProfileAll(text, file, errors);
  if (!profile) return {profile.error()};
  if (profile->isolation() != v1::ISOLATION_SANDBOX) return errors;
  if (profile->security().seccomp_policy().empty()) return errors;
  auto sp = SeccompFileOf(r, file, *profile);
  if (!sp) {
    errors.push_back(sp.error());
    return errors;
  }
  auto policy_text = util::ReadUserFile(*sp);
  if (!policy_text) {
    errors.push_back(std::move(policy_text).error().Wrap(file));
    return errors;
  }
  for (Error& e : SeccompErrors(*sp, *policy_text)) errors.push_back(std::move(e).Wrap(file));
  return errors;
}

std::vector<Error> FileErrors(const PolicyRequest& r, const std::string& file,
                              const std::string& kind) {
  auto text = util::ReadUserFile(file);
  if (!text) return {text.error()};
  return kind == "seccomp" ? SeccompErrors(file, *text) : ProfileErrors(r, file, *text);
}

// Each file's kind: --kind, else its directory's or what it parses as; a file that cannot
// be read is left to FileErrors to report.
Result<std::vector<std::string>> Kinds(const PolicyRequest& r) {
  std::vector<std::string> kinds;
  for (const std::string& f : r.operands) {
    auto text = r.kind.empty() ? util::ReadUserFile(f) : Result<std::string>(std::string());
    kinds.push_back(r.kind.empty() && text ? KindOf(f, *text) : r.kind);
    if (text && kinds.back().empty()) {
      return BadInput("brig policy check", f,
                      "neither in a profiles/ nor in a seccomp/ directory, and it parses as "
                      "neither: pass --kind profile or --kind seccomp");
    }
  }
  return kinds;
}

int Check(const PolicyRequest& r) {
  auto kinds = Kinds(r);
  if (!kinds) return Refuse(kinds.error());
  bool bad = false;
  for (size_t i = 0; i < r.operands.size(); ++i) {
    std::vector<Error> errors = FileErrors(r, r.operands[i], (*kinds)[i]);
    if (errors.empty()) {
      Out(r.operands[i] + ": ok\n");
      continue;
    }
    bad = true;
    fflush(stdout);
    for (const Error& e : errors) fprintf(stderr, "%s\n", e.Render().c_str());
  }
  return bad ? 1 : 0;
}

int Explain(const PolicyRequest& r) {
  auto p = LoadPolicy(r, r.operands[0]);
  if (!p) return Refuse(p.error());
  if (r.operands.size() < 2) {
    Out(security::FormatExplain(*p));
    return 0;
  }
  auto one = security::FormatExplainOne(*p, r.operands[1]);
  if (!one) return Refuse(one.error());
  Out(*one);
  return 0;
}

Status WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("write", "stdout");
    p += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

int Export(const PolicyRequest& r) {
  // Checked first: nothing is compiled for a terminal that cannot show it.
  if (r.format == "bpf" && isatty(STDOUT_FILENO)) {
    return Refuse(BadInput("--format", "bpf",
                           "refusing to write a binary program to a terminal: redirect stdout"));
  }
  auto p = LoadPolicy(r, r.operands[0]);
  if (!p) return Refuse(p.error());
  if (r.format == "bpf") {
    auto prog = security::CompileSeccomp(*p);
    if (!prog) return Refuse(std::move(prog).error().Wrap(r.operands[0]));
    fflush(stdout);
    auto s = WriteAll(STDOUT_FILENO, prog->insns.data(), prog->insns.size() * sizeof(sock_filter));
    return s ? 0 : Refuse(s.error());
  }
  auto text = r.format == "pfc" ? security::ExportPfc(*p) : security::ExportOciJson(*p);
  if (!text) return Refuse(std::move(text).error().Wrap(r.operands[0]));
  Out(*text);
  return 0;
}

// Two profiles: every field they resolve differently, then, if both have a sandbox, their
// seccomp policies syscall by syscall.
int DiffProfiles(const PolicyRequest& r, const std::string& a_file, const std::string& b_file) {
  auto a = config::LoadProfile(PolicyDir(r), a_file);
  if (!a) return Refuse(a.error());
  auto b = config::LoadProfile(PolicyDir(r), b_file);
  if (!b) return Refuse(b.error());
  std::vector<std::string> lines = config::DiffProfiles(*a, *b);
  if (a->isolation() == v1::ISOLATION_SANDBOX && b->isolation() == v1::ISOLATION_SANDBOX) {
    auto pa = PolicyOfProfile(r, a_file);
    if (!pa) return Refuse(pa.error());
    auto pb = PolicyOfProfile(r, b_file);
    if (!pb) return Refuse(pb.error());
    for (std::string& l : security::DiffPolicies(*pa, *pb)) lines.push_back(std::move(l));
  }
  for (const auto& l : lines) Out(l + "\n");
  return lines.empty() ? 0 : 1;
}

int Diff(const PolicyRequest& r) {
  auto a_profile = ProfileFile(r, r.operands[0]);
  auto b_profile = ProfileFile(r, r.operands[1]);
  if (a_profile && b_profile) return DiffProfiles(r, *a_profile, *b_profile);
  auto a = LoadPolicy(r, r.operands[0]);
  if (!a) return Refuse(a.error());
  auto b = LoadPolicy(r, r.operands[1]);
  if (!b) return Refuse(b.error());
  std::vector<std::string> lines = security::DiffPolicies(*a, *b);
  for (const auto& l : lines) Out(l + "\n");
  return lines.empty() ? 0 : 1;
}

int Paths(const PolicyRequest&) {
  Out(fs::FormatKernelPaths());
  return 0;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"list", "", 0, 0, "profiles (with descriptions) and seccomp policies", List},
      {"show", "PROFILE", 1, 1, "the profile with its defaults filled in", Show},
      {"check", "FILE...", 1, SIZE_MAX,
       "validate: \"FILE: ok\", or each error as FILE:LINE:COL: error", Check},
      {"explain", "POLICY [SYSCALL]", 1, 2,
       "a row per syscall: action, conditions, why; or SYSCALL's alone, the default's "
       "where no rule decides",
       Explain},
      {"export", "POLICY", 1, 1, "the policy in the --format given", Export},
      {"diff", "A B", 2, 2, "what two profiles or two policies decide differently", Diff},
      {"paths", "", 0, 0, "kernel paths every sandbox masks or holds read-only", Paths},
  };
  return commands;
}

Result<PolicyRequest> ParsePolicyArgs(const std::vector<std::string>& args) {
  PolicyRequest req;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a.size() < 2 || a[0] != '-') {
      if (req.command.empty()) {
        req.command = a;
      } else {
        req.operands.push_back(a);
      }
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    const Flag* flag = BRIG_TRY(ApplyFlag(Flags(), args, i, req, "brig policy"));
    req.flags_seen.push_back(flag->name);
  }
  return req;
}

std::string PolicyUsage() {
  std::ostringstream out;
  out << "Usage: brig policy [OPTIONS] COMMAND [ARGS...]\n\n"
         "List, inspect, check and compare the profiles (DIR/profiles) and seccomp\n"
         "policies (DIR/seccomp) of the policy directory DIR.\n\nCommands:\n";
  auto row = [&](const std::string& left, const char* help) { UsageRow(out, left, help); };
  for (const auto& c : Commands()) {
    row(std::string("  ") + c.name + (*c.operands ? std::string(" ") + c.operands : ""), c.help);
  }
  out << "\nPOLICY is a seccomp policy name, a profile name (for its seccomp policy), or\n"
         "the path of a policy, of a profile, or of OCI/Docker seccomp JSON (read for\n"
         "x86_64 and no capabilities, see brig-policy(1)). diff compares two profiles\n"
         "(names or paths) field by field with their defaults filled in, then their\n"
         "seccomp policies; any other pair as two seccomp policies, syscall by syscall.\n"
         "A profile's seccomp policy is found as brig run finds it: a name in the policy\n"
         "directory, a relative path beside the profile. brig policy reads files only\n"
         "and needs no root.\n\n"
         "Options:\n";
  for (const auto& f : Flags()) {
    row(std::string("  ") + f.name + (f.metavar ? std::string(" ") + f.metavar : ""), f.help);
  }
  out << "\nExit status: 0 on success; 1 if check found an invalid file or diff a\n"
         "difference; 125 on bad usage or a policy that cannot be read.\n";
  return out.str();
}

}  // namespace

int PolicyMain(const std::vector<std::string>& args) {
  auto req = ParsePolicyArgs(args);
  if (!req) return Refuse(req.error());
  if (req->help) {
    Out(PolicyUsage());
    return 0;
  }
  if (req->command.empty()) {
    fputs(PolicyUsage().c_str(), stderr);
    return kExitRefused;
  }
  const Command* cmd = nullptr;
  for (const auto& c : Commands()) {
    if (req->command == c.name) cmd = &c;
  }
  if (!cmd) {
    return Refuse(
        BadInput("brig policy", req->command, "unknown command (see brig policy --help)"));
  }
  for (const auto& seen : req->flags_seen) {
    for (const auto& f : Flags()) {
      if (seen == f.name && f.only && req->command != f.only) {
        return Refuse(BadInput(f.name, "", std::string("applies only to brig policy ") + f.only));
      }
    }
  }
  size_t n = req->operands.size();
  if (n < cmd->min || n > cmd->max) {
    return Refuse(BadInput("brig policy " + req->command, "",
                           std::string("expected ") + (*cmd->operands ? cmd->operands : "nothing") +
                               ", got " + std::to_string(n) + " argument" + (n == 1 ? "" : "s")));
  }
  int rc = cmd->run(*req);
  fflush(stdout);
  return rc;
}

}  // namespace brig::cli
