#include <gtest/gtest.h>

#include <thread>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fitscope/io/atomic_file.hpp"

namespace {
std::string content_of(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(WriteFileAtomically, ReplacesTheContentAndLeavesNoTemporaryFile) {
  const auto dir = std::filesystem::temp_directory_path() / "fitscope_atomic_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "summary.json").string();
  fitscope::write_file_atomically(path, "old");
  fitscope::write_file_atomically(path, "new content");
  EXPECT_EQ(content_of(path), "new content");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) EXPECT_EQ(entry.path().filename(), "summary.json");
  std::filesystem::remove_all(dir);
}

TEST(WriteFileAtomically, TwoWritersOfOnePathNeverMixTheirBytes) {
  const auto dir = std::filesystem::temp_directory_path() / "fitscope_atomic_race_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "state").string();
  const std::string a(1 << 16, 'a'), b(1 << 16, 'b');
  auto writer = [&](const std::string& content) {
    for (int i = 0; i < 100; ++i) fitscope::write_file_atomically(path, content);
  };
  std::thread first(writer, a), second(writer, b);
  first.join();
  second.join();
  const std::string last = content_of(path);
  EXPECT_TRUE(last == a || last == b) << "a torn or mixed file of " << last.size() << " bytes";
  std::filesystem::remove_all(dir);
}

TEST(WriteFileAtomically, NamesThePathItCannotCreate) {
  try {
    fitscope::write_file_atomically("/nonexistent-dir/summary.json", "x");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();  // the temporary file beside it, named by pid and a counter
    EXPECT_EQ(what.rfind("cannot create /nonexistent-dir/summary.json.tmp.", 0), 0u) << what;
    EXPECT_NE(what.find(": No such file or directory"), std::string::npos) << what;
  }
}
