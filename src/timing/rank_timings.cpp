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
  if (stats.steps() > stats.warmup_steps() && !r.probed) busy_[static_cast<std::size_t>(r.rank)].add(r.step_ns - r.phase(Phase::comm));
}

namespace {

/// The lower median of `values` (with two, the smaller); 0 when empty.
double lower_median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

double RankTimings::busy_p50_ms(int64_t rank) const { return busy_.at(static_cast<std::size_t>(rank)).quantile(0.5) * 1e-6; }

std::vector<int64_t> RankTimings::stragglers(double margin) const {
  std::vector<double> p50;
  for (int64_t r = 0; r < world_size(); ++r) {
    if (busy_[static_cast<std::size_t>(r)].count() > 0) p50.push_back(busy_p50_ms(r));
  }
  std::vector<int64_t> out;
  if (p50.size() < 2) return out;
  const double median = lower_median(p50);  // with 2 ranks, the faster one
  for (int64_t r = 0; r < world_size(); ++r) {
    if (busy_[static_cast<std::size_t>(r)].count() > 0 && busy_p50_ms(r) > std::max(median * (1 + margin), median + kStragglerFloorMs)) {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<StragglerCause> RankTimings::straggler_causes() const {
  const std::vector<int64_t> chronic = stragglers();
  std::vector<StragglerCause> out;
  for (int64_t r = 0; r < world_size(); ++r) {
    if (busy_[static_cast<std::size_t>(r)].count() == 0) continue;
    // the other ranks' median: of their busy time, and of each phase
    auto peers = [&](auto&& of) {
      std::vector<double> values;
      for (int64_t o = 0; o < world_size(); ++o) {
        if (o != r && busy_[static_cast<std::size_t>(o)].count() > 0) values.push_back(of(o));
      }
      return values;
    };
    const bool is_chronic = std::find(chronic.begin(), chronic.end(), r) != chronic.end();
    const double q = is_chronic ? 0.5 : 0.99;
    auto busy = [&](int64_t o) { return busy_[static_cast<std::size_t>(o)].quantile(q) * 1e-6; };
    const std::vector<double> peer_busy = peers(busy);
    if (peer_busy.empty()) return out;
    StragglerCause c;
    c.rank = r;
    c.chronic = is_chronic;
    c.busy_ms = busy(r);
    c.peers_busy_ms = lower_median(peer_busy);
    if (!is_chronic && c.busy_ms <= std::max(c.peers_busy_ms * (1 + kOccasionalMargin), c.peers_busy_ms + kOccasionalFloorMs)) continue;
    double largest = -1;
    for (Phase p : all_phases()) {
      if (p == Phase::comm) continue;  // the wait for the others, not the rank's own work
      auto time = [&](int64_t o) {
        const Distribution d = stats(o).phase(p);
        return is_chronic ? d.mean_ms : d.p99_ms;
      };
      const double mine = time(r), theirs = lower_median(peers(time));
      if (mine - theirs > largest) {
        largest = mine - theirs;
        c.phase = p;
        c.phase_ms = mine;
        c.peers_phase_ms = theirs;
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace fitscope
