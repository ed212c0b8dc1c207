#include "fitscope/metrics/metric.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace fitscope {
namespace {

void expect_state(const std::vector<at::Tensor>& state, const char* metric) {
  if (state.size() != 2) {
    throw std::invalid_argument(std::string(metric) + " state has 2 tensors, got " +
                                std::to_string(state.size()));
  }
}

}  // namespace

void MeanLoss::update(const at::Tensor&, const at::Tensor& targets, const at::Tensor& loss) {
  const int64_t n = targets.size(0);
  if (!sum_.defined()) sum_ = at::zeros({}, loss.options().dtype(at::kDouble));
  sum_.add_(loss, static_cast<double>(n));
  count_ += n;
}

void MeanLoss::add_sum(const at::Tensor& loss_sum, int64_t count) {
  if (!sum_.defined()) sum_ = at::zeros({}, loss_sum.options().dtype(at::kDouble));
  sum_.add_(loss_sum);
  count_ += count;
}

double MeanLoss::result() const { return count_ ? sum_.item<double>() / count_ : 0.0; }

void MeanLoss::reset() {
  if (sum_.defined()) sum_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> MeanLoss::state() const {
  const auto options = sum_.defined() ? sum_.options() : at::TensorOptions().dtype(at::kDouble);
  return {sum_.defined() ? sum_.clone() : at::zeros({}, options),
          at::full({}, static_cast<double>(count_), options)};
}

void MeanLoss::load_state(const std::vector<at::Tensor>& state) {
  expect_state(state, "loss");
  sum_ = state[0].to(at::kDouble).clone();
  count_ = static_cast<int64_t>(state[1].item<double>());
}

}  // namespace fitscope
