#include "fitscope/metrics/top_k_accuracy.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

#include "state_check.hpp"

namespace fitscope {

TopKAccuracy::TopKAccuracy(int64_t k) : k_(k) {
  if (k < 1) throw std::invalid_argument("top-k accuracy needs k >= 1, got " + std::to_string(k));
}

std::string TopKAccuracy::name() const {
  return k_ == 5 ? "top_k_accuracy" : "top_" + std::to_string(k_) + "_accuracy";
}

void TopKAccuracy::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  const int64_t k = std::min<int64_t>(k_, outputs.size(1));
  const at::Tensor top = std::get<1>(outputs.topk(k, 1));
  if (!hits_.defined()) hits_ = at::zeros({}, outputs.options().dtype(at::kLong));
  hits_.add_(top.eq(targets.reshape({-1, 1})).any(1).sum());
  count_ += targets.size(0);
}

double TopKAccuracy::result() const { return count_ ? static_cast<double>(hits_.item<int64_t>()) / count_ : 0.0; }

void TopKAccuracy::reset() {
  if (hits_.defined()) hits_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> TopKAccuracy::state() const {
  return {hits_.defined() ? hits_.clone() : at::zeros({}, at::kLong), at::full({}, count_, at::kLong)};
}

void TopKAccuracy::load_state(const std::vector<at::Tensor>& state) {
  expect_state_size(state, 2, name());
  hits_ = state[0].to(at::kLong).clone();
  count_ = state[1].item<int64_t>();
}

}  // namespace fitscope
