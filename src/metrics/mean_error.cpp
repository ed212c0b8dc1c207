#include "fitscope/metrics/mean_error.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

#include "state_check.hpp"

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
  if (!sum_.defined()) sum_ = at::zeros({}, outputs.options().dtype(at::kDouble));
  sum_.add_(errors.sum());
  count_ += outputs.numel();
}

double MeanError::result() const { return count_ ? sum_.item<double>() / count_ : 0.0; }

void MeanError::reset() {
  if (sum_.defined()) sum_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> MeanError::state() const {
  return {sum_.defined() ? sum_.clone() : at::zeros({}, at::kDouble),
          at::full({}, static_cast<double>(count_), at::kDouble)};
}

void MeanError::load_state(const std::vector<at::Tensor>& state) {
  expect_state_size(state, 2, name());
  sum_ = state[0].to(at::kDouble).clone();
  count_ = static_cast<int64_t>(state[1].item<double>());
}

}  // namespace fitscope
