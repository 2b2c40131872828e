// Docs move with the code (issue 16): every option a verb's --help shows is described in
// the OPTIONS of its man page and the reverse, every command `brig --help` lists is in
// brig(1), and the shipped profiles brig-profile(5) describes are the ones in policies/.
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

struct Verb {
  std::string name;  // as on the command line; "" is brig itself
  std::function<std::string()> help;
  std::string man;  // under man/
};

std::vector<Verb> Verbs() {
  auto main_of = [](int (*fn)(const std::vector<std::string>&)) {
    return [fn] { return Captured([fn] { return fn({"--help"}); }); };
  };
  return {
      {"", [] { return MainUsage(); }, "brig.1"},
      {"run", [] { return RunUsage(); }, "brig-run.1"},
      {"policy", main_of(PolicyMain), "brig-policy.1"},
      {"check", main_of(CheckMain), "brig-check.1"},
      {"gc", main_of(GcMain), "brig-gc.1"},
      {"list", main_of(ListMain), "brig-list.1"},
  };
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

// The lines of one .SH section of a page (its .SS subsections included), each with the
// line before it.
std::vector<std::pair<std::string, std::string>> SectionLines(const std::string& page,
                                                              const std::string& section) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string in_section, prev;
  for (const auto& line : ManLines(page)) {
    if (line.rfind(".SH ", 0) == 0) in_section = line.substr(4);
    if (in_section == section) out.emplace_back(prev, line);
    prev = line;
  }
  return out;
}

// What `pattern` captures in the lines of a section (only in the tags of its .TP entries
// if `tags`), with roff's "\-" read as "-".
Names ManNames(const std::string& page, const std::string& section, const std::regex& pattern,
               bool tags = true) {
  Names out;
  for (const auto& [prev, line] : SectionLines(page, section)) {
    std::smatch m;
    if ((!tags || prev == ".TP") && std::regex_search(line, m, pattern)) {
      out.insert(std::regex_replace(m[1].str(), std::regex(R"(\\-)"), "-"));
    }
  }
  return out;
}

Names ManOptions(const std::string& page) {
  return ManNames(page, "OPTIONS", std::regex(R"re(^\.B[IR]? ((\\-)+[a-z0-9\\-]+))re"));
}

std::string Show(const Names& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "(none)" : s;
}

TEST(Docs, EveryOptionInHelpIsInTheManPageAndTheReverse) {
  for (const auto& verb : Verbs()) {
    SCOPED_TRACE("brig " + verb.name + " --help against man/" + verb.man);
    Names help = HelpOptions(verb.help()), man = ManOptions(verb.man);
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

TEST(Docs, EveryCommandHasItsPageAndIsInBrig1) {
  Names listed;
  std::istringstream in(MainUsage());
  bool commands = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Commands:") commands = true;
    if (line.empty()) commands = false;
    std::smatch m;
    if (commands && std::regex_search(line, m, std::regex(R"re(^  ([a-z]+) )re"))) {
      listed.insert(m[1]);
    }
  }
  Names documented = ManNames("brig.1", "COMMANDS", std::regex(R"re(^\.B ([a-z]+)$)re"));
  EXPECT_EQ(Show(listed), Show(documented));
  Names with_verb;
  for (const auto& verb : Verbs()) {
    if (!verb.name.empty()) with_verb.insert(verb.name);
  }
  EXPECT_EQ(Show(listed), Show(with_verb)) << "a command this test does not check";
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
