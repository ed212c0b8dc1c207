#pragma once
/// Metric: a streaming metric whose state lives on the model's device and is read only when logs are
/// materialised, so updating it never synchronises the host with the device.
///
/// The state is a list of tensors that add across shards (sums and counts, never ratios): summing the
/// states of several ranks and calling result() gives the metric of the union. Built-ins:
/// "accuracy" and the running mean of the loss ("loss"). Not thread-safe; owned by the training loop.

#include <ATen/core/Tensor.h>

#include <memory>
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
};

/// The running mean of the batch losses, weighted by batch size. Key "loss".
class MeanLoss : public Metric {
 public:
  std::string name() const override { return "loss"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;

 private:
  at::Tensor sum_;    // float64, on the device of the loss
  int64_t count_ = 0;
};

/// Fraction of examples whose predicted class (argmax of the outputs; > 0.5 for one output column)
/// equals the target. Key "accuracy".
class Accuracy : public Metric {
 public:
  std::string name() const override { return "accuracy"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;

 private:
  at::Tensor correct_;  // int64, on the device of the outputs
  int64_t count_ = 0;
};

/// The metric named `name`; throws std::invalid_argument naming it and the known names.
std::unique_ptr<Metric> make_metric(const std::string& name);

}  // namespace fitscope
