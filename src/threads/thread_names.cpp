#include "fitscope/threads/thread_names.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#ifdef __linux__
#include <pthread.h>
#include <sys/syscall.h>
#endif

namespace fitscope::thread_names {

void name_this_thread(const char* name) {
#ifdef __linux__
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

void name_thread(int tid, const char* name) {
  std::ofstream("/proc/self/task/" + std::to_string(tid) + "/comm") << name;
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

double cpu_seconds(int tid) {
  const std::string task = "/proc/self/task/" + std::to_string(tid);
  std::ifstream schedstat(task + "/schedstat");
  long long ns = 0;
  return schedstat >> ns ? static_cast<double>(ns) * 1e-9 : stat_cpu_seconds(task + "/stat");
}

double stat_cpu_seconds(const std::string& stat_path) {
  std::ifstream stat(stat_path);
  std::string line;
  const auto close = std::getline(stat, line) ? line.rfind(')') : std::string::npos;  // the name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));  // from field 3, the state
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stoll(field);  // utime, stime
  }
  return static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
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
