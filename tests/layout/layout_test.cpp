// The tree's architecture, read from the includes: the areas (include/fitscope/<area>, src/<area>)
// form layers with no cycle between them, each area includes only what its row of ARCHITECTURE.md's
// floor table allows, each area's CMake list holds its own files and no other, no area includes another's
// private src/ header, and the umbrella header holds every public header and no internal one. The
// library's strings name no flag.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {
namespace fs = std::filesystem;

const fs::path kRoot = FITSCOPE_SOURCE_DIR;

/// area -> area it includes -> a file that does it
using Graph = std::map<std::string, std::map<std::string, std::string>>;

/// The fitscope headers `file` includes, as "area/..." paths ("fitscope/" dropped), and the internal
/// ones of src/ ("report/svg.hpp").
std::vector<std::string> includes_of(const fs::path& file) {
  static const std::regex include(R"re(^\s*#\s*include\s+"(?:fitscope/)?([a-z_]+)/[^"]+")re");
  std::ifstream in(file);
  std::vector<std::string> areas;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, include)) areas.push_back(m[1]);
  }
  return areas;
}

Graph area_graph() {
  Graph g;
  for (const fs::path base : {kRoot / "include" / "fitscope", kRoot / "src"}) {
    for (const auto& entry : fs::recursive_directory_iterator(base)) {
      const fs::path rel = fs::relative(entry.path(), base);
      if (!entry.is_regular_file() || std::distance(rel.begin(), rel.end()) < 2) continue;  // fitscope.hpp, CMakeLists
      const std::string ext = entry.path().extension().string();
      if (ext != ".hpp" && ext != ".cpp") continue;
      const std::string area = rel.begin()->string();
      g[area];
      for (const std::string& to : includes_of(entry.path())) {
        if (to != area && fs::is_directory(base / to)) g[area].emplace(to, fs::relative(entry.path(), kRoot).string());
      }
    }
  }
  return g;
}

/// The folders of `area` (include/fitscope/<area>/<folder>, src/<area>/<folder>, its detail/ a part of
/// its folder) and the folders of the same area each includes.
Graph folder_graph(const std::string& area) {
  const std::regex include(R"re(^\s*#\s*include\s+"(?:fitscope/)?)re" + area + R"re(/([a-z_]+)/[^"]+")re");
  Graph g;
  for (const fs::path& base : {kRoot / "include" / "fitscope" / area, kRoot / "src" / area}) {
    for (const auto& entry : fs::recursive_directory_iterator(base)) {
      const fs::path rel = fs::relative(entry.path(), base);
      if (!entry.is_regular_file() || std::distance(rel.begin(), rel.end()) < 2) continue;  // CMakeLists.txt
      const std::string folder = rel.begin()->string();
      g[folder];
      std::ifstream in(entry.path());
      std::smatch m;
      for (std::string line; std::getline(in, line);) {
        if (std::regex_search(line, m, include) && m[1] != folder) g[folder].emplace(m[1], fs::relative(entry.path(), kRoot).string());
      }
    }
  }
  return g;
}

/// A cycle of areas, with the file behind each step; empty when there is none.
std::vector<std::string> find_cycle(const Graph& g) {
  std::map<std::string, int> state;  // 1 = on the path, 2 = done
  std::vector<std::string> path, cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& a) {
    state[a] = 1;
    path.push_back(a);
    for (const auto& [b, file] : g.at(a)) {
      if (!g.count(b)) continue;
      if (state[b] == 1) {
        const auto from = std::find(path.begin(), path.end(), b);
        for (auto it = from; it != path.end(); ++it) {
          const std::string& next = it + 1 == path.end() ? b : *(it + 1);
          cycle.push_back(*it + " -> " + next + " (" + g.at(*it).at(next) + ")");
        }
        return true;
      }
      if (state[b] == 0 && visit(b)) return true;
    }
    path.pop_back();
    state[a] = 2;
    return false;
  };
  for (const auto& [a, edges] : g) {
    if (state[a] == 0 && visit(a)) break;
  }
  return cycle;
}

