#include "fitscope/metrics/auc.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

#include "state_check.hpp"

namespace fitscope {

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
  // one copy to the host, then plain loops: no tensor operation per bin (logs may be read per batch)
  const at::Tensor pos_counts = positives_.to(at::kCPU).to(at::kDouble).contiguous();
  const at::Tensor neg_counts = negatives_.to(at::kCPU).to(at::kDouble).contiguous();
  const auto pos = pos_counts.accessor<double, 2>(), neg = neg_counts.accessor<double, 2>();
  double sum = 0;
  bool undefined = false;
  for (int64_t c = 0; c < pos_counts.size(0); ++c) {
    double total_pos = 0, total_neg = 0;
    for (int64_t b = 0; b < bins_; ++b) {
      total_pos += pos[c][b];
      total_neg += neg[c][b];
    }
    if (total_pos == 0 || total_neg == 0) {
      undefined = true;
      continue;
    }
    // walk thresholds from the top bin down: each bin adds a trapezoid (ties within a bin count half)
    double tp = 0, area = 0;
    for (int64_t b = bins_ - 1; b >= 0; --b) {
      area += neg[c][b] / total_neg * (tp + pos[c][b] / 2) / total_pos;
      tp += pos[c][b];
    }
    sum += area;
  }
  return {sum / pos_counts.size(0), undefined};
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
  expect_state_size(state, 2, "auc");
  positives_ = state[0].numel() ? state[0].to(at::kLong).clone() : at::Tensor();
  negatives_ = state[1].numel() ? state[1].to(at::kLong).clone() : at::Tensor();
}

}  // namespace fitscope
