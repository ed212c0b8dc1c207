#pragma once
/// MeanError: mean squared error ("mean_squared_error") or mean absolute error
/// ("mean_absolute_error") over every output element, against targets of the outputs' size, or,
/// for [N, C] outputs and N class indices, against their one-hot encoding. State: the sum
/// of errors (float64, on the device) and the element count. Not thread-safe.

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class MeanError : public Metric {
 public:
  enum class Kind { squared, absolute };
  explicit MeanError(Kind kind);
  std::string name() const override;
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;

 private:
  Kind kind_;
  at::Tensor sum_;
  int64_t count_ = 0;
};

}  // namespace fitscope
