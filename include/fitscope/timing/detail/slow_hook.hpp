#pragma once
// Internal (callbacks/, report/ and train/ use it; not in fitscope.hpp): the one rule for a slow callback,
// shared by the warning during the run and the report's callback table after it.

namespace fitscope::detail {

/// TrainerOptions::slow_callback_threshold's default: the share of the step that makes a hook slow.
constexpr double kSlowHookShare = 0.1;

/// Whether a training batch hook whose calls take `hook_p50` (their p50) is slow next to a step of
/// `step_p50` (its p50): it reaches `share` of it.
inline bool is_slow_hook(double hook_p50, double step_p50, double share = kSlowHookShare) {
  return step_p50 > 0 && hook_p50 >= share * step_p50;
}

}  // namespace fitscope::detail
