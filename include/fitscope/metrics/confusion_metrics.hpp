#pragma once
/// Accuracy, precision, recall and F1 from a confusion matrix kept on the device (counts: reducible
/// by summing). Metrics made together by make_metrics() (metric_spec.hpp) share one matrix, updated once per batch
/// (three tensor operations, however many of these metrics are on).
///
/// Predictions: the argmax of [N, C] outputs (C > 1), or `output > 0.5` for one output column (binary:
/// the positive class is 1). Averages: `binary` (class 1 of a binary problem), `macro` (the mean over
/// classes of the per-class value) and `micro` (from the summed counts; for single-label multi-class
/// problems it equals accuracy). A value with a zero denominator (no positive predictions, no positive
/// examples) counts as 0 and is reported by undefined() — the trainer warns once.
/// The matrix is bounded: more than kMaxConfusionClasses classes (a 4096 x 4096 matrix is 128 MiB, kept
/// for training and validation and in every checkpoint) is refused at the first update. make_metric's
/// "accuracy" is Accuracy (accuracy.hpp, two numbers of state); ConfusionScore::accuracy, the micro
/// average (the trace over the total), is for a matrix kept anyway. Log names: "accuracy", "precision",
/// "recall", "f1" (binary for one output column, macro otherwise), "precision_macro",
/// "precision_micro", ... Not thread-safe.

#include <memory>
#include <utility>

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

enum class Average { automatic, binary, macro, micro };

/// The most classes a confusion matrix is kept for.
constexpr int64_t kMaxConfusionClasses = 4096;
enum class ConfusionScore { accuracy, precision, recall, f1 };

/// The shared confusion matrix: row = target, column = prediction.
struct ConfusionState {
  at::Tensor matrix;  // [C, C] int64 on the device
  at::Tensor ones;    // reused increments for index_add_ (GPU)
  void update(const at::Tensor& outputs, const at::Tensor& targets);
};

class ConfusionMetric : public Metric {
 public:
  /// `state`: shared with other confusion metrics (null = its own); only an `updates` metric feeds it.
  ConfusionMetric(ConfusionScore score, Average average, std::string name,
                  std::shared_ptr<ConfusionState> state = nullptr, bool updates = true);

  std::string name() const override { return name_; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor& loss) override;
  double result() const override;
  void reset() override;
  std::vector<at::Tensor> state() const override;
  void load_state(const std::vector<at::Tensor>& state) override;
  std::optional<std::string> undefined() const override;
  ConfusionScore score() const { return score_; }
  Average average() const { return average_; }

 private:
  /// The score and whether some denominator was zero.
  std::pair<double, bool> compute() const;

  ConfusionScore score_;
  Average average_;
  std::string name_;
  std::shared_ptr<ConfusionState> state_;
  bool updates_;
};

}  // namespace fitscope
