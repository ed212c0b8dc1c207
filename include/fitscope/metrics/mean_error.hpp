#pragma once
/// MeanError: mean squared error ("mean_squared_error") or mean absolute error
/// ("mean_absolute_error") over every output element, against targets of the outputs' size, or,
/// for [N, C] outputs and N class indices, against their one-hot encoding. State: the sum
/// of errors (float64, on the device) and the element count. Not thread-safe.

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class MeanError : public MeanMetric {
 public:
  enum class Kind { squared, absolute };
  explicit MeanError(Kind kind);
  std::string name() const override;
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;

 private:
  Kind kind_;
};

}  // namespace fitscope
