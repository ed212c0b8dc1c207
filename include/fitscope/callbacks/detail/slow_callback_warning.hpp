#pragma once
/// SlowCallbackWarning: Keras warns once, after 5 batches, that "Callback method `on_train_batch_end`
/// is slow compared to the batch time", without naming the callback. The trainer runs this check
/// continuously (every 16 steps, warm-up excluded) for every callback and training batch hook, and it
/// warns once per callback and hook when the hook's p50 reaches `threshold` of the step's p50, naming
/// both, with the fix, to `warn`. An async hook is judged by its own calls on the callback thread, so
/// the hook whose code is slow is named, not the one queued behind it. Used on the training thread;
/// not thread-safe.

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/timing/phase_stats.hpp"

namespace fitscope {

class SlowCallbackWarning {
 public:
  using Warn = std::function<void(const std::string&)>;

  /// `threshold`: fraction of the step's p50 (default 0.1); `warn` receives each warning once.
  explicit SlowCallbackWarning(Warn warn, double threshold = 0.1);

  /// Compares every callback's batch hooks with the step (nothing before the first measured step).
  /// A hook whose slowest call is below `threshold` of the fastest step is skipped without reading
  /// any quantile, so the check is nearly free while nothing is slow.
  /// `last`: the fit's end, when every async call has run (a short run's slow async hook may not have
  /// run once by the checks during the loop).
  void check(const CallbackList& callbacks, const PhaseStats& stats, bool last = false);

 private:
  Warn warn_;
  double threshold_;
  std::set<std::pair<std::size_t, Hook>> warned_;
  int64_t checks_ = 0;
};

}  // namespace fitscope
