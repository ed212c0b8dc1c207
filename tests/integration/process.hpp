#pragma once
// Runs a real process and captures its exit code, stdout and stderr (for the CLI tests).

#include <string>
#include <vector>

namespace fitscope::testing {

struct ProcessResult {
  int exit_code = -1;  ///< the exit status, or 128 + signal when killed
  std::string out;
  std::string err;
};

/// Runs argv[0] with argv (no shell) in `cwd` (empty = current) and waits for it.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = "");

/// Runs the fitscope CLI under test (FITSCOPE_CLI) with `args`.
ProcessResult run_fitscope(std::vector<std::string> args);

/// A fresh empty directory under the system temp directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fitscope-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The whole content of a file.
std::string read_file(const std::string& path);

}  // namespace fitscope::testing
