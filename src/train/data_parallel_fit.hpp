#pragma once
// DataParallelFit: what one fit() does besides training when it runs on several ranks: the
// callbacks of this rank (chief-only ones on rank 0 alone), the gradient reducer starting from the
// chief's weights, the stop agreed by every rank, and at each epoch's end every rank's step records
// gathered and the metric states summed. In a single process every call does nothing.
// Training thread only; lives for one fit().

#include <memory>
#include <vector>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/gradient_reducer.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "fitscope/timing/rank_timings.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/step_sink.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"
#include "fitscope/models/model.hpp"

namespace fitscope::detail {

class DataParallelFit {
 public:
  /// Fills `timings` (every rank's steps) and `communication` (per measured step, the time gradient
  /// communication was in flight), which must outlive this object.
  DataParallelFit(std::shared_ptr<distributed::Context> context, const distributed::GradientReducerOptions& buckets,
                  int64_t warmup_steps, RankTimings& timings, StreamingQuantiles& communication);

  /// The callbacks this rank runs: all of them on the chief, the others without the chief-only ones.
  std::vector<std::shared_ptr<Callback>> callbacks_of_this_rank(const std::vector<std::shared_ptr<Callback>>& all);
  /// Before the first step: copies the chief's weights and buffers everywhere and hooks the reducer
  /// into `model`'s parameters.
  void start(Model& model);
  /// The reducer of StepContext (null in a single process).
  distributed::GradientReducer* reducer() const { return reducer_.get(); }
  /// After a step's callbacks: whether the ranks agreed to stop (when a callback may stop mid-epoch:
  /// agreed one step late, each step's flags summed in the background during the next step, in phase
  /// `comm`; a stop asked at step k ends the fit after step k + 1 on every rank), and the step's
  /// communication.
  bool end_step(StepClock& clock, bool stop_requested);
  /// Leaves `steps` more steps out of every rank's timings and the communication (while the warm-up
  /// lasts).
  void extend_warmup(int64_t steps) {
    warmup_steps_ += steps;
    timings_.extend_warmup(steps);
  }
  /// Sums `values` across ranks, in place (nothing to do in a single process).
  void sum(std::vector<double>& values);
  /// Keeps this rank's record of the step for the epoch's gathering.
  void keep(const StepRecord& record) {
    if (active_) records_.push_back(record);
  }
  /// At the epoch's end: whether any rank asked to stop; every rank's records into the timings and,
  /// other ranks' records, into `sinks`; `metrics` summed over ranks.
  bool end_epoch(bool stop_requested, MetricSet& metrics, const std::vector<std::shared_ptr<StepSink>>& sinks);

 private:
  bool any_rank(bool stop_requested);
  /// Waits for the last step's flags; whether any rank asked to stop. False when none is pending.
  bool take_agreement();

  std::shared_ptr<distributed::Context> context_;
  distributed::GradientReducerOptions buckets_;
  bool active_;
  bool agree_each_step_ = false;
  int64_t warmup_steps_;
  int64_t steps_ = 0;
  RankTimings& timings_;
  StreamingQuantiles& communication_;
  std::unique_ptr<distributed::GradientReducer> reducer_;
  std::vector<StepRecord> records_;  // this rank's, this epoch
  at::Tensor pending_flag_;          // the stop flags being summed across ranks
  std::unique_ptr<distributed::PendingCollective> pending_;
};

}  // namespace fitscope::detail
