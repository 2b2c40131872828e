// The subsystems of src/ (its first-level directories) include each other without a cycle:
// each can be read, built and tested with only those below it (issue 15). config sits above
// the subsystems it ties together, container above config, cli above container.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "testlib/testlib.h"

namespace brig {
namespace {

namespace fs = std::filesystem;

using Graph = std::map<std::string, std::set<std::string>>;

Graph IncludeGraph(const fs::path& src) {
  Graph g;
  const std::regex include(R"re(^#include "([a-z_]+)/)re");
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    fs::path rel = fs::relative(e.path(), src);
    if (!e.is_regular_file() || rel.begin() == rel.end() || std::next(rel.begin()) == rel.end()) {
      continue;
    }
    std::string from = rel.begin()->string();
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, include) && m[1] != from && m[1] != "brig") {
        g[from].insert(m[1]);
      }
    }
  }
  return g;
}

// A path that returns to where it started, as "a -> b -> a"; empty if there is none.
std::string FindCycle(const Graph& g) {
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<std::string> path;
  std::string found;
  std::function<bool(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    path.push_back(n);
    auto it = g.find(n);
    if (it != g.end()) {
      for (const auto& m : it->second) {
        if (state[m] == 1) {
          for (auto p = std::find(path.begin(), path.end(), m); p != path.end(); ++p) {
            found += *p + " -> ";
          }
          found += m;
          return true;
        }
        if (state[m] == 0 && visit(m)) return true;
      }
    }
    path.pop_back();
    state[n] = 2;
    return false;
  };
  for (const auto& [n, _] : g) {
    if (state[n] == 0 && visit(n)) return found;
  }
  return "";
}

TEST(Layering, NoIncludeCycleBetweenSubsystems) {
  Graph g = IncludeGraph(fs::path(testing::SourceRoot()) / "src");
  ASSERT_GT(g.size(), 5u) << "src/ not found under " << testing::SourceRoot();
  EXPECT_EQ(FindCycle(g), "");
}

TEST(Layering, TheCycleFinderFindsOne) {
  EXPECT_EQ(FindCycle({{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}}), "a -> b -> c -> a");
  EXPECT_EQ(FindCycle({{"a", {"b"}}, {"b", {"c"}}}), "");
}

}  // namespace
}  // namespace brig
