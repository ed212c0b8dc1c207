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

void Accuracy::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  const at::Tensor predicted =
      outputs.dim() == 2 && outputs.size(1) > 1 ? outputs.argmax(1) : outputs.reshape({-1}).gt(0.5);
  if (!correct_.defined()) correct_ = at::zeros({}, outputs.options().dtype(at::kLong));
  correct_.add_(predicted.eq(targets.dim() == 1 ? targets : targets.reshape({-1})).sum());
  count_ += targets.size(0);
}

double Accuracy::result() const {
  return count_ ? static_cast<double>(correct_.item<int64_t>()) / count_ : 0.0;
}

void Accuracy::reset() {
  if (correct_.defined()) correct_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> Accuracy::state() const {
  const auto options = correct_.defined() ? correct_.options() : at::TensorOptions().dtype(at::kLong);
  return {correct_.defined() ? correct_.clone() : at::zeros({}, options), at::full({}, count_, options)};
}

void Accuracy::load_state(const std::vector<at::Tensor>& state) {
  expect_state(state, "accuracy");
  correct_ = state[0].to(at::kLong).clone();
  count_ = state[1].item<int64_t>();
}

std::unique_ptr<Metric> make_metric(const std::string& name) {
  if (name == "accuracy") return std::make_unique<Accuracy>();
  if (name == "loss") return std::make_unique<MeanLoss>();
  throw std::invalid_argument("unknown metric '" + name + "' (known: accuracy, loss)");
}

}  // namespace fitscope
