#include "step_graph.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "fitscope/train/fused_optimizer.hpp"
#include "optimizer_kinds.hpp"
#include "optimizer_state.hpp"

namespace fitscope::detail {
namespace {

std::string format(const char* pattern, double a, double b, double c = 0) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The first line of an exception's text (c10's errors append a backtrace).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

/// The weights, buffers and optimizer state before a checked step, to run the step both ways from it.
struct StepGraph::Snapshot {
  std::vector<at::Tensor> live, saved;
  std::vector<int64_t> counts;
};

StepGraph::StepGraph(CudaGraphMode mode, std::unique_ptr<StepCapture> capture, std::string not_capturable,
                     OptimizerKind kind, TrainStep eager, int64_t start_at, std::function<std::optional<double>()> busy_ms)
    : mode_(mode), capture_(std::move(capture)), kind_(kind), eager_(std::move(eager)), start_at_(start_at),
      busy_ms_(std::move(busy_ms)) {
  outcome_.mode = cuda_graph_mode_name(mode);
  if (mode == CudaGraphMode::off) {
    give_up("off (TrainerOptions::cuda_graph)");
  } else if (!not_capturable.empty() || !capture_) {
    give_up(not_capturable.empty() ? "no device here captures a step" : not_capturable);
  }
}

StepGraph::~StepGraph() = default;

void StepGraph::give_up(std::string reason) {
  outcome_.reason = std::move(reason);
  stage_ = Stage::eager;
  // the graph and its memory go: nothing replays it any more
  capture_context_.reset();
  capture_clock_.reset();
  updates_.clear();
  scalars_.clear();
  inputs_ = targets_ = loss_ = outputs_ = at::Tensor();
  capture_.reset();
}

CudaGraphOutcome StepGraph::outcome() const {
  CudaGraphOutcome o = outcome_;
  if (stage_ == Stage::waiting) {
    o.reason = "the fit ended before its warm-up did (" + std::to_string(start_at_) + " steps)";
  } else if (stage_ != Stage::eager && stage_ != Stage::replaying) {
    o.reason = "the fit ended " + std::to_string(o.trial_steps) + " steps into the trial (it takes about " +
               std::to_string(kWindow * (1 + kTimingWindows) + kCaptureStreamSteps + 1 + kChecks) + ")";
  }
  return o;
}

double StepGraph::window_seconds() {
  capture_->synchronize();
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  window_start_ = now;
  return seconds;
}

StepOutput StepGraph::step(const Batch& batch, StepContext& context, bool may_start) {
  trial_step_ = false;
  switch (stage_) {
    case Stage::eager:
      return eager_(batch, context);
    case Stage::replaying:
      if (fits(batch)) return replay(batch, context);
      ++outcome_.eager_steps;
      return eager_(batch, context);
    case Stage::waiting:
      if (calls_++ < start_at_ || !may_start) return eager_(batch, context);
      // `on` needs no launch-bound test: straight to the capture stream
      stage_ = mode_ == CudaGraphMode::on ? Stage::capture_stream : Stage::eager_window;
      in_stage_ = 0;
      window_seconds();
      break;
    default:
      break;
  }
  trial_step_ = true;
  ++outcome_.trial_steps;
  switch (stage_) {
    case Stage::eager_window:
      if (in_stage_ < kWindow) {
        ++in_stage_;
        return eager_(batch, context);
      }
      {
        // the launch-bound test's window: before any capture, so not one of the timing windows
        const double step_ms = window_seconds() / kWindow * 1e3;
        const std::optional<double> busy = busy_ms_ ? busy_ms_() : std::nullopt;
        if (busy) outcome_.device_busy_ms = *busy;
        if (busy && *busy >= (1 - kLaunchBoundIdle) * step_ms) {
          outcome_.eager_ms = step_ms;
          give_up(format("not launch-bound: the device's own work is %.3f ms of the %.3f ms step (%.0f%% busy)", *busy,
                         step_ms, 100 * *busy / step_ms));
          trial_step_ = false;
          --outcome_.trial_steps;
          return eager_(batch, context);
        }
      }
      stage_ = Stage::capture_stream;
      in_stage_ = 0;
      [[fallthrough]];
    case Stage::capture_stream:
      if (in_stage_ < kCaptureStreamSteps) {
        ++in_stage_;
        StepOutput out;
        capture_->run_on_capture_stream([&] { out = eager_(batch, context); });
        inputs_ = batch.inputs;  // the shapes to capture: a full batch's, not a partial last one's
        targets_ = batch.targets;
        outputs_ = out.outputs;
        return out;
      }
      if (!fits(batch)) return eager_(batch, context);  // captured on the next batch of the usual shapes
      if (!capture(batch, context)) return eager_(batch, context);
      stage_ = Stage::check;
      in_stage_ = 0;
      return replay(batch, context);  // the capture ran no step: this batch is trained by the first replay
    case Stage::check: {
      if (in_stage_ == kChecks) {
        stage_ = Stage::timing;
        in_stage_ = 0;
        window_seconds();
        return timed(batch, context);
      }
      if (!fits(batch)) return eager_(batch, context);  // checked on the next batch of the captured shapes
      ++in_stage_;
      return check(batch, context);
    }
    case Stage::timing:
      return timed(batch, context);
    default:
      return eager_(batch, context);
  }
}

bool StepGraph::fits(const Batch& batch) const {
  return batch.inputs.sizes() == inputs_.sizes() && batch.targets.sizes() == targets_.sizes() &&
         batch.inputs.scalar_type() == inputs_.scalar_type() && batch.targets.scalar_type() == targets_.scalar_type() &&
         batch.inputs.device() == inputs_.device();
}

bool StepGraph::capture(const Batch& batch, StepContext& context) {
  outcome_.tried = true;
  torch::optim::Optimizer& optimizer = context.optimizer;
  if (dynamic_cast<FusedOptimizer*>(&optimizer)) {
    give_up("the fused CPU optimizer updates on the host's threads");
    return false;
  }
  int64_t count = -1;
  try {
    const OptimizerKindEntry& entry = optimizer_kind_entry(kind_);
    auto& groups = optimizer.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (const at::Tensor& p : groups[g].params()) {
        updates_.push_back(entry.capturable(groups[g].options(), find_optimizer_state(optimizer, p), p));
        update_group_.push_back(g);
        const int64_t c = updates_.back()->step_count();
        if (c >= 0 && count >= 0 && c != count) {
          throw std::invalid_argument("the parameters' step counts differ (" + std::to_string(count) + " and " +
                                      std::to_string(c) + ")");
        }
        if (c >= 0) count = c;
      }
    }
  } catch (const std::invalid_argument& e) {
    give_up(std::string("the optimizer's update cannot be captured: ") + e.what());
    return false;
  }
  const at::TensorOptions scalar = batch.inputs.options().dtype(at::kDouble);
  const at::Tensor step = at::full({}, static_cast<double>(std::max<int64_t>(count, 0)), scalar);
  host_step_ = std::max<int64_t>(count, 0);
  for (auto& group : optimizer.param_groups()) {
    const double rate = group.options().get_lr();
    scalars_.push_back({at::full({}, rate, scalar), step});
    host_rate_.push_back(rate);
  }
  inputs_ = at::empty_like(batch.inputs);
  targets_ = at::empty_like(batch.targets);
  inputs_.copy_(batch.inputs);
  targets_.copy_(batch.targets);
  loss_ = at::zeros({}, batch.inputs.options().dtype(at::kFloat));
  outputs_ = at::empty_like(outputs_);
  capture_clock_ = std::make_unique<StepClock>();
  capture_clock_->set_enabled(false);
  capture_context_ = std::make_unique<StepContext>(StepContext{context.model, optimizer, context.loss, *capture_clock_});
  capture_context_->loss_options = context.loss_options;
  capture_context_->precision = context.precision;
  capture_context_->optimizer_step = [this] { device_update(); };
  clear_gradients(optimizer);  // the capture's backward makes the gradients in the graph's memory
  try {
    capture_->capture([this] {
      const StepOutput out = eager_(Batch{inputs_, targets_}, *capture_context_);
      loss_.copy_(out.loss);
      outputs_.copy_(out.outputs);
    });
  } catch (const std::exception& e) {
    clear_gradients(optimizer);
    give_up("the step could not be captured: " + first_line(e.what()));
    return false;
  }
  return true;
}

