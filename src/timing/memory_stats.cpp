#include "fitscope/timing/memory_stats.hpp"

#include <algorithm>
#include <cmath>

namespace fitscope {

void MemoryStats::add_step(const std::array<int64_t, kPhaseCount>& peak_above_start,
                           const std::array<int64_t, kPhaseCount>& allocated, int64_t held_at_end) {
  int64_t step_peak = 0;
  for (std::size_t i = 0; i < kPhaseCount; ++i) {
    peak_max_[i] = std::max(peak_max_[i], peak_above_start[i]);
    peak_sum_[i] += peak_above_start[i];
    allocated_sum_[i] += allocated[i];
    step_peak = std::max(step_peak, peak_above_start[i]);
  }
  step_peak_max_ = std::max(step_peak_max_, step_peak);
  step_peak_sum_ += step_peak;
  held_.push_back(held_at_end);
  ++steps_;
}

PhaseMemory MemoryStats::phase(Phase p) const {
  const auto i = static_cast<std::size_t>(p);
  if (steps_ == 0) return {};
  const auto n = static_cast<double>(steps_);
  return {peak_max_[i], static_cast<double>(peak_sum_[i]) / n, static_cast<double>(allocated_sum_[i]) / n};
}

double MemoryStats::allocated_per_step() const {
  int64_t sum = 0;
  for (int64_t a : allocated_sum_) sum += a;
  return steps_ ? static_cast<double>(sum) / static_cast<double>(steps_) : 0.0;
}

MemoryGrowth MemoryStats::growth() const {
  MemoryGrowth g;
  const std::size_t n = held_.size() / 2;  // the second half: what a first epoch fills (a cache) is over
  if (static_cast<int64_t>(n) < MemoryGrowth::kFewestSteps) return g;
  const std::size_t from = held_.size() - n;
  // least squares of held (relative to the first, in long double) on the step index
  long double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const long double y0 = static_cast<long double>(held_[from]);
  for (std::size_t i = 0; i < n; ++i) {
    const long double x = i, y = static_cast<long double>(held_[from + i]) - y0;
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const long double count = n, mx = sx / count, my = sy / count;
  const long double vxx = sxx - count * mx * mx;
  const long double slope = (sxy - count * mx * my) / vxx, intercept = my - slope * mx;
  long double residuals = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double r = static_cast<long double>(held_[from + i]) - y0 - (intercept + slope * static_cast<long double>(i));
    residuals += r * r;
  }
  const long double se = std::sqrt(residuals / (count - 2) / vxx);
  constexpr long double kZ99 = 2.576;
  g.steps = static_cast<int64_t>(n);
  g.bytes_per_step = static_cast<double>(slope);
  g.low = static_cast<double>(slope - kZ99 * se);
  g.high = static_cast<double>(slope + kZ99 * se);
  g.leak = g.low > 0 && g.bytes_per_step * static_cast<double>(n) >= MemoryGrowth::kLeakBytes;
  return g;
}

}  // namespace fitscope
