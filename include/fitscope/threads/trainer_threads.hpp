#pragma once
/// TrainerThreads: the thread policy as one trainer applies it. Holds the setting in force, fixed by
/// ThreadOptions or searched under auto (ThreadTuner) on the trainer's first steps, and applies it
/// (apply_threads) at each fit and whenever the search moves on. Not thread-safe: the training
/// thread's.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "fitscope/threads/thread_policy.hpp"
#include "fitscope/threads/thread_tuner.hpp"

namespace fitscope {

class TrainerThreads {
 public:
  /// `cores`: this process's share (core_share). Throws std::invalid_argument for a negative count.
  TrainerThreads(const ThreadOptions& options, int64_t cores);

  /// Steps the search has left: 0 with a fixed setting or once it chose.
  int64_t search_steps_left() const { return tuner_ ? tuner_->remaining_steps() : 0; }
  /// Applies the setting the next step runs with.
  void apply();
  /// A finished step's duration while searching (no-op after). When the search ends,
  /// `sum_across_ranks` sums the candidates' medians in place (data-parallel ranks then agree).
  void after_step(double step_ms, const std::function<void(std::vector<double>&)>& sum_across_ranks);
  /// The setting in force and how it was chosen.
  const ThreadChoice& choice() const { return choice_; }

 private:
  std::optional<ThreadTuner> tuner_;  // under auto, until the search ends
  ThreadChoice choice_;
};

}  // namespace fitscope