void StepGraph::device_update() {
  at::NoGradGuard no_grad;
  scalars_.front().step.add_(1);  // one tensor shared by the groups: libtorch counts the step first
  for (std::size_t i = 0; i < updates_.size(); ++i) updates_[i]->update(scalars_[update_group_[i]]);
}

void StepGraph::sync_scalars(torch::optim::Optimizer& optimizer) {
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size() && g < scalars_.size(); ++g) {
    const double rate = groups[g].options().get_lr();
    if (rate != host_rate_[g]) {
      scalars_[g].learning_rate.fill_(rate);
      host_rate_[g] = rate;
    }
  }
  for (const auto& u : updates_) {
    const int64_t count = u->step_count();
    if (count < 0) continue;
    if (count != host_step_) {  // eager steps ran since the last replay
      scalars_.front().step.fill_(static_cast<double>(count));
      host_step_ = count;
    }
    break;
  }
}

void StepGraph::count_step() {
  for (const auto& u : updates_) {
    if (u->step_count() >= 0) u->set_step_count(u->step_count() + 1);
  }
  ++host_step_;
}

StepOutput StepGraph::replay(const Batch& batch, StepContext& context) {
  context.clock.enter(Phase::graph);
  inputs_.copy_(batch.inputs, /*non_blocking=*/true);
  targets_.copy_(batch.targets, /*non_blocking=*/true);
  sync_scalars(context.optimizer);
  capture_->replay();
  count_step();
  ++outcome_.replayed_steps;
  return {loss_.clone(), outputs_};  // the loss outlives the next replay (callbacks may keep it)
}

