#include "fitscope/timing/cpu_usage.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/usable_cores.hpp"

namespace fitscope {
namespace {

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

/// The CPUs of this process's affinity mask.
std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

/// /proc/stat's busy seconds on the affinity mask's CPUs; -1 when it cannot be read.
double cpus_busy_seconds() {
  std::ifstream in("/proc/stat");
  if (!in) return -1;
  std::stringstream text;
  text << in.rdbuf();
  return detail::busy_cpu_seconds(text.str(), affinity_cpus(), static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

}  // namespace

double detail::busy_cpu_seconds(const std::string& stat, const std::vector<int>& cpus, double ticks_per_s) {
  if (ticks_per_s <= 0) return -1;
  std::istringstream in(stat);
  double busy = 0;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    int cpu = -1;
    if (std::sscanf(line.c_str(), "cpu%d ", &cpu) != 1 || std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    std::istringstream fields(line.substr(line.find(' ')));
    // user nice system idle iowait irq softirq steal (guest and guest_nice are counted in user and nice)
    double ticks[8] = {};
    for (double& t : ticks) fields >> t;
    if (!fields) continue;
    busy += ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7];
    found = true;
  }
  return found ? busy / ticks_per_s : -1;
}

const PoolCpu* CpuUtilization::pool(const std::string& name) const {
  const auto it = std::find_if(pools.begin(), pools.end(), [&](const PoolCpu& p) { return p.pool == name; });
  return it == pools.end() ? nullptr : &*it;
}

void CpuUsage::start() {
  thread_id_ = thread_names::this_thread_id();
  wall_start_ = std::chrono::steady_clock::now();
  process_start_s_ = thread_names::stat_cpu_seconds("/proc/self/stat");
  const Throttling throttled = cgroup_throttling();
  throttled_start_periods_ = throttled.periods;
  throttled_start_s_ = throttled.seconds;
  cpus_busy_start_s_ = cpus_busy_seconds();
  thread_start_s_.clear();
  for (int tid : thread_names::thread_ids()) thread_start_s_[tid] = thread_names::cpu_seconds(tid);
}

CpuUtilization CpuUsage::stop() const {
  CpuUtilization u;
  u.cores = usable_cores().cores;  // the cores it may use (a container's, a taskset's), not the machine's
  const Throttling throttled = cgroup_throttling();
  u.throttled_periods = std::max<int64_t>(0, throttled.periods - throttled_start_periods_);
  u.throttled_s = std::max(0.0, throttled.seconds - throttled_start_s_);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  if (wall <= 0) return u;
  const double process_s = thread_names::stat_cpu_seconds("/proc/self/stat") - process_start_s_;
  for (const char* name : kPools) u.pools.push_back({name, 0, 0});
  double threads_s = 0;
  for (int tid : thread_names::thread_ids()) {
    const auto was = thread_start_s_.find(tid);
    const double used = std::max(0.0, thread_names::cpu_seconds(tid) - (was == thread_start_s_.end() ? 0.0 : was->second));
    PoolCpu& pool = u.pools[tid == thread_id_ ? 0 : pool_of(thread_names::thread_name(tid))];
    ++pool.threads;
    pool.cores += used / wall;
    threads_s += used;
  }
  u.pools.back().cores += std::max(0.0, process_s - threads_s) / wall;  // threads that exited meanwhile
  u.process_cores = std::max(process_s, threads_s) / wall;
  const double cpus_busy_s = cpus_busy_seconds();
  if (cpus_busy_start_s_ >= 0 && cpus_busy_s >= 0) {
    u.others_cores = std::max(0.0, (cpus_busy_s - cpus_busy_start_s_) / wall - u.process_cores);
  }
  u.training_cores = u.pools.front().cores;
  u.other_cores = std::max(0.0, u.process_cores - u.training_cores);
  u.machine_share = u.cores > 0 ? u.process_cores / u.cores : 0;
  return u;
}

}  // namespace fitscope
