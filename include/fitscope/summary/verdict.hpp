#pragma once
/// Verdict: what bounds a run, from the phase shares, with TensorFlow Profiler's thresholds applied to
/// fitscope's own counters (ARCHITECTURE.md, "The life of a step"):
///   input (data_wait + h2d), callbacks, checkpoint: moderately >= 5 %, highly >= 20 %;
///   communication (comm) and overhead (other):        moderately >= 3 %, highly >= 15 %;
///   straggler (a data-parallel rank whose own work, its step less `comm`, is slower than the others'
///   in most steps: the share of the step the others wait for it, which leaves `comm`'s share to the
///   transfers):                                       moderately >= 3 %, highly >= 15 %;
///   launch (on a GPU: the share of the step the device idles waiting for the host to launch its work,
///   measured by DeviceTimer's probes, less the host-only phases data_wait, callbacks, checkpoint and
///   other):                                          moderately >= 30 %, highly >= 50 %;
///   memory (the share of the step in layers' forwards and backwards that memory bandwidth bounds: at
///   half the measured copy rate or more, nearer it than their arithmetic comes to the matrix
///   product's peak, from the probed layers' bytes; LayerTimes::bandwidth_bound):
///                                                    moderately >= 30 %, highly >= 50 %.
/// On a GPU whose idle share was measured, a host phase counts at most that share (the host's time
/// beside a busy device is hidden behind its work), and a compute-bound run's share is the device's
/// busy share.
/// The most severe category wins (highly before moderately, then the larger share). When none reaches
/// its moderate threshold the run is compute-bound: `highly` when forward + backward + optimizer +
/// metrics make >= 80 % of the step, else `moderately`; `not` only when no step was measured.
/// The advice names the setting (by its C++ option, advice.hpp) and its current value, and `actions`
/// holds the same as data; an input-bound run whose workers auto chose says
/// what a batch costs to build and what would make it cheaper. A compute-bound run's advice says how the cores
/// are used (the thread setting, the gain the warm-up measured) before it names the model or device.
/// Beside the bound, `contention` says when the process's threads want more cores than it has, a
/// pool burns CPU outside the policy, or a core sits idle, naming the fix; `outside_steps` when
/// validation, epoch ends, start-up or shutdown take 20 % of the run's wall time or more; `stragglers`
/// names the ranks that straggle and the phase that makes each slow, now and then or in most steps,
/// but for the one the advice names. Pure function; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/summary/advice.hpp"
#include "fitscope/threads/thread_tuner.hpp"
#include "fitscope/timing/cpu_usage.hpp"
#include "fitscope/timing/layer_times.hpp"
#include "fitscope/timing/loader_stats.hpp"
#include "fitscope/timing/machine_peak.hpp"
#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/rank_timings.hpp"
#include "fitscope/timing/run_time.hpp"

namespace fitscope {

struct Verdict {
  std::string bound;   ///< input | callbacks | communication | straggler | checkpoint | overhead | launch | memory | compute
  /// highly | moderately | not | unjudged (fewer than kMinJudgedSteps measured steps: the shares are
  /// given, but too few steps to call a bound)
  std::string level;
  double share = 0.0;  ///< the bounding category's share of the mean step
  std::string advice;  ///< what to change, naming the setting and its value
  std::vector<Advice> actions;  ///< the advice's changes of a setting, as data (none when it names no value)
  std::string contention;  ///< how the threads compete for the cores, and the fix; empty = they do not
  /// The machine's load the run met, which no setting of its own mends (other processes busy on its
  /// cores, the cgroup's CPU quota), and what to do; empty = none reached its mark. `contention` begins
  /// with it.
  std::string machine;
  /// The part of the run's wall time outside the training steps (validation, epoch ends, start-up,
  /// shutdown) that reaches 20 % of it, and what to change; empty = none does, or no RunTime given.
  std::string outside_steps;
  /// The ranks that straggle, each with the phase that makes it slow, but for the one the advice
  /// names; empty = none does.
  std::string stragglers;
};

/// Fewer measured steps (after warm-up) than this, and the verdict says the run was too short to judge.
constexpr int64_t kMinJudgedSteps = 10;

/// The verdict's first words: "highly input-bound (42%)", or "too short to judge (8 measured steps)".
std::string verdict_headline(const Verdict& v, int64_t measured_steps);

/// The settings the advice refers to.
struct VerdictContext {
  static LoaderStats one_worker() {
    LoaderStats l;
    l.workers = 1;
    l.prefetch = 8;
    return l;
  }
  int64_t batch_size = 0;   ///< LoaderOptions::batch_size
  LoaderStats loader = one_worker();  ///< the training loader: workers, prefetch, what auto chose and measured
  ThreadChoice threads;     ///< the compute pools' threads, the cores and the measured candidates
  CpuUtilization cpu;       ///< the process's CPU use, pool by pool (empty pools = not sampled)
  std::string callback_mode = "sync";  ///< "async" when the run's callbacks run off the training thread
  std::string slowest_callback;        ///< "Name.on_train_batch_end" of the costliest callback hook
  RunTime run;                         ///< where the whole run's wall time went (zeros = not measured)
  double validation_split = 0;         ///< FitOptions::validation_split
  int64_t ranks_on_machine = 1;        ///< data-parallel ranks sharing this machine's cores
  bool decodes_images = false;         ///< the data is an image folder, decoded batch by batch
  /// On a GPU: the device's own work per step and the share of the step it idles waiting for the host
  /// (DeviceTimingSummary::busy_ms, idle_fraction); negative = not measured.
  double device_busy_ms = -1, device_idle_fraction = -1;
  /// Data-parallel: the ranks that straggle and why (RankTimings::straggler_causes), and the rank whose
  /// steps the verdict judges (the chief's).
  std::vector<StragglerCause> stragglers;
  int64_t judged_rank = 0;
  /// The layers' time and operations (LayerTimes) and the machine's measured peak: how close the model's
  /// math comes to what the machine can do; forward_backward_ms is the unprobed steps' forward and
  /// backward (mean), what the rate is set against unless the layers' times are a GPU's own
  /// (LayerTimes::device_clock: their probed steps' forward and backward as the device ran them).
  LayerTimes layers;
  std::optional<MachinePeak> peak;
  double forward_backward_ms = 0;
  std::string precision = "32";  ///< TrainerOptions::precision by name: "32" or "bf16"
};

/// "the layers' matrix products and convolutions (0.035 GFLOP a step) run at 16 GFLOP/s in forward and
/// backward: 31 % of this machine's measured 52 GFLOP/s ...": "" without probed layers, operations or a peak.
std::string math_rate_text(const VerdictContext& ctx);
/// The layers' operations per second in forward and backward (GFLOP/s), when math_rate_text has a text.
std::optional<double> math_gflops(const VerdictContext& ctx);

Verdict judge(const PhaseStats& stats, const VerdictContext& context);

}  // namespace fitscope
