#pragma once
/// FitMeasurements: what one fit measured and noticed: the step distributions (and every rank's in a
/// data-parallel run), gradient communication, the phases as the GPU ran them, the callbacks, the
/// loader, the threads and the CPU pool by pool, the layers, the warnings, and where the fit's wall time went
/// around its steps (FitTime). The Trainer fills one per fit (Trainer::measured()); RunSummary is
/// made from it. A value (the device timer is shared); not thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/threads/thread_tuner.hpp"
#include "fitscope/timing/callback_timing.hpp"
#include "fitscope/timing/cuda_graph_outcome.hpp"
#include "fitscope/timing/cpu_usage.hpp"
#include "fitscope/timing/device_timer.hpp"
#include "fitscope/timing/layer_times.hpp"
#include "fitscope/timing/loader_stats.hpp"
#include "fitscope/timing/machine_peak.hpp"
#include "fitscope/timing/memory_stats.hpp"
#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/rank_timings.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"

namespace fitscope {

/// A fit's wall time around its steps, on steady_clock. Steps inside an epoch's batches and the gaps
/// between them are the only time not listed: Run counts the gaps as `unaccounted`.
struct FitTime {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;                          ///< fit() was called
  std::optional<Clock::time_point> first_step_end;  ///< the first step ended: start-up ends here
  Clock::time_point loop_end;                       ///< the last epoch was handled (before on_train_end)
  double steps_s = 0;       ///< every step after the first (timing on)
  double validation_s = 0;  ///< validation at epoch ends
  double epoch_end_s = 0;   ///< between one epoch's batches and the next's, validation excluded
};

struct FitMeasurements {
  PhaseStats stats;                       ///< this rank's steps, warm-up excluded
  int64_t world_size = 1;                 ///< processes
  int64_t local_world_size = 1;           ///< of them, on this machine
  RankTimings ranks;                      ///< every rank's steps (data-parallel runs; one rank alone)
  StreamingQuantiles communication;       ///< per measured step, gradient communication in flight (ns)
  std::vector<int64_t> gradient_buckets;  ///< bytes per gradient bucket, in launch order
  std::shared_ptr<const DeviceTimer> device_timer;  ///< the phases as the GPU ran them; null = not measured
  double clock_overhead_ns_per_step = 0;  ///< the step clock's own cost per step
  std::vector<CallbackTiming> callbacks;  ///< per callback and hook
  std::vector<std::string> warnings;      ///< slow callbacks, metrics with a zero denominator, ...
  LoaderStats loader;                     ///< how the training loader kept up
  ThreadChoice threads;                   ///< the compute pools' threads and how they were chosen
  CpuUtilization cpu;                     ///< CPU use during the fit, pool by pool
  FitTime time;                           ///< the fit's wall time around its steps
  CudaGraphOutcome cuda_graph;            ///< whether the step was captured and replayed, and why
  LayerTimes layers;                      ///< each layer's time and operations, on the probed steps
  std::optional<MachinePeak> peak;        ///< the machine's measured peak (TrainerOptions::measure_peak)
  MemoryStats memory;                     ///< the steps' tensor memory, phase by phase (TrainerOptions::track_memory)
};

/// The callback timings sorted by total time, most expensive first.
std::vector<const CallbackTiming*> by_total_time(const std::vector<CallbackTiming>& timings);

}  // namespace fitscope
