#pragma once
/// The run summary: summary.json (fields fixed by DESIGN.md) and the step-time breakdown printed at
/// the end of a run. Pure functions over the run's PhaseStats; thread-safe.

#include <cstdint>
#include <string>

#include <vector>

#include "fitscope/callbacks/callback_timing.hpp"
#include "fitscope/data/loader_stats.hpp"
#include "fitscope/timing/cpu_usage.hpp"
#include "fitscope/timing/device_timer.hpp"
#include "fitscope/timing/gpu_usage.hpp"
#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/rank_timings.hpp"
#include "fitscope/timing/verdict.hpp"
#include "fitscope/threads/thread_tuner.hpp"
#include "fitscope/train/logs.hpp"

namespace fitscope {

/// What the summary reports besides the timings.
struct RunInfo {
  std::string model;            ///< model name ("cnn", "mlp", a file)
  double wall_s = 0;            ///< wall time of the whole fit, validation included
  int64_t epochs = 0;           ///< epochs that ran
  ThreadChoice threads;         ///< the compute pools' threads and how they were chosen
  int64_t world_size = 1;       ///< processes
  int64_t batch_size = 0;       ///< examples per step (per process)
  std::string device = "cpu";   ///< "cpu" | "cuda:0"
  Logs logs;                    ///< the last epoch's logs
  double clock_overhead_ns_per_step = 0;  ///< the step clock's own cost per step
  std::vector<CallbackTiming> callbacks;  ///< per callback and hook
  std::vector<std::string> warnings;      ///< slow callbacks, ...
  CpuUtilization cpu;                     ///< CPU use during fit
  GpuUtilization gpu;                     ///< GPU use during fit (CUDA runs; sampled = false otherwise)
  const DeviceTimer* device_timer = nullptr;  ///< the phases as the GPU ran them; null = not measured
  LoaderStats loader;                     ///< how the training loader kept up
  const RankTimings* ranks = nullptr;     ///< every rank's steps (data-parallel runs); null = this process
  /// Per measured step, the time gradient communication was in flight; null or empty = none.
  const StreamingQuantiles* communication = nullptr;
  std::vector<int64_t> gradient_buckets;  ///< bytes per gradient bucket, in launch order
};

/// The callback timings sorted by total time, most expensive first.
std::vector<const CallbackTiming*> by_total_time(const std::vector<CallbackTiming>& timings);

/// summary.json's content (pretty-printed JSON).
std::string summary_json(const PhaseStats& stats, const RunInfo& info, const Verdict& verdict);

/// The GPU's lines: NVML utilization and peak memory (or why they were not sampled), and the phases
/// measured on the device (mean ms per step). Empty for a CPU run.
std::string format_gpu(const RunInfo& info);

/// The threads: the setting, how it was chosen (every candidate's median step under auto), and the
/// CPU each pool kept busy.
std::string format_threads(const RunInfo& info);

/// Data-parallel runs: one line per rank (step p50/p99, busy p50), the stragglers, and how much of the
/// communication was exposed. Empty for a single process.
std::string format_ranks(const PhaseStats& stats, const RunInfo& info);

/// The human-readable breakdown: the step distribution and throughput, one line per phase (mean, p50,
/// p99, share), the costliest callbacks (when given) and the verdict.
std::string format_breakdown(const PhaseStats& stats, const Verdict& verdict,
                             const std::vector<CallbackTiming>& callbacks = {});

}  // namespace fitscope
