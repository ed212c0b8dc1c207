#include "fitscope/metrics/accuracy.hpp"

#include <ATen/ATen.h>

#include "state_check.hpp"

namespace fitscope {

void Accuracy::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  expect_class_targets(targets);
  const bool binary = !(outputs.dim() == 2 && outputs.size(1) > 1);
  const at::Tensor predicted = binary ? outputs.reshape({-1}).gt(0.5).to(at::kLong) : outputs.argmax(1);
  accumulate(predicted.eq(targets.reshape({-1})).sum(), targets.size(0));
}

}  // namespace fitscope
