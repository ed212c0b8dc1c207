#pragma once
/// MemoryStats: the tensor memory of a fit's steps, phase by phase (train/ reads the counting CPU
/// allocator, or on a GPU the CUDA caching allocator, at each phase boundary): for each phase the peak
/// of the bytes held above what the step started with, and the bytes it allocated; the bytes held at
/// each step's end, whose growth over the second half of the measured steps is a line fitted with its
/// confidence interval (a leak grows it step after step; a cache filled in the first epoch does not).
/// Warm-up and probed steps are left out, as from the step distributions. A plain value (no
/// libtorch); not thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/timing/phase.hpp"

namespace fitscope {

/// Growth of the bytes held at a step's end, per step: the slope of a least-squares line and its 99 %
/// interval, over `steps` steps.
struct MemoryGrowth {
  double bytes_per_step = 0, low = 0, high = 0;
  int64_t steps = 0;
  bool leak = false;  ///< the interval above zero, and the line grows by kLeakBytes or more over its steps
  static constexpr double kLeakBytes = 16.0 * (1 << 20);
  static constexpr int64_t kFewestSteps = 50;  ///< fewer: not judged
};

struct PhaseMemory {
  int64_t peak_bytes = 0;     ///< the largest peak above the step's start, over the measured steps
  double mean_peak_bytes = 0;
  double allocated_bytes = 0;  ///< per step, mean
};

class MemoryStats {
 public:
  /// One measured step: per phase, the peak held above the step's start and the bytes allocated; the
  /// bytes held at its end, more than at the fit's start.
  void add_step(const std::array<int64_t, kPhaseCount>& peak_above_start, const std::array<int64_t, kPhaseCount>& allocated,
                int64_t held_at_end);

  int64_t steps() const { return steps_; }
  PhaseMemory phase(Phase p) const;
  /// The step's peak above its start: the largest of its phases' (max and mean over the steps).
  int64_t step_peak_bytes() const { return step_peak_max_; }
  double mean_step_peak_bytes() const { return steps_ ? static_cast<double>(step_peak_sum_) / static_cast<double>(steps_) : 0.0; }
  double allocated_per_step() const;
  int64_t held_at_start() const { return held_.empty() ? 0 : held_.front(); }
  int64_t held_at_end() const { return held_.empty() ? 0 : held_.back(); }
  /// The growth over the second half of the steps (MemoryGrowth::steps 0 when fewer than kFewestSteps).
  MemoryGrowth growth() const;

  std::string why_not;        ///< why nothing was counted ("" when something was)
  /// Whose memory: "cpu" (the counting allocator's tensors) or "cuda:N" (the caching allocator's bytes
  /// allocated on that GPU); "" when nothing was counted.
  std::string device;
  int64_t resident_peak = 0;  ///< the process's resident peak (VmHWM) at the fit's end, bytes

 private:
  int64_t steps_ = 0;
  std::array<int64_t, kPhaseCount> peak_max_{}, peak_sum_{}, allocated_sum_{};
  int64_t step_peak_max_ = 0, step_peak_sum_ = 0;
  std::vector<int64_t> held_;  // at each measured step's end
};

}  // namespace fitscope
