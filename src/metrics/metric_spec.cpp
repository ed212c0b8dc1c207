#include "fitscope/metrics/metric_spec.hpp"

#include <stdexcept>

#include "fitscope/metrics/confusion_metrics.hpp"

namespace fitscope {

std::unique_ptr<Metric> MetricSpec::make() const {
  if (!make_) return make_metric(name_);
  std::unique_ptr<Metric> metric = make_();
  if (!metric) throw std::invalid_argument("a user metric's factory returned null (expected a fresh Metric)");
  return metric;
}

std::vector<std::unique_ptr<Metric>> make_metrics(const std::vector<MetricSpec>& specs) {
  std::vector<std::unique_ptr<Metric>> out;
  std::shared_ptr<ConfusionState> shared;
  for (const MetricSpec& spec : specs) {
    std::unique_ptr<Metric> metric = spec.make();
    auto* confusion = spec.built_in() ? dynamic_cast<ConfusionMetric*>(metric.get()) : nullptr;
    if (confusion) {  // one matrix for all of them, fed by the first
      const bool first = !shared;
      if (first) shared = std::make_shared<ConfusionState>();
      metric = std::make_unique<ConfusionMetric>(confusion->score(), confusion->average(), spec.name(), shared, first);
    }
    out.push_back(std::move(metric));
  }
  return out;
}

}  // namespace fitscope
