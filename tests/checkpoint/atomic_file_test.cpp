#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fitscope/checkpoint/atomic_file.hpp"

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
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(WriteFileAtomically, NamesThePathItCannotCreate) {
  try {
    fitscope::write_file_atomically("/nonexistent-dir/summary.json", "x");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cannot create /nonexistent-dir/summary.json.tmp: No such file or directory");
  }
}
