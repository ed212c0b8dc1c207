#pragma once
// DataFilesTest: a GoogleTest fixture for the data sources' tests on real files: a fresh directory per
// test, removed after it, files written into it plainly or gzip-compressed, and the message of an
// expected std::invalid_argument; `framed`, records as one TFRecord file's bytes.

#include "fitscope/data/formats/tfrecord_format.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

/// `records` framed as one TFRecord file's bytes.
inline std::string framed(const std::vector<std::string>& records) {
  std::ostringstream out;
  for (const std::string& r : records) fitscope::write_tfrecord(out, r);
  return out.str();
}

class DataFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fitscope-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// `name` in the test's directory.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Writes `bytes` as the file `name` of the test's directory.
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }
  /// Writes `bytes` gzip-compressed (zlib's gzwrite) as the file `name`.
  void write_gz(const std::string& name, const std::string& bytes) const {
    gzFile f = gzopen(path(name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  /// The error message of `f`, which must throw std::invalid_argument.
  template <typename F>
  static std::string error_of(F f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected std::invalid_argument";
    return {};
  }

  std::filesystem::path dir_;
};
