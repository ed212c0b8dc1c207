#pragma once
/// TopKAccuracy: the fraction of examples whose target is among the k largest outputs (Keras's
/// sparse top-k categorical accuracy). State: hits and count. Log name "top_k_accuracy" for k = 5,
/// else "top_<k>_accuracy". Not thread-safe.

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class TopKAccuracy : public MeanMetric {
 public:
  /// Throws std::invalid_argument for k < 1.
  explicit TopKAccuracy(int64_t k = 5);
  std::string name() const override;
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;

 private:
  int64_t k_;
};

}  // namespace fitscope
