#pragma once
/// ThreadTuner: `--threads auto`. Runs each candidate setting for one settling step (the first
/// candidate for kFirstSettlingSteps: a run's first steps pay for allocations and kernel set-up) and
/// then `steps_per_candidate` measured steps, on the user's own model, batch and loader, and keeps the
/// candidate with the shortest median step. The trainer applies current() before each step, feeds
/// record() every finished step, and counts the search's steps as warm-up. Data-parallel ranks follow
/// the same schedule and decide together: they sum medians() across ranks and pass the sums to
/// choose(). Plain arithmetic, no threads touched here; not thread-safe (the training thread's).

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/threads/thread_policy.hpp"

namespace fitscope {

/// A measured candidate.
struct ThreadCandidate {
  ThreadSetting setting;
  double step_ms = 0;  ///< median measured step (summed over ranks in a data-parallel run); 0 = not run
};

/// What runs, and how it was chosen (summary.json's `threads`).
struct ThreadChoice {
  ThreadSetting setting;             ///< the setting in force after the search (or the flag's)
  std::string chosen_by = "flag";    ///< "auto" (measured) | "flag" (--threads N)
  int64_t cores = 1;                 ///< this process's share of the machine's cores
  std::string blas_library;          ///< BlasLibrary::name()
  int64_t search_steps = 0;          ///< steps the search and its cool-down ran (counted as warm-up)
  std::vector<ThreadCandidate> candidates;  ///< under auto, in the order they ran
};

class ThreadTuner {
 public:
  static constexpr int64_t kFirstSettlingSteps = 3;

  /// `candidates` non-empty; `steps_per_candidate` >= 1 (std::invalid_argument otherwise).
  ThreadTuner(std::vector<ThreadSetting> candidates, int64_t steps_per_candidate);

  /// Whether steps are still being measured.
  bool searching() const { return index_ < static_cast<int64_t>(candidates_.size()); }
  /// Steps until the search ends.
  int64_t remaining_steps() const;
  /// Steps recorded so far.
  int64_t steps_run() const { return steps_run_; }
  /// The setting the next step runs with: the candidate under test, then the chosen one.
  const ThreadSetting& current() const;
  /// A finished step's duration. Returns true when the search has measured its last step: call
  /// choose() then.
  bool record(double step_ms);
  /// Every candidate's median measured step so far (0 where not run).
  std::vector<double> medians() const;
  /// Ends the search with these medians (this rank's, or summed over ranks): the shortest wins.
  void choose(const std::vector<double>& medians);
  /// The candidates with their medians, as choose() saw them.
  const std::vector<ThreadCandidate>& candidates() const { return candidates_; }

 private:
  std::vector<ThreadCandidate> candidates_;
  std::vector<std::vector<double>> steps_;
  int64_t per_candidate_;
  int64_t index_ = 0;     // the candidate under test
  int64_t in_candidate_ = 0;  // steps run with it, the settling ones included
  int64_t steps_run_ = 0;
  ThreadSetting chosen_;
};

}  // namespace fitscope
