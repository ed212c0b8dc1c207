#pragma once
/// CpuUsage: the process's CPU use over a span of the run, thread by thread, from /proc (Linux): the
/// CPU time of every thread, grouped into pools by the names fitscope gives its threads
/// (thread_names.hpp) and by the thread that started the span (the training thread), over the wall
/// time. "Is the machine busy, and with what?" is half of the small-batch question: a pool that burns
/// a core while the step waits shows here. start() and stop() on the same thread; stop() before the
/// pools' threads exit (a thread that exited in the span counts as `other`).

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace fitscope {

/// One pool's share of the span.
struct PoolCpu {
  std::string pool;     ///< training | intra_op | blas | loader | callbacks | checkpoint | communication | other
  int64_t threads = 0;  ///< threads seen in the pool
  double cores = 0;     ///< mean cores busy (CPU seconds / wall seconds)
};

struct CpuUtilization {
  double process_cores = 0;    ///< mean cores busy in the process (CPU seconds / wall seconds)
  double training_cores = 0;   ///< of those, the training thread
  double other_cores = 0;      ///< the rest (every pool but the training thread)
  double machine_share = 0;    ///< process_cores / cores
  int64_t cores = 0;           ///< the cores the process may use (usable_cores: affinity, cgroup quota)
  int64_t throttled_periods = 0;  ///< quota periods in which the cgroup's CPU quota held the process back
  double throttled_s = 0;         ///< the time its threads waited for that (cgroup_throttling)
  /// Mean cores kept busy by other processes on the CPUs this process may run on (its affinity mask;
  /// /proc/stat's busy time there less the process's own): the machine's load beside the run. -1 when
  /// /proc/stat cannot be read.
  double others_cores = -1;
  std::vector<PoolCpu> pools;  ///< every pool above, in that order (empty where /proc cannot be read)
  /// The pool named `pool`; null when absent.
  const PoolCpu* pool(const std::string& pool) const;
};

class CpuUsage {
 public:
  /// Marks the start of the span; the calling thread is the training thread.
  void start();
  /// The utilisation since start(). All zeros where /proc cannot be read.
  CpuUtilization stop() const;

 private:
  std::chrono::steady_clock::time_point wall_start_;
  double process_start_s_ = 0;
  int64_t throttled_start_periods_ = 0;
  double throttled_start_s_ = 0;
  double cpus_busy_start_s_ = -1;  // /proc/stat's busy seconds on the affinity mask's CPUs
  int thread_id_ = 0;
  std::unordered_map<int, double> thread_start_s_;  // per thread id
};

namespace detail {
/// The busy seconds (user, nice, system, irq, softirq, steal: all but idle and iowait) of the CPUs
/// `cpus` in /proc/stat's text `stat` ("cpuN ..." lines, USER_HZ ticks of `ticks_per_s`); -1 when no
/// line of those CPUs is found.
double busy_cpu_seconds(const std::string& stat, const std::vector<int>& cpus, double ticks_per_s);
}  // namespace detail

}  // namespace fitscope
