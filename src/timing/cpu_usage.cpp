#include "fitscope/timing/cpu_usage.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fitscope/threads/thread_names.hpp"

namespace fitscope {
namespace {

/// utime + stime of a /proc stat file, in seconds (0 when unreadable).
double stat_seconds(const std::string& stat_path) {
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

/// A thread's CPU seconds: schedstat's nanoseconds where the kernel keeps them, else its stat ticks.
double thread_seconds(int tid) {
  const std::string task = "/proc/self/task/" + std::to_string(tid);
  std::ifstream schedstat(task + "/schedstat");
  long long ns = 0;
  if (schedstat >> ns) return static_cast<double>(ns) * 1e-9;
  return stat_seconds(task + "/stat");
}

constexpr const char* kPools[] = {"training", "intra_op", "blas", "loader", "callbacks", "checkpoint",
                                  "communication", "other"};

/// The pool of a thread, by the name fitscope gave it.
std::size_t pool_of(const std::string& name) {
  namespace n = thread_names;
  if (name == n::kIntraOp) return 1;
  if (name == n::kBlas) return 2;
  if (name == n::kLoader) return 3;
  if (name == n::kCallbacks) return 4;
  if (name == n::kCheckpoint) return 5;
  if (name == n::kCommunication || name == n::kHeartbeat) return 6;
  return 7;
}

}  // namespace

const PoolCpu* CpuUtilization::pool(const std::string& name) const {
  const auto it = std::find_if(pools.begin(), pools.end(), [&](const PoolCpu& p) { return p.pool == name; });
  return it == pools.end() ? nullptr : &*it;
}

void CpuUsage::start() {
  thread_id_ = thread_names::this_thread_id();
  wall_start_ = std::chrono::steady_clock::now();
  process_start_s_ = stat_seconds("/proc/self/stat");
  thread_start_s_.clear();
  for (int tid : thread_names::thread_ids()) thread_start_s_[tid] = thread_seconds(tid);
}

CpuUtilization CpuUsage::stop() const {
  CpuUtilization u;
  u.cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  if (wall <= 0) return u;
  const double process_s = stat_seconds("/proc/self/stat") - process_start_s_;
  for (const char* name : kPools) u.pools.push_back({name, 0, 0});
  double threads_s = 0;
  for (int tid : thread_names::thread_ids()) {
    const auto was = thread_start_s_.find(tid);
    const double used = std::max(0.0, thread_seconds(tid) - (was == thread_start_s_.end() ? 0.0 : was->second));
    PoolCpu& pool = u.pools[tid == thread_id_ ? 0 : pool_of(thread_names::thread_name(tid))];
    ++pool.threads;
    pool.cores += used / wall;
    threads_s += used;
  }
  u.pools.back().cores += std::max(0.0, process_s - threads_s) / wall;  // threads that exited meanwhile
  u.process_cores = std::max(process_s, threads_s) / wall;
  u.training_cores = u.pools.front().cores;
  u.other_cores = std::max(0.0, u.process_cores - u.training_cores);
  u.machine_share = u.cores > 0 ? u.process_cores / u.cores : 0;
  return u;
}

}  // namespace fitscope
