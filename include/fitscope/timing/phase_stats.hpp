#pragma once
/// PhaseStats: the distributions of step time and of each phase over a run, warm-up excluded.
///
/// The first `warmup_steps` records given to add() are counted but left out of every distribution
/// (the first steps pay for allocation, lazy initialisation and cold caches), and so are the steps
/// whose layers were probed (StepRecord::probed). A phase's share is its
/// mean over the mean step time, so the shares of all phases add up to 1.
/// A plain value type; not thread-safe.

#include <array>
#include <cstdint>

#include "fitscope/timing/phase.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"

namespace fitscope {

/// A distribution of durations in milliseconds.
struct Distribution {
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

class PhaseStats {
 public:
  explicit PhaseStats(int64_t warmup_steps = 5);

  /// Records one step (skipped from the distributions while still in warm-up).
  void add(const StepRecord& record);
  /// Whether the `nth` record given to add() (1-based) goes into the distributions: past the warm-up
  /// (as it stands now: a thread search extends it), its layers not probed. A reader of the same
  /// records that must agree with the distributions (a sweep's window) asks this.
  bool measures(int64_t nth, const StepRecord& record) const { return nth > warmup_steps_ && !record.probed; }
  /// Adds the measured steps of `other` (for reducing across ranks).
  void merge(const PhaseStats& other);

  /// Steps seen, warm-up included.
  int64_t steps() const { return steps_; }
  /// Steps in the distributions (after warm-up, probed steps left out).
  int64_t measured_steps() const { return step_.count(); }
  int64_t warmup_steps() const { return warmup_steps_; }
  /// Leaves `steps` more records out; call while the warm-up lasts (a thread search's cool-down).
  void extend_warmup(int64_t steps) { warmup_steps_ += steps; }
  /// Examples processed in the measured steps.
  int64_t measured_samples() const { return samples_; }

  Distribution step() const { return to_ms(step_); }
  Distribution phase(Phase p) const { return to_ms(phases_[static_cast<std::size_t>(p)]); }
  /// Mean of the phase over the mean step (0 when nothing was measured).
  double share(Phase p) const;
  /// Examples per second over the measured steps' own time.
  double samples_per_s() const;

  const StreamingQuantiles& step_quantiles() const { return step_; }
  const StreamingQuantiles& phase_quantiles(Phase p) const {
    return phases_[static_cast<std::size_t>(p)];
  }

 private:
  static Distribution to_ms(const StreamingQuantiles& q);

  int64_t warmup_steps_;
  int64_t steps_ = 0;
  int64_t samples_ = 0;
  StreamingQuantiles step_;
  std::array<StreamingQuantiles, kPhaseCount> phases_;
};

}  // namespace fitscope
