#include "fitscope/metrics/top_k_accuracy.hpp"

#include <ATen/ATen.h>

#include <stdexcept>


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
  accumulate(top.eq(targets.reshape({-1, 1})).any(1).sum(), targets.size(0));
}

}  // namespace fitscope
