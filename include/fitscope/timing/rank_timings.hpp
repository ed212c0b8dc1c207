#pragma once
/// RankTimings: the step distributions of every rank of a data-parallel run, and which ranks straggle.
///
/// With synchronous gradients every rank's step lasts about as long as the slowest rank's: the fast
/// ones wait in `comm`. So a straggler is found on its busy time, the step minus `comm`: a rank whose
/// busy p50 exceeds the median rank's by more than kStragglerMargin (20 %) and by at least
/// kStragglerFloorMs (0.1 ms, so that microsecond noise on tiny steps names nobody) is a straggler.
/// The first `warmup_steps` records of each rank are left out, as in PhaseStats. A plain value type.
///
/// Why a rank straggles (straggler_causes): the phase of its busy time that exceeds the other ranks'
/// most. A chronic straggler (busy p50 above, as stragglers() finds) is judged on the phases' means,
/// which add up to the busy time; a rank that straggles now and then (its busy p50 like the others',
/// its busy p99 more than kOccasionalMargin above theirs and by at least kOccasionalFloorMs) on the
/// phases' p99.

#include <cstdint>
#include <vector>

#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"

namespace fitscope {

/// How far above the median rank's busy p50 a straggler's is (a fraction).
constexpr double kStragglerMargin = 0.2;
/// How many ms above the median rank's busy p50 a straggler's is at least.
constexpr double kStragglerFloorMs = 0.1;
/// How far above the other ranks' busy p99 a rank's is, at least, to straggle now and then (a fraction).
constexpr double kOccasionalMargin = 1.0;
/// How many ms above the other ranks' busy p99 a rank's is, at least, to straggle now and then.
constexpr double kOccasionalFloorMs = 1.0;

/// Why a rank straggles.
struct StragglerCause {
  int64_t rank = 0;
  bool chronic = true;  ///< in most steps (its busy p50 is above); else now and then (its busy p99 only)
  Phase phase = Phase::other;  ///< the phase of its busy time that exceeds the other ranks' most
  /// That phase's time on this rank and on the median other rank: means when chronic, p99s when not.
  double phase_ms = 0, peers_phase_ms = 0;
  /// Its busy time and the median other rank's: p50s when chronic, p99s when not.
  double busy_ms = 0, peers_busy_ms = 0;
};

class RankTimings {
 public:
  RankTimings(int64_t world_size = 1, int64_t warmup_steps = 5);
  /// Adds a step of rank `record.rank` (in [0, world_size); std::out_of_range otherwise).
  void add(const StepRecord& record);
  int64_t world_size() const { return static_cast<int64_t>(stats_.size()); }
  const PhaseStats& stats(int64_t rank) const { return stats_.at(static_cast<std::size_t>(rank)); }
  /// Every rank leaves `steps` more records out (PhaseStats::extend_warmup).
  void extend_warmup(int64_t steps) {
    for (PhaseStats& s : stats_) s.extend_warmup(steps);
  }
  /// p50 of the rank's step minus its `comm`, in ms.
  double busy_p50_ms(int64_t rank) const;
  /// Ranks whose busy p50 exceeds the median rank's by more than `margin`, in rank order.
  std::vector<int64_t> stragglers(double margin = kStragglerMargin) const;
  /// The chronic stragglers (stragglers()) and the ranks that straggle now and then, in rank order,
  /// each with the phase that makes it slow.
  std::vector<StragglerCause> straggler_causes() const;

 private:
  std::vector<PhaseStats> stats_;
  std::vector<StreamingQuantiles> busy_;
};

}  // namespace fitscope
