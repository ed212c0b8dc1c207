#pragma once
/// The CPUs this process may use, which is what a container or a batch system gives it rather than the
/// machine's count: the CPUs of its affinity mask (taskset, cpusets, Slurm's binding) and its cgroup's CPU
/// quota (Docker's --cpus, Kubernetes' limits: cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` over
/// `cpu.cfs_period_us`, the smallest along the cgroup's path), rounded down to whole cores, at least
/// one. The thread policy, the loader's automatic workers and the CPU-use line all count these.
/// Reads /proc and /sys each call (a few small files); no state.

#include <cstdint>
#include <string>

namespace fitscope {

struct UsableCores {
  int64_t cores = 1;     ///< what the process may use: the fewest of the machine, affinity and quota
  int64_t machine = 1;   ///< the machine's online CPUs
  int64_t affinity = 0;  ///< CPUs in the affinity mask (0 when unknown)
  double quota = 0;      ///< the cgroup's CPU quota in CPUs (0: none)

  /// The limit that binds, when the process may use fewer cores than the machine has: "affinity 1 of
  /// 2", "cgroup quota 1.5 CPUs of 2"; empty otherwise.
  std::string limit() const;
  /// "2 cores", or with the limit: "1 core: affinity 1 of 2".
  std::string text() const;
};

/// This process's usable cores, now.
UsableCores usable_cores();

/// How often and how long the CPU quota of this process's cgroup held it back so far (its cpu.stat:
/// v1 nr_throttled and throttled_time, v2 nr_throttled and throttled_usec), counted since the cgroup was
/// made: a span's is the difference of two reads. Zeros without a readable cpu.stat.
struct Throttling {
  int64_t periods = 0;   ///< the quota periods in which the cgroup ran out of its quota
  double seconds = 0;    ///< the time its threads waited for the next period
};
Throttling cgroup_throttling();

namespace detail {
/// The CPU quota in CPUs of the cgroup named in `self_cgroup` (the text of /proc/self/cgroup) under
/// `root` (/sys/fs/cgroup): the smallest of v2's cpu.max and v1's cfs quota along its path; 0 = none or
/// not readable.
double cgroup_cpu_quota(const std::string& root, const std::string& self_cgroup);
/// The throttling of that cgroup (its own cpu.stat, v2 or v1's cpu controller).
Throttling cgroup_throttling(const std::string& root, const std::string& self_cgroup);
}  // namespace detail

}  // namespace fitscope