/// The includes under `root`/src of a header private to another area (src/b/y.cpp including
/// "a/x.hpp"), as "src/b/y.cpp: a/x.hpp". An area shares a header through include/fitscope/ (its
/// detail/ folder when it is internal), never through its src/.
std::vector<std::string> private_includes_across_areas(const fs::path& root) {
  static const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+)/[^"]+")re");
  std::vector<std::string> found;
  const fs::path src = root / "src";
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const fs::path rel = fs::relative(entry.path(), src);
    if (!entry.is_regular_file() || std::distance(rel.begin(), rel.end()) < 2) continue;
    const std::string area = rel.begin()->string();
    std::ifstream in(entry.path());
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_search(line, m, include) && m[1] != area && fs::is_directory(src / m[1].str())) {
        const std::string header = line.substr(line.find('"') + 1, line.rfind('"') - line.find('"') - 1);
        found.push_back(fs::relative(entry.path(), root).string() + ": " + header);
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(Layout, NoAreaIncludesAnotherAreasPrivateHeader) {
  EXPECT_EQ(private_includes_across_areas(kRoot), std::vector<std::string>{});
}

TEST(Layout, ThePrivateIncludeCheckFindsOne) {
  const fs::path root = fs::temp_directory_path() / ("fitscope-layout-" + std::to_string(::getpid()));
  fs::create_directories(root / "src" / "a");
  fs::create_directories(root / "src" / "b");
  std::ofstream(root / "src" / "a" / "x.hpp") << "#pragma once\n";
  std::ofstream(root / "src" / "a" / "z.cpp") << "#include \"a/x.hpp\"\n";  // its own area's: fine
  std::ofstream(root / "src" / "b" / "y.cpp") << "#include \"fitscope/a/w.hpp\"\n#include \"a/x.hpp\"\n";
  const std::vector<std::string> found = private_includes_across_areas(root);
  fs::remove_all(root);
  EXPECT_EQ(found, std::vector<std::string>{"src/b/y.cpp: a/x.hpp"});
}

/// The lines of the library's code under `root` (src/, include/) whose string literals name a command-line
/// flag ("--workers"), as "src/a/x.cpp:12". The library names a setting by its C++ option and the
/// command line renders it as its flag (summary/advice.hpp), the launcher's as well.
std::vector<std::string> flags_in_library_strings(const fs::path& root) {
  static const std::regex flag(R"re("[^"]*--[a-z][^"]*")re");
  std::vector<std::string> found;
  for (const char* part : {"src", "include"}) {
    if (!fs::is_directory(root / part)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / part)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      std::ifstream in(entry.path());
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        const std::string code = line.substr(0, line.find("//"));
        if (std::regex_search(code, flag)) found.push_back(fs::relative(entry.path(), root).string() + ":" + std::to_string(number));
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(Layout, TheLibrarysMessagesNameOptionsNotFlags) {
  EXPECT_EQ(flags_in_library_strings(kRoot), std::vector<std::string>{});
}

TEST(Layout, TheFlagCheckFindsOne) {
  const fs::path root = fs::temp_directory_path() / ("fitscope-flags-" + std::to_string(::getpid()));
  fs::create_directories(root / "src" / "a");
  std::ofstream(root / "src" / "a" / "x.cpp") << "// raise --workers: a comment is fine\n"
                                                 "throw std::invalid_argument(\"raise LoaderOptions::workers\");\n"
                                                 "throw std::invalid_argument(\"raise --workers\");\n";
  const std::vector<std::string> found = flags_in_library_strings(root);
  fs::remove_all(root);
  EXPECT_EQ(found, std::vector<std::string>{"src/a/x.cpp:3"});
}

TEST(Layout, NoIncludeCycleJoinsTwoAreas) {
  const Graph g = area_graph();
  ASSERT_GE(g.size(), 10u) << "the areas were not found under " << kRoot;
  std::string cycle;
  for (const std::string& step : find_cycle(g)) cycle += "\n  " + step;
  EXPECT_TRUE(cycle.empty()) << "a cycle of areas:" << cycle;
}

/// ARCHITECTURE.md's floor table ("Areas and floors"), as area -> the areas it may include: its row's
/// "includes" column ("nothing of fitscope", "io, threads", "... (data allowed)": every area it names),
/// or, for "everything below", every area of a lower floor. With `within` ("data"), the table of that
/// area's folders instead (rows of `data/formats/`), as folder -> folders.
std::map<std::string, std::set<std::string>> floor_table(const std::string& markdown, const std::string& within = "") {
  const std::regex row(R"re(^\|\s*(\d+)\s*\|\s*`)re" + (within.empty() ? "" : within + "/") +
                       R"re(([a-z_]+)/`\s*\|.*\|([^|]*)\|\s*$)re");
  static const std::regex word("[a-z_]+");
  std::map<std::string, int> floor;
  std::map<std::string, std::string> includes;
  std::istringstream in(markdown);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (!std::regex_match(line, m, row)) continue;
    floor[m[2]] = std::stoi(m[1]);
    includes[m[2]] = m[3];
  }
  std::map<std::string, std::set<std::string>> may;
  for (const auto& [area, column] : includes) {
    std::set<std::string>& allowed = may[area];
    if (column.find("everything below") != std::string::npos) {
      for (const auto& [other, f] : floor) {
        if (f < floor[area]) allowed.insert(other);
      }
      continue;
    }
    for (auto it = std::sregex_iterator(column.begin(), column.end(), word); it != std::sregex_iterator(); ++it) {
      if (floor.count(it->str())) allowed.insert(it->str());
    }
  }
  return may;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The includes in `g` that `may` does not allow its area, as "timing -> data (include/fitscope/timing/x.hpp)";
/// an area `may` does not name is not held.
std::vector<std::string> includes_above_the_floor(const Graph& g, const std::map<std::string, std::set<std::string>>& may) {
  std::vector<std::string> found;
  for (const auto& [area, allowed] : may) {
    const auto it = g.find(area);
    if (it == g.end()) continue;
    for (const auto& [to, file] : it->second) {
      if (!allowed.count(to)) found.push_back(area + " -> " + to + " (" + file + ")");
    }
  }
  return found;
}

TEST(Layout, EveryAreaIncludesOnlyWhatItsRowOfTheFloorTableAllows) {
  const Graph g = area_graph();
  const auto may = floor_table(read_text(kRoot / "ARCHITECTURE.md"));
  // every area of the tree has its row, and every row its area
  std::set<std::string> areas, rows;
  for (const auto& [area, edges] : g) areas.insert(area);
  for (const auto& [area, allowed] : may) rows.insert(area);
  ASSERT_GE(areas.size(), 10u) << "the areas were not found under " << kRoot;
  EXPECT_EQ(rows, areas) << "ARCHITECTURE.md's floor table and the tree's areas differ";
  EXPECT_EQ(includes_above_the_floor(g, may), std::vector<std::string>{});
  // the report writes its files through io/, and neither it nor the timing includes checkpoint/
  ASSERT_TRUE(g.count("timing") && g.count("report"));
  for (const char* area : {"timing", "report"}) {
    const auto& reached = g.at(area);
    EXPECT_EQ(reached.count("checkpoint"), 0u) << area << "/ includes checkpoint/ (" << reached.find("checkpoint")->second << ")";
  }
}

TEST(Layout, TheFloorCheckFindsAPlantedOffender) {
  const auto may = floor_table(
      "| floor | area | what it holds | includes |\n|---|---|---|---|\n"
      "| 0 | `threads/` | threads | nothing of fitscope |\n"
      "| 0 | `timing/` | the clock | threads |\n"
      "| 1 | `data/` | data sets | threads, timing |\n"
      "| 2 | `summary/` | the summary, a | b | timing (data allowed) |\n"
      "| 3 | `train/` | the trainer | everything below |\n");
  EXPECT_EQ(may.at("threads"), std::set<std::string>{});
  EXPECT_EQ(may.at("summary"), (std::set<std::string>{"data", "timing"}));
  EXPECT_EQ(may.at("train"), (std::set<std::string>{"data", "summary", "threads", "timing"}));
  Graph g;
  g["timing"]["threads"] = "timing/a.hpp";
  g["timing"]["data"] = "timing/b.hpp";  // the planted offender: a floor up
  g["summary"]["data"] = "summary/c.hpp";
  g["train"]["summary"] = "train/d.cpp";
  g["other"]["train"] = "other/e.cpp";  // an area the table does not name: not held here
  EXPECT_EQ(includes_above_the_floor(g, may), std::vector<std::string>{"timing -> data (timing/b.hpp)"});
}

/// The source files an area's CMake list (src/<area>/CMakeLists.txt) does not hold, as "src/a/x.cpp",
/// and those a CMake list holds that are not its area's, as "src/a/CMakeLists.txt: ../b/y.cpp";
/// src/CMakeLists.txt holds none.
std::vector<std::string> sources_outside_their_areas_list(const fs::path& root) {
  static const std::regex source(R"re([A-Za-z0-9_./-]+\.cpp)re");
  std::vector<std::string> found;
  const fs::path src = root / "src";
  const std::string top = read_text(src / "CMakeLists.txt");
  for (auto it = std::sregex_iterator(top.begin(), top.end(), source); it != std::sregex_iterator(); ++it) {
    found.push_back("src/CMakeLists.txt: " + it->str());
  }
  for (const auto& area : fs::directory_iterator(src)) {
    if (!area.is_directory()) continue;
    const std::string list = read_text(area.path() / "CMakeLists.txt");
    std::set<std::string> listed;
    for (auto it = std::sregex_iterator(list.begin(), list.end(), source); it != std::sregex_iterator(); ++it) {
      listed.insert(it->str());
    }
    for (const auto& entry : fs::recursive_directory_iterator(area.path())) {
      if (entry.path().extension() != ".cpp") continue;
      const std::string rel = fs::relative(entry.path(), area.path()).string();
      if (!listed.erase(rel)) found.push_back(fs::relative(entry.path(), root).string());
    }
    for (const std::string& other : listed) {
      found.push_back(fs::relative(area.path() / "CMakeLists.txt", root).string() + ": " + other);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(Layout, EachAreasCMakeListHoldsItsOwnFilesAndNoOther) {
  EXPECT_EQ(sources_outside_their_areas_list(kRoot), std::vector<std::string>{});
}

TEST(Layout, TheCMakeListCheckFindsAFileOutOfPlace) {
  const fs::path root = fs::temp_directory_path() / ("fitscope-lists-" + std::to_string(::getpid()));
  fs::create_directories(root / "src" / "a" / "part");
  fs::create_directories(root / "src" / "b");
  std::ofstream(root / "src" / "CMakeLists.txt") << "add_subdirectory(a)\n";
  std::ofstream(root / "src" / "a" / "x.cpp") << "";
  std::ofstream(root / "src" / "a" / "part" / "y.cpp") << "";
  std::ofstream(root / "src" / "a" / "CMakeLists.txt") << "fitscope_area(a\n  x.cpp\n  part/y.cpp\n  ../b/z.cpp\n)\n";
  std::ofstream(root / "src" / "b" / "z.cpp") << "";
  std::ofstream(root / "src" / "b" / "CMakeLists.txt") << "fitscope_area(b)\n";
  const std::vector<std::string> found = sources_outside_their_areas_list(root);
  fs::remove_all(root);
  EXPECT_EQ(found, (std::vector<std::string>{"src/a/CMakeLists.txt: ../b/z.cpp", "src/b/z.cpp"}));
}

TEST(Layout, TheCycleCheckFindsACycle) {
  Graph g;
  g["a"]["b"] = "a.cpp";
  g["b"]["c"] = "b.cpp";
  g["c"]["a"] = "c.cpp";
  g["c"]["d"] = "c.cpp";
  g["d"];
  EXPECT_EQ(find_cycle(g), (std::vector<std::string>{"a -> b (a.cpp)", "b -> c (b.cpp)", "c -> a (c.cpp)"}));
  g["c"].erase("a");
  EXPECT_TRUE(find_cycle(g).empty());
}

TEST(Layout, TheUmbrellaHeaderHoldsEveryPublicHeaderAndNoInternalOne) {
  std::set<std::string> umbrella;
  std::ifstream in(kRoot / "include" / "fitscope" / "fitscope.hpp");
  static const std::regex include(R"re(^#include "([^"]+)")re");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, include)) umbrella.insert(m[1]);
  }
  const fs::path base = kRoot / "include";
  for (const auto& entry : fs::recursive_directory_iterator(base / "fitscope")) {
    if (!entry.is_regular_file() || entry.path().filename() == "fitscope.hpp") continue;
    const std::string header = fs::relative(entry.path(), base).string();
    const bool internal = header.find("/detail/") != std::string::npos;
    EXPECT_EQ(umbrella.count(header), internal ? 0u : 1u) << header << (internal ? " is internal" : " is public");
  }
}

}  // namespace

TEST(Layout, DatasFoldersIncludeOnlyWhatTheirRowAllowsAndAreTheSameInIncludeSrcAndTests) {
  const Graph g = folder_graph("data");
  const auto may = floor_table(read_text(kRoot / "ARCHITECTURE.md"), "data");
  std::set<std::string> folders, rows;
  for (const auto& [folder, edges] : g) folders.insert(folder);
  for (const auto& [folder, allowed] : may) rows.insert(folder);
  ASSERT_GE(rows.size(), 2u) << "ARCHITECTURE.md has no table of data/'s folders";
  EXPECT_EQ(rows, folders) << "ARCHITECTURE.md's table of data/'s folders and the tree's differ";
  EXPECT_EQ(includes_above_the_floor(g, may), std::vector<std::string>{});
  std::string cycle;
  for (const std::string& step : find_cycle(g)) cycle += "\n  " + step;
  EXPECT_TRUE(cycle.empty()) << "a cycle of data/'s folders:" << cycle;
  // each folder holds headers, sources and tests; nothing lies beside the folders
  for (const fs::path& base : {kRoot / "include" / "fitscope" / "data", kRoot / "src" / "data", kRoot / "tests" / "data"}) {
    std::set<std::string> here;
    for (const auto& entry : fs::directory_iterator(base)) {
      if (entry.is_directory()) here.insert(entry.path().filename().string());
    }
    EXPECT_EQ(here, rows) << base;
  }
}

TEST(Layout, TheFolderCheckFindsAPlantedOffender) {
  const auto may = floor_table(
      "| floor | folder | what it holds | includes |\n|---|---|---|---|\n"
      "| 1 | `data/` | the whole area | io |\n"
      "| 0 | `data/formats/` | formats | nothing of data |\n"
      "| 1 | `data/sources/` | data sets | formats |\n",
      "data");
  EXPECT_EQ(may.at("formats"), std::set<std::string>{});
  EXPECT_EQ(may.at("sources"), std::set<std::string>{"formats"});
  EXPECT_EQ(may.count("data"), 0u);  // the area's own row belongs to the areas' table
  Graph g;
  g["sources"]["formats"] = "src/data/sources/a.cpp";
  g["formats"]["sources"] = "src/data/formats/b.cpp";  // the planted offender: a floor up
  EXPECT_EQ(includes_above_the_floor(g, may), std::vector<std::string>{"formats -> sources (src/data/formats/b.cpp)"});
}
