// TopKAccuracy, MeanError, Auc, and make_metric.
#include <ATen/ATen.h>

#include <regex>
#include <stdexcept>

#include "fitscope/metrics/auc.hpp"
#include "fitscope/metrics/confusion_metrics.hpp"
#include "fitscope/metrics/mean_error.hpp"
#include "fitscope/metrics/top_k_accuracy.hpp"

namespace fitscope {
namespace {

void expect_size(const std::vector<at::Tensor>& state, std::size_t n, const std::string& metric) {
  if (state.size() != n) {
    throw std::invalid_argument(metric + " state has " + std::to_string(n) + " tensors, got " +
                                std::to_string(state.size()));
  }
}

}  // namespace

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
  expect_size(state, 2, name());
  hits_ = state[0].to(at::kLong).clone();
  count_ = state[1].item<int64_t>();
}

MeanError::MeanError(Kind kind) : kind_(kind) {}

std::string MeanError::name() const {
  return kind_ == Kind::squared ? "mean_squared_error" : "mean_absolute_error";
}

void MeanError::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  at::Tensor expected;
  if (targets.numel() == outputs.numel()) {
    expected = targets.to(outputs.scalar_type()).reshape(outputs.sizes());
  } else if (outputs.dim() == 2 && targets.dim() == 1 && targets.size(0) == outputs.size(0)) {
    expected = at::one_hot(targets.to(at::kLong), outputs.size(1)).to(outputs.scalar_type());  // class indices
  } else {
    throw std::invalid_argument(name() + ": targets of shape " + c10::str(targets.sizes()) +
                                " do not match outputs of shape " + c10::str(outputs.sizes()));
  }
  const at::Tensor diff = outputs - expected;
  const at::Tensor errors = kind_ == Kind::squared ? diff.square() : diff.abs();
  if (!sum_.defined()) sum_ = at::zeros({}, outputs.options().dtype(at::kDouble));
  sum_.add_(errors.sum());
  count_ += outputs.numel();
}

double MeanError::result() const { return count_ ? sum_.item<double>() / count_ : 0.0; }

void MeanError::reset() {
  if (sum_.defined()) sum_.zero_();
  count_ = 0;
}

std::vector<at::Tensor> MeanError::state() const {
  return {sum_.defined() ? sum_.clone() : at::zeros({}, at::kDouble),
          at::full({}, static_cast<double>(count_), at::kDouble)};
}

void MeanError::load_state(const std::vector<at::Tensor>& state) {
  expect_size(state, 2, name());
  sum_ = state[0].to(at::kDouble).clone();
  count_ = static_cast<int64_t>(state[1].item<double>());
}

Auc::Auc(int64_t thresholds) : bins_(thresholds) {
  if (thresholds < 3) throw std::invalid_argument("auc needs >= 3 thresholds, got " + std::to_string(thresholds));
}

void Auc::update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) {
  const bool binary = !(outputs.dim() == 2 && outputs.size(1) > 1);
  // scores [N, C'] where C' = 1 for binary (class 1) or C (one-vs-rest)
  const at::Tensor scores = binary ? outputs.reshape({-1, 1}).to(at::kFloat).clamp(0, 1)
                                   : outputs.softmax(1).to(at::kFloat);
  const int64_t columns = scores.size(1);
  const at::Tensor labels = targets.reshape({-1}).to(at::kLong);
  const at::Tensor positive = binary ? labels.eq(1).reshape({-1, 1})
                                     : at::one_hot(labels, columns).to(at::kBool);
  if (!positives_.defined()) {
    positives_ = at::zeros({columns, bins_}, outputs.options().dtype(at::kLong));
    negatives_ = at::zeros({columns, bins_}, outputs.options().dtype(at::kLong));
  }
  const at::Tensor bin = scores.mul(bins_ - 1).round().to(at::kLong).clamp(0, bins_ - 1);
  const at::Tensor flat = bin.add(at::arange(columns, bin.options()).mul(bins_).reshape({1, -1})).reshape({-1});
  const at::Tensor is_pos = positive.reshape({-1}).to(at::kLong);
  positives_.view({-1}).index_add_(0, flat, is_pos);
  negatives_.view({-1}).index_add_(0, flat, 1 - is_pos);
}

std::pair<double, bool> Auc::compute() const {
  if (!positives_.defined()) return {0.0, false};
  const at::Tensor pos = positives_.to(at::kCPU).to(at::kDouble), neg = negatives_.to(at::kCPU).to(at::kDouble);
  double sum = 0;
  bool undefined = false;
  for (int64_t c = 0; c < pos.size(0); ++c) {
    const double total_pos = pos[c].sum().item<double>(), total_neg = neg[c].sum().item<double>();
    if (total_pos == 0 || total_neg == 0) {
      undefined = true;
      continue;
    }
    // walk thresholds from the top bin down: each bin adds a trapezoid (ties within a bin count half)
    double tp = 0, fp = 0, area = 0;
    for (int64_t b = bins_ - 1; b >= 0; --b) {
      const double dp = pos[c][b].item<double>(), dn = neg[c][b].item<double>();
      area += dn / total_neg * (tp + dp / 2) / total_pos;
      tp += dp;
      fp += dn;
    }
    sum += area;
  }
  return {sum / pos.size(0), undefined};
}

double Auc::result() const { return compute().first; }

std::optional<std::string> Auc::undefined() const {
  if (!compute().second) return std::nullopt;
  return std::string("auc has a class without positive or without negative examples; it counts as 0");
}

void Auc::reset() {
  if (positives_.defined()) {
    positives_.zero_();
    negatives_.zero_();
  }
}

std::vector<at::Tensor> Auc::state() const {
  if (!positives_.defined()) return {at::zeros({0, bins_}, at::kLong), at::zeros({0, bins_}, at::kLong)};
  return {positives_.clone(), negatives_.clone()};
}

void Auc::load_state(const std::vector<at::Tensor>& state) {
  expect_size(state, 2, "auc");
  positives_ = state[0].numel() ? state[0].to(at::kLong).clone() : at::Tensor();
  negatives_ = state[1].numel() ? state[1].to(at::kLong).clone() : at::Tensor();
}

std::unique_ptr<Metric> make_metric(const std::string& name) {
  if (name == "accuracy") return std::make_unique<ConfusionMetric>(ConfusionScore::accuracy, Average::micro, name);
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
