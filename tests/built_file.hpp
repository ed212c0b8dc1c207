#pragma once
// A path of this build, given relative to the build folder: the folder above the running executable's
// (every test and benchmark binary lies one folder down in it). The compile definitions that name built
// files (FITSCOPE_CLI, DIST_WORKER, ...; cmake/BuiltFile.cmake) are calls of this, not absolute paths, so
// that a unit compiles the same in every clone and ccache shares it between clones. Forced into the units
// of the targets that use it (-include).

#include <limits.h>
#include <unistd.h>

#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>

inline const char* fitscope_built_file(const char* relative) {
  static std::mutex mutex;
  static std::deque<std::string> kept;  // the paths handed out, alive as long as the process
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw std::runtime_error("/proc/self/exe: cannot read this executable's path");
  std::string folder(exe, static_cast<std::size_t>(n));
  folder.erase(folder.rfind('/'));
  folder.erase(folder.rfind('/'));
  std::lock_guard<std::mutex> lock(mutex);
  kept.push_back(folder + "/" + relative);
  return kept.back().c_str();
}
