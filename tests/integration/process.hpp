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
/// Expects the CLI to refuse `args` as bad usage: exit code 2, `message` in its standard error.
void expect_usage_error(const std::vector<std::string>& args, const std::string& message);

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

/// argv[0] run with argv (no shell) in `cwd` (empty = current), in the background, its stdout and
/// stderr captured; killed by the destructor if still running.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv, const std::string& cwd = "");
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Sends signal `number` (SIGINT, SIGTERM, ...).
  void signal(int number);
  /// Waits for the exit; the result once.
  ProcessResult wait();

 private:
  TempDir capture_{"fitscope-capture"};
  int pid_ = -1;
};

/// Polls (every 5 ms) until `path` exists or `timeout` passes; whether it exists. For a condition a
/// test must see before it acts, never to wait "long enough".
bool wait_for_file(const std::string& path, double timeout_s = 120);

/// The whole content of a file.
std::string read_file(const std::string& path);
/// `text` split at newlines (the last line's newline optional).
std::vector<std::string> lines_of(const std::string& text);

}  // namespace fitscope::testing
