#include "fitscope/timing/cpu_usage.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace fitscope {
namespace {

/// utime + stime of a /proc stat file, in seconds (0 when unreadable).
double cpu_seconds(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::string line;
  if (!std::getline(in, line)) return 0;
  const auto close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoll(field);
    if (i == 15) {
      stime = std::stoll(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string thread_stat(int tid) { return "/proc/self/task/" + std::to_string(tid) + "/stat"; }

}  // namespace

void CpuUsage::start() {
  thread_id_ = static_cast<int>(::syscall(SYS_gettid));
  wall_start_ = std::chrono::steady_clock::now();
  process_start_s_ = cpu_seconds("/proc/self/stat");
  thread_start_s_ = cpu_seconds(thread_stat(thread_id_));
}

CpuUtilization CpuUsage::stop() const {
  CpuUtilization u;
  u.cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  if (wall <= 0) return u;
  u.process_cores = (cpu_seconds("/proc/self/stat") - process_start_s_) / wall;
  u.training_cores = (cpu_seconds(thread_stat(thread_id_)) - thread_start_s_) / wall;
  u.other_cores = u.process_cores > u.training_cores ? u.process_cores - u.training_cores : 0;
  u.machine_share = u.cores > 0 ? u.process_cores / u.cores : 0;
  return u;
}

}  // namespace fitscope
