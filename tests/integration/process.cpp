#include "process.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace fitscope::testing {

TempDir::TempDir(const std::string& prefix) {
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed for " + templ);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool wait_for_file(const std::string& path, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

ProcessResult run_fitscope(std::vector<std::string> args) {
  args.insert(args.begin(), FITSCOPE_CLI);
  return run_process(args);
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  const ProcessResult r = run_fitscope(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr was: " << r.err;
}

Child::Child(const std::vector<std::string>& argv, const std::string& cwd) {
  const std::string out_path = capture_.path() + "/out", err_path = capture_.path() + "/err";
  std::vector<std::string> args = argv;
  std::string program = argv.at(0);
  if (!cwd.empty()) {
    // posix_spawn has no chdir in glibc 2.36's public API: go through /bin/sh -c 'cd DIR && exec ...'
    std::string command = "cd '" + cwd + "' && exec";
    for (const auto& a : argv) command += " '" + a + "'";
    args = {"/bin/sh", "-c", command};
    program = "/bin/sh";
  }
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  // without COLUMNS: the printout would be fitted to it, and the tests read its sentences whole, as a
  // file or a pipe gets them
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "COLUMNS=", 8) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, cargs.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + program);
  pid_ = pid;
}

Child::~Child() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

void Child::signal(int number) {
  if (pid_ > 0) ::kill(pid_, number);
}

ProcessResult Child::wait() {
  if (pid_ <= 0) throw std::logic_error("the child was already waited for");
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(capture_.path() + "/out");
  result.err = read_file(capture_.path() + "/err");
  return result;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  return Child(argv, cwd).wait();
}

}  // namespace fitscope::testing
