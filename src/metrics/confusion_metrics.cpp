#include "fitscope/metrics/confusion_metrics.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <vector>

#include "state_check.hpp"

namespace fitscope {

void ConfusionState::update(const at::Tensor& outputs, const at::Tensor& targets) {
  expect_class_targets(targets);
  const bool binary = !(outputs.dim() == 2 && outputs.size(1) > 1);
  const int64_t classes = binary ? 2 : outputs.size(1);
  at::Tensor cell = binary ? outputs.reshape({-1}).gt(0.5).to(at::kLong) : outputs.argmax(1);
  cell.add_(targets.dim() == 1 ? targets : targets.reshape({-1}), classes);  // target * C + prediction
  if (!matrix.defined()) {
    if (classes > kMaxConfusionClasses) {
      throw std::invalid_argument("precision, recall and f1 keep a " + std::to_string(classes) + " x " + std::to_string(classes) +
                                  " confusion matrix of int64 (" + std::to_string(classes * classes * 8 >> 20) +
                                  " MiB per copy), but at most " + std::to_string(kMaxConfusionClasses) +
                                  " classes are allowed: use accuracy or top_<k>_accuracy, whose state is two numbers");
    }
    matrix = at::zeros({classes, classes}, outputs.options().dtype(at::kLong));
  }
  if (cell.is_cpu()) {
    matrix.view({-1}).add_(at::bincount(cell, {}, classes * classes));
    return;
  }
  // on a GPU bincount would synchronise (it needs the maximum); index_add_ does not
  if (!ones.defined() || ones.size(0) != cell.size(0)) ones = at::ones_like(cell);
  matrix.view({-1}).index_add_(0, cell, ones);
}

ConfusionMetric::ConfusionMetric(ConfusionScore score, Average average, std::string name,
                                 std::shared_ptr<ConfusionState> state, bool updates)
    : score_(score),
      average_(average),
      name_(std::move(name)),
      state_(state ? std::move(state) : std::make_shared<ConfusionState>()),
      updates_(updates) {}

void ConfusionMetric::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  if (updates_) state_->update(outputs, targets);
}

std::pair<double, bool> ConfusionMetric::compute() const {
  if (!state_->matrix.defined()) return {0.0, false};
  // one copy to the host, then plain loops: no tensor operation per class (logs may be read per batch)
  const at::Tensor counts = state_->matrix.to(at::kCPU).to(at::kDouble).contiguous();
  const auto c = counts.accessor<double, 2>();
  const int64_t classes = counts.size(0);
  std::vector<double> tp(classes), predicted(classes, 0.0), actual(classes, 0.0);  // predicted: tp + fp
  double total = 0;
  for (int64_t t = 0; t < classes; ++t) {
    tp[t] = c[t][t];
    for (int64_t p = 0; p < classes; ++p) {
      actual[t] += c[t][p];
      predicted[p] += c[t][p];
      total += c[t][p];
    }
  }
  Average average = score_ == ConfusionScore::accuracy ? Average::micro : average_;
  if (average == Average::automatic) average = classes == 2 ? Average::binary : Average::macro;
  if (average == Average::binary && classes != 2) {
    throw std::invalid_argument(name_ + ": the binary average needs 2 classes, got " + std::to_string(classes));
  }
  bool undefined = false;
  // per class (or summed counts): precision tp / predicted, recall tp / actual, F1 2 tp / (predicted + actual)
  auto score_of = [&](double tp_k, double predicted_k, double actual_k) {
    const double num = score_ == ConfusionScore::f1 ? 2 * tp_k : tp_k;
    const double den = score_ == ConfusionScore::precision || score_ == ConfusionScore::accuracy ? predicted_k
                       : score_ == ConfusionScore::recall  ? actual_k
                                                           : predicted_k + actual_k;
    if (den == 0) {
      undefined = true;
      return 0.0;
    }
    return num / den;
  };
  if (average == Average::binary) {
    return {score_of(tp[1], predicted[1], actual[1]), undefined};
  }
  if (average == Average::micro) {
    if (total == 0) return {0.0, false};  // nothing seen yet
    double tp_sum = 0;
    for (double v : tp) tp_sum += v;
    return {score_of(tp_sum, total, total), undefined};
  }
  double sum = 0;
  for (int64_t k = 0; k < classes; ++k) {
    sum += score_of(tp[k], predicted[k], actual[k]);
  }
  return {sum / classes, undefined};
}

double ConfusionMetric::result() const { return compute().first; }

std::optional<std::string> ConfusionMetric::undefined() const {
  if (!compute().second) return std::nullopt;
  return name_ + " divides by zero for some class (no predictions of it or no examples of it); "
                 "that part counts as 0";
}

void ConfusionMetric::reset() {
  if (updates_ && state_->matrix.defined()) state_->matrix.zero_();
}

std::vector<at::Tensor> ConfusionMetric::state() const {
  return {state_->matrix.defined() ? state_->matrix.clone() : at::zeros({0, 0}, at::kLong)};
}

void ConfusionMetric::load_state(const std::vector<at::Tensor>& state) {
  expect_state_size(state, 1, name_);
  state_->matrix = state[0].numel() ? state[0].to(at::kLong).clone() : at::Tensor();
}

}  // namespace fitscope
