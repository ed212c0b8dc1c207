#pragma once
// The shared checks of metric inputs and load_state() states (private to src/metrics).

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fitscope {

inline void expect_state_size(const std::vector<at::Tensor>& state, std::size_t n, const std::string& metric) {
  if (state.size() != n) {
    throw std::invalid_argument(metric + " state has " + std::to_string(n) + " tensor" + (n == 1 ? "" : "s") +
                                ", got " + std::to_string(state.size()));
  }
}

/// Accuracy and the confusion-matrix metrics compare predicted classes with class-index targets.
inline void expect_class_targets(const at::Tensor& targets) {
  if (at::isFloatingType(targets.scalar_type())) {
    throw std::invalid_argument("accuracy, precision, recall and f1 need class-index targets (integers), got " +
                                std::string(c10::toString(targets.scalar_type())) +
                                " targets: for a regression loss use the metric mse or mae");
  }
}

}  // namespace fitscope
