#include "data_parallel_fit.hpp"

#include <ATen/ATen.h>

#include "fitscope/distributed/metric_reduction.hpp"
#include "fitscope/distributed/detail/step_record_gather.hpp"

namespace fitscope::detail {

DataParallelFit::DataParallelFit(std::shared_ptr<distributed::Context> context, const distributed::GradientReducerOptions& buckets,
                                 int64_t warmup_steps, RankTimings& timings, StreamingQuantiles& communication)
    : context_(std::move(context)),
      buckets_(buckets),
      active_(context_->world_size() > 1),
      warmup_steps_(warmup_steps),
      timings_(timings),
      communication_(communication) {
  timings_ = RankTimings(context_->world_size(), warmup_steps);
  communication_ = StreamingQuantiles();
}

std::vector<std::shared_ptr<Callback>> DataParallelFit::callbacks_of_this_rank(
    const std::vector<std::shared_ptr<Callback>>& all) {
  std::vector<std::shared_ptr<Callback>> mine;
  for (const auto& c : all) {
    if (context_->is_chief() || !c->traits().chief_only) mine.push_back(c);
    // a callback that may stop mid-epoch and runs on every rank: agree after every step (the same
    // decision everywhere, since only chief-only callbacks differ between ranks)
    agree_each_step_ = agree_each_step_ || (active_ && c->traits().may_stop_mid_epoch() && !c->traits().chief_only);
  }
  return mine;
}

void DataParallelFit::start(Model& model) {
  if (!active_) return;
  std::vector<at::Tensor> tensors;
  for (auto& named : model.named_state()) tensors.push_back(named.second);
  distributed::broadcast_from_chief(*context_, tensors);
  reducer_ = std::make_unique<distributed::GradientReducer>(context_, model.parameters(), buckets_);
}

bool DataParallelFit::any_rank(bool stop_requested) {
  const at::Tensor flag = at::full({1}, stop_requested ? 1.0f : 0.0f);
  context_->all_reduce(flag);
  return flag.item<float>() > 0;
}

bool DataParallelFit::end_step(StepClock& clock, bool stop_requested) {
  if (!active_) return stop_requested;
  int64_t agreement_ns = 0;
  if (agree_each_step_) {
    // one step late: the flags of the step before were summed behind this step's compute, and every
    // rank reads that sum at the same step, so all stop together; this step's flag goes out now
    clock.enter(Phase::comm);
    const int64_t start = StepClock::now_ns();
    const bool agreed = take_agreement();
    if (!agreed) {
      pending_flag_ = at::full({1}, stop_requested ? 1.0f : 0.0f);
      pending_ = context_->all_reduce_async(pending_flag_);
    }
    stop_requested = agreed;
    agreement_ns = StepClock::now_ns() - start;
  }
  const int64_t communication = reducer_->communication_ns();  // -1: not known on the host (NCCL)
  if (++steps_ > warmup_steps_ && communication >= 0) communication_.add(communication + agreement_ns);
  return stop_requested;
}

bool DataParallelFit::take_agreement() {
  if (!pending_) return false;
  pending_->wait();
  pending_.reset();
  return pending_flag_.item<float>() > 0;
}

bool DataParallelFit::end_epoch(bool stop_requested, MetricSet& metrics, const std::vector<std::shared_ptr<StepSink>>& sinks) {
  if (!active_) return stop_requested;
  stop_requested = any_rank(take_agreement() || stop_requested);
  for (const StepRecord& r : distributed::all_gather_records(*context_, records_)) {
    timings_.add(r);
    if (r.rank == context_->rank()) continue;  // the sinks had this rank's records step by step
    for (const auto& sink : sinks) sink->on_step(r);
  }
  records_.clear();
  distributed::all_reduce_metrics(*context_, metrics);
  return stop_requested;
}

void DataParallelFit::sum(std::vector<double>& values) {
  if (!active_) return;
  const at::Tensor sums = at::tensor(values, at::kDouble);
  context_->all_reduce(sums);
  values.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
}

}  // namespace fitscope::detail
