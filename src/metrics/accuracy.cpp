#include "fitscope/metrics/accuracy.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace fitscope {

void Accuracy::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  if (at::isFloatingType(targets.scalar_type())) {
    throw std::invalid_argument("accuracy, precision, recall and f1 need class-index targets (integers), got " +
                                std::string(c10::toString(targets.scalar_type())) +
                                " targets: for a regression loss use mse or mae (--metrics mse)");
  }
  const bool binary = !(outputs.dim() == 2 && outputs.size(1) > 1);
  const at::Tensor predicted = binary ? outputs.reshape({-1}).gt(0.5).to(at::kLong) : outputs.argmax(1);
  accumulate(predicted.eq(targets.reshape({-1})).sum(), targets.size(0));
}

}  // namespace fitscope
