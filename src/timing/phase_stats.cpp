#include "fitscope/timing/phase_stats.hpp"

#include <stdexcept>
#include <string>

namespace fitscope {

PhaseStats::PhaseStats(int64_t warmup_steps) : warmup_steps_(warmup_steps) {
  if (warmup_steps < 0) {
    throw std::invalid_argument("warm-up steps must be >= 0, got " + std::to_string(warmup_steps));
  }
}

void PhaseStats::add(const StepRecord& record) {
  if (!measures(++steps_, record)) return;
  samples_ += record.samples;
  step_.add(record.step_ns);
  for (std::size_t i = 0; i < kPhaseCount; ++i) phases_[i].add(record.phase_ns[i]);
}

void PhaseStats::merge(const PhaseStats& other) {
  steps_ += other.steps_;
  samples_ += other.samples_;
  step_.merge(other.step_);
  for (std::size_t i = 0; i < kPhaseCount; ++i) phases_[i].merge(other.phases_[i]);
}

double PhaseStats::share(Phase p) const {
  const double step_mean = step_.mean();
  return step_mean > 0 ? phases_[static_cast<std::size_t>(p)].mean() / step_mean : 0.0;
}

double PhaseStats::samples_per_s() const {
  const double total_s = step_.mean() * step_.count() * 1e-9;
  return total_s > 0 ? samples_ / total_s : 0.0;
}

Distribution PhaseStats::to_ms(const StreamingQuantiles& q) {
  Distribution d;
  d.mean_ms = q.mean() * 1e-6;
  d.p50_ms = q.quantile(0.50) * 1e-6;
  d.p90_ms = q.quantile(0.90) * 1e-6;
  d.p99_ms = q.quantile(0.99) * 1e-6;
  d.max_ms = static_cast<double>(q.max()) * 1e-6;
  return d;
}

}  // namespace fitscope