StepOutput StepGraph::check(const Batch& batch, StepContext& context) {
  Snapshot before;
  for (auto& [name, t] : context.model.named_state()) before.live.push_back(t);
  const std::size_t weights = before.live.size();
  for (const auto& u : updates_) {
    for (at::Tensor& t : u->state()) before.live.push_back(t);
    before.counts.push_back(u->step_count());
  }
  {
    at::NoGradGuard no_grad;
    for (const at::Tensor& t : before.live) before.saved.push_back(t.detach().clone());
  }
  const at::Tensor replayed_loss = replay(batch, context).loss;
  --outcome_.replayed_steps;  // a check, not a step of the run
  std::vector<at::Tensor> replayed;
  {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < weights; ++i) replayed.push_back(before.live[i].detach().clone());
    for (std::size_t i = 0; i < before.live.size(); ++i) before.live[i].detach().copy_(before.saved[i]);
  }
  for (std::size_t i = 0; i < updates_.size(); ++i) updates_[i]->set_step_count(before.counts[i]);
  clear_gradients(context.optimizer);
  StepOutput out = eager_(batch, context);  // eager's result is the one kept
  const double eager_loss = out.loss.item<double>(), graph_loss = replayed_loss.item<double>();
  double difference = 0, norm = 0;
  {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < weights; ++i) {
      if (!at::isFloatingType(before.live[i].scalar_type())) continue;
      difference += (replayed[i] - before.live[i]).pow(2).sum().item<double>();
      norm += before.live[i].detach().pow(2).sum().item<double>();
    }
  }
  const double loss_difference = std::abs(graph_loss - eager_loss) / std::max(std::abs(eager_loss), 1e-12);
  const double weight_difference = std::sqrt(difference) / std::max(std::sqrt(norm), 1e-12);
  ++outcome_.checked_steps;
  outcome_.max_loss_difference = std::max(outcome_.max_loss_difference, loss_difference);
  outcome_.max_weight_difference = std::max(outcome_.max_weight_difference, weight_difference);
  if (!(loss_difference <= kTolerance && weight_difference <= kTolerance)) {  // NaN fails too
    give_up(format("a replay differs from eager on the same batch: loss %.9g against %.9g, weights by %.2g (relative)",
                   graph_loss, eager_loss, weight_difference));
  }
  return out;
}

StepOutput StepGraph::timed(const Batch& batch, StepContext& context) {
  if (in_stage_ > 0 && in_stage_ % kWindow == 0) {
    const double per_step = window_seconds() / kWindow;
    ((in_stage_ / kWindow - 1) % 2 == 0 ? graph_windows_ : eager_windows_).push_back(per_step);
  }
  if (in_stage_ == kWindow * kTimingWindows) {
    outcome_.eager_ms = median(eager_windows_) * 1e3;
    outcome_.graph_ms = median(graph_windows_) * 1e3;
    for (double w : eager_windows_) outcome_.eager_windows_ms.push_back(w * 1e3);
    for (double w : graph_windows_) outcome_.graph_windows_ms.push_back(w * 1e3);
    const std::string times = format("replay %.4f ms against eager %.4f ms per step, %.2fx", outcome_.graph_ms,
                                     outcome_.eager_ms, outcome_.eager_ms / outcome_.graph_ms);
    trial_step_ = false;
    --outcome_.trial_steps;
    if (mode_ == CudaGraphMode::on) {
      outcome_.kept = true;
      outcome_.reason = "on: kept (" + times + ")";
    } else if (outcome_.graph_ms <= outcome_.eager_ms * (1 - kCudaGraphKeepMargin)) {
      outcome_.kept = true;
      outcome_.reason = "launch-bound: kept, " + times;
    } else {
      give_up("not faster: " + times);
      return eager_(batch, context);
    }
    stage_ = Stage::replaying;
    return step(batch, context, true);
  }
  const bool graph_window = (in_stage_ / kWindow) % 2 == 0;
  ++in_stage_;
  return graph_window && fits(batch) ? replay(batch, context) : eager_(batch, context);
}

}  // namespace fitscope::detail
