#include "fitscope/metrics/metric_set.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>


namespace fitscope {

MetricSet::MetricSet(const std::vector<MetricSpec>& metrics, std::size_t group) : group_(group < 1 ? 1 : group) {
  auto loss = std::make_unique<MeanLoss>();
  loss_ = loss.get();
  metrics_.push_back(std::move(loss));
  std::vector<MetricSpec> others;
  for (const MetricSpec& spec : metrics) {
    if (!spec.built_in() || spec.name() != "loss") others.push_back(spec);
  }
  for (auto& m : make_metrics(others)) metrics_.push_back(std::move(m));
  pending_outputs_.reserve(group_);
  pending_targets_.reserve(group_);
  pending_losses_.reserve(group_);
  pending_sizes_.reserve(group_);
}

void MetricSet::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) {
  // kept tensors are detached: a kept autograd graph would hold the step's activations alive
  pending_losses_.push_back(loss.requires_grad() ? loss.detach() : loss);
  pending_sizes_.push_back(targets.size(0));
  if (metrics_.size() > 1) {
    pending_outputs_.push_back(outputs.requires_grad() ? outputs.detach() : outputs);
    pending_targets_.push_back(targets);
    pending_bytes_ += static_cast<int64_t>(outputs.nbytes() + targets.nbytes());
  }
  if (pending_losses_.size() >= group_ || pending_bytes_ >= kMaxPendingBytes) feed();
}

void MetricSet::feed() {
  if (pending_losses_.empty()) return;
  const at::Tensor losses = at::stack(pending_losses_).to(at::kDouble);
  const bool equal = std::all_of(pending_sizes_.begin(), pending_sizes_.end(),
                                 [&](int64_t n) { return n == pending_sizes_.front(); });
  int64_t count = 0;
  for (int64_t n : pending_sizes_) count += n;
  // sum of per-example losses: each batch's mean loss times its size
  loss_->add_sum(equal ? losses.sum().mul_(static_cast<double>(pending_sizes_.front()))
                       : losses.mul(at::tensor(pending_sizes_, at::kLong).to(losses.device())).sum(),
                 count);
  pending_losses_.clear();
  pending_sizes_.clear();
  if (pending_outputs_.empty()) return;
  const at::Tensor outputs = pending_outputs_.size() == 1 ? pending_outputs_.front() : at::cat(pending_outputs_);
  const at::Tensor targets = pending_targets_.size() == 1 ? pending_targets_.front() : at::cat(pending_targets_);
  pending_outputs_.clear();
  pending_targets_.clear();
  pending_bytes_ = 0;
  const at::Tensor no_loss;
  for (std::size_t i = 1; i < metrics_.size(); ++i) metrics_[i]->update(outputs, targets, no_loss);
}

void MetricSet::reset() {
  pending_losses_.clear();
  pending_sizes_.clear();
  pending_outputs_.clear();
  pending_targets_.clear();
  pending_bytes_ = 0;
  for (auto& m : metrics_) m->reset();
}

Logs MetricSet::logs() {
  feed();
  Logs out;
  for (const auto& m : metrics_) out.set(m->name(), m->result());
  return out;
}

std::vector<at::Tensor> MetricSet::state() {
  feed();
  std::vector<at::Tensor> out;
  for (const auto& m : metrics_) {
    for (auto& t : m->state()) out.push_back(std::move(t));
  }
  return out;
}

void MetricSet::load_state(const std::vector<at::Tensor>& state) {
  feed();
  std::size_t at = 0;
  for (const auto& m : metrics_) {
    const std::size_t n = m->state().size();
    if (at + n > state.size()) {
      throw std::invalid_argument("metric state of " + std::to_string(state.size()) + " tensors is too short for " + m->name());
    }
    m->load_state(std::vector<at::Tensor>(state.begin() + static_cast<std::ptrdiff_t>(at),
                                          state.begin() + static_cast<std::ptrdiff_t>(at + n)));
    at += n;
  }
  if (at != state.size()) {
    throw std::invalid_argument("metric state of " + std::to_string(state.size()) + " tensors, expected " + std::to_string(at));
  }
}

void MetricSet::warn_undefined(const std::function<void(const std::string&)>& warn, const std::string& prefix) {
  feed();
  for (const auto& m : metrics_) {
    if (warned_.count(prefix + m->name())) continue;
    if (auto why = m->undefined()) {
      warned_.insert(prefix + m->name());
      warn(prefix + *why);
    }
  }
}

}  // namespace fitscope
