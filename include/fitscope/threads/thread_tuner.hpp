#pragma once
/// ThreadTuner: `--threads auto`. Runs each candidate setting on the user's own model, batch and loader:
/// settling steps first, left out (kFirstSettlingSteps for the first candidate: a run's first steps pay
/// for allocations and kernel set-up; then one, or size()'s settle steps after a candidate with more
/// threads, whose idle workers go on spinning), then measured steps; keeps the candidate with the
/// shortest mean step, the throughput, over its fastest 90% of steps, the slowest tenth rounded up
/// (threads that fight the loader stall often and show in it; a lone stall of the scheduler in a short
/// window does not decide),
/// or rather the earliest candidate (the first is the default) within kMinGain of it: a difference
/// within the noise does not flip the choice from run to run. With abandon_slower(), a candidate whose
/// mean is plainly slower than an earlier one's after a few measured steps is left at once.
/// The search is sized by time: once the first candidate has measured `steps_per_candidate` steps,
/// record() says Next::size and the caller, from first_mean_ms(), sets how many steps every candidate
/// measures and settles (size()); grown, the first candidate then measures afresh. The trainer
/// applies current() before each step, feeds record() every finished step, and counts the search's
/// steps as warm-up. Data-parallel ranks follow the same schedule and decide together: they sum
/// first_mean_ms() and means() across ranks. Plain arithmetic, no threads touched here; not
/// thread-safe (the training thread's).

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/threads/thread_policy.hpp"

namespace fitscope {

/// A measured candidate.
struct ThreadCandidate {
  ThreadSetting setting;
  double step_ms = 0;  ///< mean measured step (summed over ranks in a data-parallel run); 0 = not run
};

/// The setting searched again mid-run (TrainerThreads::watch): the step's median had moved away from
/// what it was after the search before, and the candidates ran again.
struct ThreadRecheck {
  int64_t step = 0;           ///< the fit's step the re-check began at (0-based, counted from the fit's start)
  double before_ms = 0;       ///< the step's median (its data wait left out) after the search before
  double moved_ms = 0;        ///< the median of the window that moved last
  ThreadSetting was, chosen;  ///< the setting before and after
  std::vector<ThreadCandidate> candidates;  ///< measured as the search measures them
};

/// What runs, and how it was chosen (summary.json's `threads`).
struct ThreadChoice {
  ThreadSetting setting;             ///< the setting in force after the search (or the flag's)
  std::string chosen_by = "flag";    ///< "auto" (measured) | "flag" (--threads N)
  int64_t cores = 1;                 ///< this process's share of the cores it may use (usable_cores)
  std::string cores_limit;           ///< UsableCores::limit(): what holds them below the machine's (empty: nothing)
  std::string blas_library;          ///< BlasLibrary::name()
  int64_t search_steps = 0;          ///< steps the search and its cool-down ran (counted as warm-up)
  std::vector<ThreadCandidate> candidates;  ///< under auto, in the order they ran
  /// Under auto, when the last fit was too short for the search to pay for itself: the steps a fit needs
  /// (it ran the default setting, the first candidate); 0 otherwise.
  int64_t search_needs_steps = 0;
  std::vector<ThreadRecheck> rechecks;  ///< under auto in one process, the last fit's, in order
};

class ThreadTuner {
 public:
  static constexpr int64_t kFirstSettlingSteps = 3;
  /// What a later candidate must gain over an earlier one (the first is the default) to be chosen
  /// instead: 5% of the earlier one's mean step.
  static constexpr double kMinGain = 0.05;
  /// The measured steps a candidate runs before abandon_slower() may leave it.
  static constexpr int64_t kMinStepsBeforeAbandoning = 3;
  /// What record() asks of the caller.
  enum class Next {
    step,    ///< nothing: run the next step with current()
    size,    ///< call size(), from first_mean_ms()
    choose,  ///< the last candidate is measured: call choose(), from means()
  };

  /// `candidates` non-empty; `steps_per_candidate` >= 1 (std::invalid_argument otherwise).
  ThreadTuner(std::vector<ThreadSetting> candidates, int64_t steps_per_candidate);

  /// Whether steps are still being measured.
  bool searching() const { return index_ < static_cast<int64_t>(candidates_.size()); }
  /// Steps until the search ends, as sized so far.
  int64_t remaining_steps() const { return remaining_steps_if_sized(measured_, settle_); }
  /// Steps until the search ends if size(measured_steps, settle_steps) were called now.
  int64_t remaining_steps_if_sized(int64_t measured_steps, int64_t settle_steps) const;
  /// Steps recorded so far.
  int64_t steps_run() const { return steps_run_; }
  /// The setting the next step runs with: the candidate under test, then the chosen one.
  const ThreadSetting& current() const;
  /// A finished step's duration.
  Next record(double step_ms);
  /// The first candidate's mean measured step so far (0 before any).
  double first_mean_ms() const;
  /// Every candidate measures `measured_steps` steps (never fewer than before), and one with fewer
  /// threads than the candidate before it first settles for `settle_steps` (>= 1).
  void size(int64_t measured_steps, int64_t settle_steps);
  /// Every candidate's mean measured step so far (0 where not run).
  std::vector<double> means() const;
  /// Ends the search with these means (this rank's, or summed over ranks): the earliest candidate whose
  /// mean is within kMinGain of the shortest wins.
  void choose(const std::vector<double>& means);
  /// From now on, a candidate whose mean over kMinStepsBeforeAbandoning measured steps, or over any
  /// power of two of them after, exceeds `ratio` times an earlier candidate's mean is left there (its
  /// mean so far stands). Only for a
  /// search whose steps no other process follows: ranks that agree on means must run the same steps.
  void abandon_slower(double ratio) { abandon_ratio_ = ratio; }
  /// The candidates with their means, as choose() saw them.
  const std::vector<ThreadCandidate>& candidates() const { return candidates_; }

 private:
  int64_t settling_steps(int64_t index, int64_t settle) const;
  Next next_candidate();
  /// Whether the candidate under test is plainly slower than an earlier one (abandon_slower).
  bool plainly_slower() const;

  std::vector<ThreadCandidate> candidates_;
  std::vector<std::vector<double>> steps_;
  int64_t measured_;          // measured steps per candidate
  int64_t settle_ = 1;        // settling steps after a candidate with more threads
  bool sized_ = false;
  int64_t index_ = 0;         // the candidate under test
  int64_t in_candidate_ = 0;  // steps run with it, the settling ones included
  int64_t steps_run_ = 0;
  double abandon_ratio_ = 0;  // 0 = every candidate runs its steps
  ThreadSetting chosen_;
};

}  // namespace fitscope
