#pragma once
/// Metric: a streaming metric whose state lives on the model's device and is read only when logs are
/// materialised, so updating it never synchronises the host with the device.
///
/// The state is a list of tensors that add across shards (sums and counts, never ratios): summing the
/// states of several ranks and calling result() gives the metric of the union. Built-ins:
/// the running mean of the loss ("loss") here; accuracy and the others in their own headers.
/// Not thread-safe; owned by the training loop.

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fitscope {

class Metric {
 public:
  virtual ~Metric() = default;
  /// The log key ("accuracy"); validation copies get "val_" in front.
  virtual std::string name() const = 0;
  /// Accumulates one batch: model outputs, targets, and the batch's mean loss (detached scalar).
  virtual void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) = 0;
  /// The value so far (reads the device state: a host synchronisation on a GPU). 0 before any update.
  virtual double result() const = 0;
  /// Forgets every update.
  virtual void reset() = 0;
  /// The additive state (copies).
  virtual std::vector<at::Tensor> state() const = 0;
  /// Replaces the state, e.g. with the sum of every rank's state.
  virtual void load_state(const std::vector<at::Tensor>& state) = 0;
  /// Why result() is not fully defined (a zero denominator counted as 0), or nothing.
  virtual std::optional<std::string> undefined() const { return std::nullopt; }
};

/// A metric that is a mean: a float64 sum on the device and a count on the host, state {sum, count}.
/// Subclasses only say what a batch adds (accumulate); the rest is shared.
class MeanMetric : public Metric {
 public:
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;

 protected:
  /// Adds `sum` (a scalar tensor on any device, any numeric type) over `count` values.
  void accumulate(const at::Tensor& sum, int64_t count);

 private:
  at::Tensor sum_;  // float64, on the device of the first sum
  int64_t count_ = 0;
};

/// The running mean of the batch losses, weighted by batch size. Key "loss".
class MeanLoss : public MeanMetric {
 public:
  std::string name() const override { return "loss"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  /// Adds a precomputed sum of per-example losses over `count` examples (a group of batches).
  void add_sum(const at::Tensor& loss_sum, int64_t count) { accumulate(loss_sum, count); }
};

/// The metric named `name`: "loss", "accuracy", "top_k_accuracy" (k = 5) or "top_<k>_accuracy",
/// "precision", "recall", "f1" and their "_macro" / "_micro" / "_binary" forms, "auc",
/// "mean_squared_error" ("mse"), "mean_absolute_error" ("mae"). Throws std::invalid_argument naming
/// the name and the known ones.
std::unique_ptr<Metric> make_metric(const std::string& name);

}  // namespace fitscope
