#include "fitscope/metrics/mean_error.hpp"

#include <ATen/ATen.h>

#include <stdexcept>


namespace fitscope {

MeanError::MeanError(Kind kind) : kind_(kind) {}

std::string MeanError::name() const {
  return kind_ == Kind::squared ? "mean_squared_error" : "mean_absolute_error";
}

void MeanError::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  at::Tensor expected;
  if (targets.numel() == outputs.numel()) {
    expected = targets.to(outputs.scalar_type()).reshape(outputs.sizes());
  } else if (outputs.dim() == 2 && targets.dim() == 1 && targets.size(0) == outputs.size(0)) {
    expected = at::one_hot(targets.to(at::kLong), outputs.size(1)).to(outputs.scalar_type());  // class indices
  } else {
    throw std::invalid_argument(name() + ": targets of shape " + c10::str(targets.sizes()) +
                                " do not match outputs of shape " + c10::str(outputs.sizes()));
  }
  const at::Tensor diff = outputs - expected;
  const at::Tensor errors = kind_ == Kind::squared ? diff.square() : diff.abs();
  accumulate(errors.sum(), outputs.numel());
}

}  // namespace fitscope
