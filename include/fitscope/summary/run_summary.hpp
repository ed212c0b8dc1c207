#pragma once
/// RunSummary: summary.json as a type, the one schema its writer, the report and the tests share
/// (its fields are what tools read: the README's run-directory table). Made from a fit's measurements
/// and the run's own facts by summarize(); written by to_json(); read back by from_json(), which rejects a file of an older or
/// broken run naming the first key that is missing or of the wrong type. Values; pure functions;
/// thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/metrics/logs.hpp"
#include "fitscope/models/model_summary.hpp"
#include "fitscope/summary/fit_measurements.hpp"
#include "fitscope/timing/cuda_graph_outcome.hpp"
#include "fitscope/summary/verdict.hpp"
#include "fitscope/threads/thread_tuner.hpp"
#include "fitscope/timing/cpu_usage.hpp"
#include "fitscope/timing/gpu_usage.hpp"
#include "fitscope/timing/layer_times.hpp"
#include "fitscope/timing/machine_peak.hpp"
#include "fitscope/timing/memory_stats.hpp"
#include "fitscope/timing/loader_stats.hpp"
#include "fitscope/timing/run_time.hpp"

namespace fitscope {

struct DistributionMs {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct PhaseSummary {
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  double share = 0;  ///< of the mean step
};

struct CallbackSummary {
  std::string name, hook, mode;
  int64_t calls = 0;
  double mean_ms = 0, p50_ms = 0, p99_ms = 0, total_ms = 0, stall_ms = 0;
};

struct RankSummary {
  int64_t rank = 0;
  double step_ms_p50 = 0, step_ms_p99 = 0, busy_ms_p50 = 0;
  /// When it straggles (RankTimings::straggler_causes): "most steps" or "now and then", and the phase
  /// that makes it slow; empty when it does not.
  std::string straggles, straggle_phase;
};

struct CommunicationSummary {
  double total_ms_mean = 0;     ///< in flight per step
  double exposed_ms_mean = 0;   ///< of it, the `comm` phase
  double exposed_fraction = 0;
  std::vector<int64_t> bucket_bytes;  ///< in launch order
};

struct DeviceTimingSummary {
  std::vector<std::string> phases_measured;
  double step_ms_mean = 0, step_ms_p50 = 0, step_ms_p99 = 0;
  std::map<std::string, PhaseSummary> phases;  ///< mean, p50, p99 of the measured phases
  int64_t steps_resolved_in_loop = 0, steps_resolved_at_end = 0;
  /// The device's own work per step, measured with the step queued ahead of it (DeviceTimer::busy_ms),
  /// and the share of the host's median step it leaves the device idle, waiting for the host to launch
  /// work: 1 - busy / step p50, at least 0. Unset when no probe was valid.
  std::optional<double> busy_ms, idle_fraction;
  int64_t probes_made = 0, probes_valid = 0;
  int64_t sampled_every = 1;  ///< after the warm-up, one step in this many was timed on the device
};

/// One restart of a job under `fitscope launch --max-restarts`.
struct RestartEvent {
  std::string reason;                     ///< the failure, as the launcher named it
  std::optional<int64_t> failed_at_step;  ///< the furthest step a rank reported; unset when none could
  int64_t resumed_from_step = 0;          ///< the backup's step the next attempt started from (0: none)
  double lost_s = 0;                      ///< from first reaching that step to training again after it
};

/// The job's restarts, as the chief of its last attempt saw them (count 0: launched, never restarted).
struct RestartsSummary {
  std::vector<RestartEvent> events;
  int64_t steps_redone = 0;   ///< steps run twice: each failure's step less the step resumed from
  double lost_s = 0;          ///< the events' lost time
  double job_wall_s = 0;      ///< from the launcher's first start to this summary
  double lost_fraction = 0;   ///< lost_s / job_wall_s
};

/// What a streamed training set (sharded record files, StreamDataset) was, and what each rank read.
struct StreamsSummary {
  struct Rank {
    int64_t rank = 0;
    std::vector<std::string> shards;  ///< the shard files it read, in their sorted order
    int64_t records = 0;              ///< the records its shards hold (skipped ones left out)
  };
  std::string source;               ///< "tfrecord:GLOB" or "tar:GLOB"
  int64_t shards = 0;               ///< the files the glob matched
  int64_t shuffle_buffer = 0;
  int64_t records_per_epoch = 0;    ///< per rank: the fewest any rank's shards hold, so steps are equal
  int64_t skipped_records = 0;      ///< the bad records skipped (skip_bad_records): every rank's before training, the chief's found while training
  std::vector<Rank> ranks;
};

/// The steps' tensor memory (FitMeasurements::memory, summarized; summary.json's `memory`).
struct MemorySummary {
  int64_t steps = 0;                          ///< measured steps counted
  std::string device;                         ///< MemoryStats::device: "cpu", "cuda:0" ("" when none counted)
  std::map<std::string, PhaseMemory> phases;  ///< by phase name, the phases that held or allocated any
  int64_t step_peak_bytes = 0;                ///< the largest step's peak above its start
  double mean_step_peak_bytes = 0, allocated_per_step = 0;
  int64_t held_at_start = 0, held_at_end = 0;  ///< at the first and last measured steps' ends
  int64_t resident_peak = 0;                   ///< the process's resident peak (VmHWM)
  MemoryGrowth growth;
  std::string why_not;  ///< why nothing was counted
};

struct RunSummary {
  std::string model;  ///< "cnn", "mlp", a file, or the name RunOptions gave
  std::optional<ModelSummary> model_summary;  ///< its layers and parameters (a Run's; unset in summarize's)
  int64_t epochs = 0;
  int64_t steps = 0, warmup_steps = 0, measured_steps = 0;
  double wall_s = 0;
  double samples_per_s = 0;      ///< of this rank (the chief's in its summary.json)
  double job_samples_per_s = 0;  ///< of the whole job: every rank's, as the ranks step together
  RunTime run;
  bool interrupted = false;  ///< a signal ended the run early
  /// What a reader needs to repeat the run, as text: the version, the command line, the optimizer,
  /// learning rate, seed, data, ... (summary.json's `settings`; empty in a summary from before them).
  std::vector<std::pair<std::string, std::string>> settings;
  std::string failure;       ///< why the fit failed (e.g. a non-finite loss); empty when it did not
  ThreadChoice threads;
  Logs logs;  ///< the last epoch's
  int64_t world_size = 1;
  int64_t batch_size = 0;
  std::string device = "cpu";
  DistributionMs step_ms;
  std::map<std::string, PhaseSummary> phases;  ///< every phase by name
  std::vector<CallbackSummary> callbacks;      ///< most expensive first
  std::vector<std::string> warnings;
  /// The bad files the data sets left out (an image folder's skip_bad_files), at their scan and
  /// during training: how many, and the first kSkippedFilesListed as "path: reason".
  int64_t skipped_files = 0;
  std::vector<std::string> skipped_files_first;
  static constexpr std::size_t kSkippedFilesListed = 100;
  /// The training data's class names in label order (Dataset::class_names: an image folder's
  /// sub-folders), so that evaluate and predict match other data's folders to them by name; empty
  /// where the labels are only numbers (summary.json's `class_names`).
  std::vector<std::string> class_names;
  LoaderStats loader;
  CpuUtilization cpu;
  std::optional<double> gpu_utilization, gpu_memory_peak_mb;  ///< unset = not sampled
  int64_t gpu_samples = 0;
  std::string gpu_why_not;  ///< why the GPU was not sampled (not in summary.json: it becomes a warning)
  std::vector<RankSummary> ranks;
  std::vector<int64_t> stragglers;
  double straggler_margin = 0;
  std::map<std::string, std::pair<double, double>> phases_across_ranks;  ///< phase -> (mean_ms, max_ms)
  std::optional<CommunicationSummary> communication;
  std::optional<DeviceTimingSummary> device_timing;
  /// The captured step (TrainerOptions::cuda_graph): set on a CUDA device, or where a capture was tried
  std::optional<CudaGraphOutcome> cuda_graph;
  /// Each layer's time and floating-point operations on the probed steps (summary.json's `layers`;
  /// `why_not` says why none was probed, "not measured" in a summary from before them).
  LayerTimes layers;
  /// The machine's measured peak the layers' GFLOP/s are set against (summary.json's `machine_peak`).
  std::optional<MachinePeak> machine_peak;
  MemorySummary memory;
  std::optional<RestartsSummary> restarts;  ///< set under `fitscope launch`
  std::optional<StreamsSummary> streams;    ///< set when the training set is streamed
  double clock_overhead_ns_per_step = 0;
  Verdict verdict;

  /// summary.json's text (pretty-printed).
  std::string to_json() const;
  /// Reads summary.json's text; `source` (the file) names it in errors. Throws std::invalid_argument
  /// naming the source and the key that is missing or of the wrong type.
  static RunSummary from_json(const std::string& text, const std::string& source);
  /// The verdict's sentences and actions and the warnings, with their settings named by `names` (the
  /// command line's flags) instead of their C++ options; null `names` changes nothing.
  void name_settings(const SettingNames& names);
};

/// The run's facts that the trainer does not know.
struct RunFacts {
  std::string model;
  int64_t epochs = 0;        ///< that ran
  int64_t batch_size = 0;
  std::string callback_mode = "sync";
  double validation_split = 0;
  std::string device = "cpu";
  Logs logs;
  double wall_s = 0;
  RunTime run;
  bool interrupted = false;
  GpuUtilization gpu;
  std::vector<std::pair<std::string, std::string>> settings;  ///< RunSummary::settings
};

/// The summary of a fit: its measurements, the verdict on them, and the run's facts.
RunSummary summarize(const FitMeasurements& measured, const RunFacts& facts);

}  // namespace fitscope
