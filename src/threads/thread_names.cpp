#include "fitscope/threads/thread_names.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#ifdef __linux__
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fitscope::thread_names {

void name_this_thread(const char* name) {
#ifdef __linux__
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

bool name_thread(int tid, const char* name) {
  std::ofstream comm("/proc/self/task/" + std::to_string(tid) + "/comm");
  return static_cast<bool>(comm << name << std::flush);
}

int this_thread_id() {
#ifdef __linux__
  return static_cast<int>(::syscall(SYS_gettid));
#else
  return 0;
#endif
}

std::vector<int> thread_ids() {
  std::vector<int> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ids.push_back(std::stoi(name));
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string thread_name(int tid) {
  std::ifstream comm("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

bool is_fitscope_name(const std::string& name) { return name.rfind("fs-", 0) == 0; }

void name_new_threads(const std::vector<int>& before, const char* name) {
  for (int tid : thread_ids()) {
    if (!std::binary_search(before.begin(), before.end(), tid) && !is_fitscope_name(thread_name(tid))) {
      name_thread(tid, name);
    }
  }
}

}  // namespace fitscope::thread_names
