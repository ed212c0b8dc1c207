#include "fitscope/metrics/metric.hpp"

#include <regex>

#include "fitscope/metrics/accuracy.hpp"
#include "fitscope/metrics/auc.hpp"
#include "fitscope/metrics/confusion_metrics.hpp"
#include "fitscope/metrics/mean_error.hpp"
#include "fitscope/metrics/top_k_accuracy.hpp"
#include "state_check.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace fitscope {

void MeanMetric::accumulate(const at::Tensor& sum, int64_t count) {
  if (!sum_.defined()) sum_ = at::zeros({}, sum.options().dtype(at::kDouble));
  sum_.add_(sum);
  count_ += count;
}

double MeanMetric::result() const { return count_ ? sum_.item<double>() / static_cast<double>(count_) : 0.0; }

void MeanMetric::reset() {
  if (sum_.defined()) sum_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> MeanMetric::state() const {
  const auto options = sum_.defined() ? sum_.options() : at::TensorOptions().dtype(at::kDouble);
  return {sum_.defined() ? sum_.clone() : at::zeros({}, options),
          at::full({}, static_cast<double>(count_), options)};
}

void MeanMetric::load_state(const std::vector<at::Tensor>& state) {
  expect_state_size(state, 2, name());
  sum_ = state[0].to(at::kDouble).clone();
  count_ = static_cast<int64_t>(state[1].item<double>());
}

void MeanLoss::update(const at::Tensor&, const at::Tensor& targets, const at::Tensor& loss) {
  const int64_t n = targets.size(0);
  accumulate(loss * static_cast<double>(n), n);
}

std::unique_ptr<Metric> make_metric(const std::string& name) {
  if (name == "accuracy") return std::make_unique<Accuracy>();
  if (name == "loss") return std::make_unique<MeanLoss>();
  if (name == "top_k_accuracy") return std::make_unique<TopKAccuracy>(5);
  std::smatch match;
  static const std::regex top_k("top_([0-9]{1,4})_accuracy");
  if (std::regex_match(name, match, top_k)) return std::make_unique<TopKAccuracy>(std::stoll(match[1]));
  static const std::regex confusion("(precision|recall|f1)(_binary|_macro|_micro)?");
  if (std::regex_match(name, match, confusion)) {
    const ConfusionScore score = match[1] == "precision" ? ConfusionScore::precision
                                 : match[1] == "recall"  ? ConfusionScore::recall
                                                         : ConfusionScore::f1;
    const Average average = match[2] == "_binary" ? Average::binary
                            : match[2] == "_macro" ? Average::macro
                            : match[2] == "_micro" ? Average::micro
                                                   : Average::automatic;
    return std::make_unique<ConfusionMetric>(score, average, name);
  }
  if (name == "auc") return std::make_unique<Auc>();
  if (name == "mean_squared_error" || name == "mse") return std::make_unique<MeanError>(MeanError::Kind::squared);
  if (name == "mean_absolute_error" || name == "mae") return std::make_unique<MeanError>(MeanError::Kind::absolute);
  throw std::invalid_argument("unknown metric '" + name +
                              "' (known: accuracy, top_k_accuracy, top_<k>_accuracy, precision, recall, f1 "
                              "[_binary|_macro|_micro], auc, mean_squared_error, mean_absolute_error)");
}

}  // namespace fitscope
