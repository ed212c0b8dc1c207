#pragma once
/// MetricSet: the running loss and the chosen metrics of one loop (training or validation), as the
/// trainer keeps them. Batches are fed to the metrics in groups of `group`: losses stacked, outputs
/// and targets concatenated, so that the per-batch cost of the metrics (argmax, confusion counts,
/// ...) is paid once per group instead of once per batch; a group ends early once its outputs and
/// targets hold kMaxPendingBytes (large outputs, such as a segmentation's, are fed batch by batch and
/// never pile up). Reading logs() first feeds what is
/// pending, so every read sees every batch. The tensors handed to update() are kept (detached from
/// any autograd graph) until then; they must not be modified in place. Not thread-safe; owned by the training loop.

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fitscope/metrics/metric.hpp"
#include "fitscope/metrics/metric_spec.hpp"
#include "fitscope/metrics/logs.hpp"

namespace fitscope {

class MetricSet {
 public:
  /// The outputs and targets a group may keep before it is fed.
  static constexpr int64_t kMaxPendingBytes = int64_t{1} << 20;

  /// `metrics` besides the loss (built-ins by name, user metrics by factory); throws
  /// std::invalid_argument for an unknown name.
  explicit MetricSet(const std::vector<MetricSpec>& metrics, std::size_t group = 16);

  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss);
  /// Forgets every update.
  void reset();
  /// "loss" then each metric, by name (feeds what is pending first).
  Logs logs();
  /// Every metric's additive state, the loss's first (feeds what is pending first).
  std::vector<at::Tensor> state();
  /// Replaces every metric's state with `state` as state() lays it out (e.g. summed across ranks).
  void load_state(const std::vector<at::Tensor>& state);
  /// Calls `warn` once per metric (and `prefix`) whose value had a zero denominator.
  void warn_undefined(const std::function<void(const std::string&)>& warn, const std::string& prefix);

 private:
  void feed();

  std::vector<std::unique_ptr<Metric>> metrics_;  // [0] is the loss mean
  MeanLoss* loss_;
  std::size_t group_;
  std::vector<at::Tensor> pending_losses_;
  std::vector<int64_t> pending_sizes_;
  std::vector<at::Tensor> pending_outputs_;
  std::vector<at::Tensor> pending_targets_;
  int64_t pending_bytes_ = 0;  // of pending_outputs_ and pending_targets_
  std::set<std::string> warned_;
};

}  // namespace fitscope
