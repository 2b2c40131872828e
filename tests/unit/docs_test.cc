// Docs move with the code (issue 16): every option a verb's --help shows is described in
// the OPTIONS of its man page and the reverse (for the OCI verbs, under the verb's own
// subsection of brig-oci(1)'s OPTIONS), the commands `brig --help` lists are the verbs of
// cli's table (cli/verbs.cc) and are in brig(1), and the shipped profiles brig-profile(5)
// describes are the ones in policies/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/global.h"
#include "testlib/testlib.h"

namespace brig::cli {
namespace {

namespace fs = std::filesystem;

using Names = std::set<std::string>;

std::string Captured(const std::function<int()>& verb) {
  ::testing::internal::CaptureStdout();
  int code = verb();
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  return out;
}

struct Documented {
  std::string name;  // as on the command line; "" is brig itself
  std::function<std::string()> help;
  std::string man;   // under man/
  bool oci = false;  // an OCI verb: its options are under its name in brig-oci(1)'s OPTIONS
};

constexpr char kOciPage[] = "brig-oci.1";
constexpr char kOciCommands[] = "OCI runtime commands";  // brig(1)'s COMMANDS subsection

// brig itself and every row of the table of verbs: brig's own verb NAME has its page
// brig-NAME(1), the OCI verbs share brig-oci(1).
std::vector<Documented> Documents() {
  std::vector<Documented> docs = {{"", [] { return MainUsage(); }, "brig.1"}};
  for (const Verb& verb : Verbs()) {
    auto help = [&verb] { return Captured([&verb] { return verb.Run({}, {"--help"}); }); };
    bool oci = verb.act != nullptr;
    docs.push_back(
        {verb.name, help, oci ? kOciPage : "brig-" + std::string(verb.name) + ".1", oci});
  }
  return docs;
}

// The OCI verbs' names, as `brig --help` lists them ("run" and "list" are also brig's own).
Names OciVerbs() {
  Names names;
  for (const Verb& verb : Verbs()) {
    if (verb.act) names.insert(verb.name);
  }
  return names;
}

// The options of a usage text: the first word of each row that starts with "  --".
Names HelpOptions(const std::string& usage) {
  Names out;
  std::istringstream in(usage);
  const std::regex row(R"re(^  (--[a-z0-9-]+))re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) out.insert(m[1]);
  }
  return out;
}

std::vector<std::string> ManLines(const std::string& page) {
  std::ifstream in(fs::path(testing::SourceRoot()) / "man" / page);
  EXPECT_TRUE(in) << "man/" << page << " cannot be read";
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One line of a page, with the .SH section and .SS subsection it is in ("" before the
// first .SS of its section) and the line before it.
struct ManLine {
  std::string section, subsection, prev, text;
};

// The lines of one .SH section of a page (its .SS subsections included).
std::vector<ManLine> SectionLines(const std::string& page, const std::string& section) {
  std::vector<ManLine> out;
  std::string in_section, in_subsection, prev;
  for (const auto& line : ManLines(page)) {
    if (line.rfind(".SH ", 0) == 0) {
      in_section = line.substr(4);
      in_subsection.clear();
    }
    if (line.rfind(".SS ", 0) == 0) in_subsection = line.substr(4);
    if (in_section == section) out.push_back({in_section, in_subsection, prev, line});
    prev = line;
  }
  return out;
}

// Which lines of a section count: all, or those of the subsections it accepts.
using SubsectionFilter = std::function<bool(const std::string& subsection)>;

// What `pattern` captures in the lines of a section (only in the tags of its .TP entries
// if `tags`; only in the subsections `in` accepts, if given), with roff's "\-" read as "-".
Names ManNames(const std::string& page, const std::string& section, const std::regex& pattern,
               bool tags = true, const SubsectionFilter& in = nullptr) {
  Names out;
  for (const auto& l : SectionLines(page, section)) {
    std::smatch m;
    if ((!in || in(l.subsection)) && (!tags || l.prev == ".TP") &&
        std::regex_search(l.text, m, pattern)) {
      out.insert(std::regex_replace(m[1].str(), std::regex(R"(\\-)"), "-"));
    }
  }
  return out;
}

const std::regex& OptionTag() {
  static const std::regex tag(R"re(^\.B[IR]? ((\\-)+[a-z0-9\\-]+))re");
  return tag;
}

// The verbs a subsection of brig-oci(1)'s OPTIONS is headed by: "create", or
// "start, state, pause, resume and features".
Names HeadingVerbs(const std::string& heading) {
  Names out;
  std::string words = std::regex_replace(heading, std::regex(" and "), ", ");
  for (size_t at = 0; at <= words.size();) {
    size_t comma = words.find(", ", at);
    if (comma == std::string::npos) comma = words.size();
    out.insert(words.substr(at, comma - at));
    at = comma + 2;
  }
  return out;
}

// The options a verb's man page describes in its OPTIONS: the whole section, or for an OCI
// verb the subsections of brig-oci(1)'s that its heading names.
Names ManOptions(const Documented& verb) {
  if (!verb.oci) return ManNames(verb.man, "OPTIONS", OptionTag());
  return ManNames(verb.man, "OPTIONS", OptionTag(), true, [&](const std::string& subsection) {
    return HeadingVerbs(subsection).count(verb.name) > 0;
  });
}

std::string Show(const Names& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "(none)" : s;
}

TEST(Docs, EveryOptionInHelpIsInTheManPageAndTheReverse) {
  for (const auto& verb : Documents()) {
    SCOPED_TRACE("brig " + verb.name + " --help against man/" + verb.man +
                 (verb.oci ? " (OPTIONS, subsection " + verb.name + ")" : ""));
    Names help = HelpOptions(verb.help()), man = ManOptions(verb);
    ASSERT_FALSE(help.empty());
    Names only_help, only_man;
    for (const auto& o : help) {
      if (!man.count(o)) only_help.insert(o);
    }
    for (const auto& o : man) {
      if (!help.count(o)) only_man.insert(o);
    }
    EXPECT_TRUE(only_help.empty()) << "in --help, not in the man page's OPTIONS: "
                                   << Show(only_help);
    EXPECT_TRUE(only_man.empty()) << "in the man page's OPTIONS, not in --help: "
                                  << Show(only_man);
  }
}

// Every option brig-oci(1)'s OPTIONS describes is under a subsection headed by OCI verbs,
// so that none escapes the check above.
TEST(Docs, EveryOptionOfBrigOci1IsUnderItsVerbs) {
  Names oci = OciVerbs(), headings, headed;
  for (const auto& l : SectionLines(kOciPage, "OPTIONS")) {
    if (!l.subsection.empty()) {
      headings.insert(l.subsection);
    } else {
      EXPECT_FALSE(l.prev == ".TP" && std::regex_search(l.text, OptionTag()))
          << "an option before the first verb's subsection: " << l.text;
    }
  }
  for (const auto& heading : headings) {
    for (const auto& verb : HeadingVerbs(heading)) {
      EXPECT_TRUE(oci.count(verb)) << "'" << verb << "' in '.SS " << heading
                                   << "' is not an OCI verb";
      headed.insert(verb);
    }
  }
  EXPECT_EQ(Show(oci), Show(headed)) << "an OCI verb without a subsection";
}

// brig-oci(1) describes the global options the OCI verbs take, as `brig --help` lists them.
TEST(Docs, TheGlobalOptionsAreInBrigOci1) {
  EXPECT_EQ(Show(HelpOptions(GlobalUsage())),
            Show(ManNames(kOciPage, "GLOBAL OPTIONS", OptionTag())));
}

TEST(Docs, EveryCommandHasItsPageAndIsInBrig1) {
  // `brig --help`'s commands: the sandbox's, a row each, then the OCI verbs, several to a
  // row ("  create, start, state, kill, delete", "  run --bundle DIR").
  Names listed, listed_oci;
  std::istringstream in(MainUsage());
  enum { kNone, kSandbox, kOci } block = kNone;
  for (std::string line; std::getline(in, line);) {
    if (line == "Commands:") block = kSandbox;
    if (line.rfind(kOciCommands, 0) == 0) block = kOci;
    if (line.empty()) block = kNone;
    std::smatch m;
    if (block == kSandbox && std::regex_search(line, m, std::regex(R"re(^  ([a-z]+) )re"))) {
      listed.insert(m[1]);
    }
    if (block == kOci && std::regex_search(line, m, std::regex(R"re(^  ([a-z]+(, [a-z]+)*))re"))) {
      Names row = HeadingVerbs(m[1]);
      listed_oci.insert(row.begin(), row.end());
    }
  }
  const std::regex tag(R"re(^\.B ([a-z]+)$)re");
  Names documented = ManNames("brig.1", "COMMANDS", tag, true,
                              [](const std::string& subsection) { return subsection.empty(); });
  Names documented_oci = ManNames("brig.1", "COMMANDS", tag, true,
                                  [](const std::string& subsection) {
                                    return subsection == kOciCommands;
                                  });
  EXPECT_EQ(Show(listed), Show(documented));
  EXPECT_EQ(Show(listed_oci), Show(documented_oci));
  Names with_verb, with_oci_verb;
  for (const auto& verb : Documents()) {
    if (!verb.name.empty()) (verb.oci ? with_oci_verb : with_verb).insert(verb.name);
  }
  EXPECT_EQ(Show(listed), Show(with_verb)) << "brig --help's commands and the table's verbs";
  EXPECT_EQ(Show(listed_oci), Show(with_oci_verb))
      << "brig --help's OCI commands and the table's OCI verbs";
}

// `brig --help` says which of brig's own commands need root and which run without it, as
// the verb table has them (why_root, rootless).
TEST(Docs, BrigHelpSaysWhichCommandsNeedRoot) {
  std::smatch m;
  std::string usage = MainUsage();
  auto names = [](std::string list) {
    Names out;
    std::regex word(R"re([a-z]+)re");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), word);
         it != std::sregex_iterator(); ++it) {
      if (it->str() != "and") out.insert(it->str());
    }
    return out;
  };
  ASSERT_TRUE(std::regex_search(usage, m, std::regex(R"re(\n([a-z, ]+) need root;)re"))) << usage;
  Names root = names(m[1]);
  ASSERT_TRUE(
      std::regex_search(usage, m, std::regex(R"re(need root; ([a-z, ]+) works? without)re")))
      << usage;
  Names rootless = names(m[1]);
  Names table_root, table_rootless;
  for (const Verb& verb : Verbs()) {
    if (verb.act) continue;  // the OCI verbs have their own line
    if (verb.why_root) table_root.insert(verb.name);
    if (verb.rootless) table_rootless.insert(verb.name);
  }
  EXPECT_EQ(Show(root), Show(table_root));
  EXPECT_EQ(Show(rootless), Show(table_rootless));
}

TEST(Docs, EveryPageIsInstalledAndNamedByBrigAndItsHelp) {
  std::ifstream build(fs::path(testing::SourceRoot()) / "meson.build");
  std::string meson((std::istreambuf_iterator<char>(build)), std::istreambuf_iterator<char>());
  Names see_also =
      ManNames("brig.1", "SEE ALSO", std::regex(R"re(^\.BR ([a-z\\-]+) )re"), false);
  std::string usage = MainUsage();
  for (const auto& e : fs::directory_iterator(fs::path(testing::SourceRoot()) / "man")) {
    std::string page = e.path().filename(), name = e.path().stem();
    std::string section = e.path().extension().string().substr(1);
    EXPECT_NE(meson.find("'man/" + page + "'"), std::string::npos) << page << " not installed";
    EXPECT_NE(usage.find(name + "(" + section + ")"), std::string::npos)
        << page << " not named in brig --help";
    if (name != "brig") {
      EXPECT_TRUE(see_also.count(name)) << page << " not in brig(1) SEE ALSO";
    }
  }
}

// The README's `brig run` commands and its table for Docker and bubblewrap users name
// only options brig run has (issue 32, item 6): a stale flag there fails here.
TEST(Docs, TheReadmesRunOptionsExist) {
  std::ifstream in(fs::path(testing::SourceRoot()) / "README.md");
  ASSERT_TRUE(in);
  Names run = HelpOptions(cli::RunUsage()), named;
  const std::regex option(R"re((--[a-z][a-z0-9-]*))re");
  bool command = false, table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### ", 0) == 0 || line.rfind("## ", 0) == 0) {
      table = line == "### Coming from Docker or bubblewrap";
    }
    // A command's options, up to its " -- ", over its continued lines.
    std::string text;
    if (line.rfind("build/brig run ", 0) == 0 || command) text = line;
    command = !text.empty() && !line.empty() && line.back() == '\\';
    if (size_t end = text.find(" -- "); end != std::string::npos) {
      text.resize(end);
      command = false;
    }
    if (table && line.rfind("| `", 0) == 0) text = line.substr(line.find(" | ") + 3);
    for (std::sregex_iterator m(text.begin(), text.end(), option), end; m != end; ++m) {
      named.insert((*m)[1]);
    }
  }
  ASSERT_GT(named.size(), 10u) << "the README's brig run options were not found";
  Names stale;
  for (const auto& o : named) {
    if (!run.count(o)) stale.insert(o);
  }
  EXPECT_TRUE(stale.empty()) << "in the README, not in brig run --help: " << Show(stale);
}

TEST(Docs, TheShippedProfilesAreTheOnesDescribed) {
  Names shipped;
  for (const auto& e : fs::directory_iterator(fs::path(testing::SourceRoot()) / "policies" /
                                              "profiles")) {
    if (e.path().extension() == ".textproto") shipped.insert(e.path().stem());
  }
  Names described = ManNames("brig-profile.5", "SHIPPED PROFILES",
                            std::regex(R"re(^\.B ([a-z\\-]+)$)re"));
  EXPECT_EQ(Show(shipped), Show(described));
}

}  // namespace
}  // namespace brig::cli
