#pragma once
/// Auc: area under the ROC curve from thresholded histograms, like Keras's AUC (200 thresholds,
/// trapezoidal rule). Scores: one output column is the positive-class probability; [N, C] outputs are
/// turned into probabilities with softmax and scored one-vs-rest per class, then macro-averaged.
/// State: per class, the histograms of the scores of positive and of negative examples (counts:
/// reducible). Equal scores fall in one bin, so ties count half (all-equal scores give 0.5). A class
/// without positive or without negative examples has no ROC curve: it counts as 0 and is reported by
/// undefined(). Log name "auc". Not thread-safe.

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class Auc : public Metric {
 public:
  /// Throws std::invalid_argument for fewer than 3 thresholds.
  explicit Auc(int64_t thresholds = 200);
  std::string name() const override { return "auc"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;
  std::optional<std::string> undefined() const override;

 private:
  std::pair<double, bool> compute() const;

  int64_t bins_;
  at::Tensor positives_;  // [C, bins] int64
  at::Tensor negatives_;  // [C, bins] int64
};

}  // namespace fitscope
