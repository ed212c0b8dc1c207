#pragma once
/// Accuracy: the fraction of examples whose predicted class is the target (Keras's sparse categorical
/// accuracy, and its binary accuracy for one output column). Prediction: the argmax of [N, C] outputs
/// (C > 1), or `output > 0.5` for one output column. State: hits and count, two numbers however many
/// classes there are (the confusion-matrix metrics of confusion_metrics.hpp keep C x C counts). Log
/// name "accuracy". Not thread-safe.

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class Accuracy : public MeanMetric {
 public:
  std::string name() const override { return "accuracy"; }
  /// Throws std::invalid_argument for floating-point (regression) targets.
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
};

}  // namespace fitscope
