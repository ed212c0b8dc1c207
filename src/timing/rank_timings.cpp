#include "fitscope/timing/rank_timings.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fitscope {

RankTimings::RankTimings(int64_t world_size, int64_t warmup_steps)
    : stats_(static_cast<std::size_t>(std::max<int64_t>(world_size, 1)), PhaseStats(warmup_steps)),
      busy_(stats_.size()) {}

void RankTimings::add(const StepRecord& r) {
  if (r.rank < 0 || r.rank >= world_size()) {
    throw std::out_of_range("step record of rank " + std::to_string(r.rank) + " in a world of " +
                            std::to_string(world_size()));
  }
  PhaseStats& stats = stats_[static_cast<std::size_t>(r.rank)];
  stats.add(r);
  if (stats.steps() > stats.warmup_steps()) busy_[static_cast<std::size_t>(r.rank)].add(r.step_ns - r.phase(Phase::comm));
}

double RankTimings::busy_p50_ms(int64_t rank) const { return busy_.at(static_cast<std::size_t>(rank)).quantile(0.5) * 1e-6; }

std::vector<int64_t> RankTimings::stragglers(double margin) const {
  std::vector<double> p50;
  for (int64_t r = 0; r < world_size(); ++r) {
    if (busy_[static_cast<std::size_t>(r)].count() > 0) p50.push_back(busy_p50_ms(r));
  }
  std::vector<int64_t> out;
  if (p50.size() < 2) return out;
  std::vector<double> sorted = p50;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>((sorted.size() - 1) / 2), sorted.end());
  const double median = sorted[(sorted.size() - 1) / 2];  // the lower median: with 2 ranks, the faster one
  for (int64_t r = 0; r < world_size(); ++r) {
    if (busy_[static_cast<std::size_t>(r)].count() > 0 && busy_p50_ms(r) > std::max(median * (1 + margin), median + kStragglerFloorMs)) {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace fitscope
